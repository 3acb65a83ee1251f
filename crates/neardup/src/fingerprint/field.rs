//! A record's text fields as analysis takes them: each with its weight and, for code mode
//! by extension, its programming language.

use super::SimHasher;
use crate::record::Record;
use crate::text::tokenize::TokenRule;
use crate::text::CodeLang;

/// One field of a record and how much its shingles count (seed 002: a title can count three
/// times as much as the body). Shingles never span two fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    /// The text.
    pub text: &'a str,
    /// The weight of each of its shingles, at least 1.
    pub weight: u32,
    /// The programming language of its text, read by [`TokenRule::CodeAuto`] (other token
    /// rules ignore it).
    pub code_lang: Option<CodeLang>,
}

impl<'a> Field<'a> {
    /// A field of weight 1.
    pub fn new(text: &'a str) -> Self {
        Field::weighted(text, 1)
    }

    /// A field of the given weight.
    pub fn weighted(text: &'a str, weight: u32) -> Self {
        Field {
            text,
            weight,
            code_lang: None,
        }
    }

    /// The field with its text's programming language (see [`TokenRule::CodeAuto`]).
    pub fn with_code_lang(self, code_lang: Option<CodeLang>) -> Self {
        Field { code_lang, ..self }
    }
}

impl SimHasher {
    /// The fields of `record` as this profile analyses them: each with its weight (at
    /// least 1) and, under [`TokenRule::CodeAuto`], the programming language of the
    /// record's id, else of its URL (`src/main.rs` is Rust).
    pub fn fields_of<'r>(&self, record: &'r Record) -> Vec<Field<'r>> {
        let code_lang = (self.tokens == TokenRule::CodeAuto)
            .then(|| {
                CodeLang::from_path(&record.id)
                    .or_else(|| record.url.as_deref().and_then(CodeLang::from_path))
            })
            .flatten();
        record
            .fields
            .iter()
            .map(|f| Field::weighted(&f.text, f.weight.max(1)).with_code_lang(code_lang))
            .collect()
    }
}
