//! The fingerprint profile: `ProfileArgs` and the names its options take.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use neardup::text::CodeLang;

/// The fingerprint profile.
#[derive(Debug, Args, Clone)]
pub struct ProfileArgs {
    /// Feature hash: `xxh3` (fast, default) or `blake2b` (bit-for-bit the Python reference
    /// `simhash(text)` of seed 000, for stores made by that pipeline).
    #[arg(long, value_enum, default_value_t = ProfileName::Xxh3)]
    pub profile: ProfileName,
    /// Words per shingle.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub shingle_width: usize,
    /// Fingerprint width in bits: 64 or 128.
    #[arg(long, value_name = "BITS", default_value_t = 64, value_parser = parse_bits)]
    pub bits: u32,
    /// Shingle weighting: `tf` (each occurrence votes), `presence` (each distinct shingle
    /// once) or `idf` (needs --idf).
    #[arg(long, value_enum, default_value_t = WeightingName::Tf)]
    pub weighting: WeightingName,
    /// IDF table made by `neardup idf`, for --weighting idf.
    #[arg(long, value_name = "FILE")]
    pub idf: Option<PathBuf>,
    /// Tokens: `words` (Unicode words; Han, kana and Thai one per character, so shingles are
    /// character n-grams there), `jieba` (Chinese segmented into words) or `chars` (character
    /// n-grams everywhere).
    #[arg(long, value_enum, default_value_t = TokensName::Words)]
    pub tokens: TokensName,
    /// Give shingles made only of stopwords (of each record's detected language) weight 0.
    #[arg(long)]
    pub stopwords: bool,
    /// Synonyms: a text file of word groups, one group a line (words separated by spaces or
    /// commas; `#` starts a comment line). Each group's words count as its first word, in
    /// the fingerprint and in the Jaccard; the profile records the groups.
    #[arg(long, value_name = "FILE")]
    pub synonyms: Option<PathBuf>,
    /// Features: `words` (the tokens --tokens says) or `code`: source code in --code-lang,
    /// parsed with tree-sitter into the node kinds of its syntax tree, so that renamed
    /// identifiers and literals, comments and layout do not count. A text that does not
    /// parse as that language is read as words.
    #[arg(long, value_enum, default_value_t = FeaturesName::Words)]
    pub features: FeaturesName,
    /// The language of --features code: rust, python, javascript, typescript, tsx, c, cpp,
    /// java or go; or `auto`: each record's own, by the file extension of its path (a
    /// directory's files, or a JSON record's id, else its URL), so one store holds several
    /// languages (a record whose language is unknown is read as words).
    #[arg(long, value_name = "LANG", value_parser = parse_code_lang)]
    pub code_lang: Option<CodeChoice>,
}

/// The language(s) of `--features code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeChoice {
    /// One language.
    Lang(CodeLang),
    /// Each record's own, by its path's extension.
    Auto,
}

impl CodeChoice {
    /// The name `--code-lang` takes.
    pub fn name(self) -> &'static str {
        match self {
            CodeChoice::Lang(lang) => lang.name(),
            CodeChoice::Auto => "auto",
        }
    }

    /// Parses [`name`](Self::name)'s names.
    pub fn parse(s: &str) -> Option<CodeChoice> {
        if s == "auto" {
            return Some(CodeChoice::Auto);
        }
        CodeLang::parse(s).map(CodeChoice::Lang)
    }

    /// Whether `path` is a source file of this choice (C headers count for C++ too).
    pub fn reads(self, path: &str) -> bool {
        let of = CodeLang::from_path(path);
        match self {
            CodeChoice::Auto => of.is_some(),
            CodeChoice::Lang(lang) => {
                of == Some(lang) || (lang == CodeLang::Cpp && of == Some(CodeLang::C))
            }
        }
    }
}

impl ProfileArgs {
    /// The language of `--features code` (`None` with words).
    pub fn code(&self) -> Option<CodeChoice> {
        self.code_lang
            .filter(|_| self.features == FeaturesName::Code)
    }
}

/// Feature names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FeaturesName {
    /// Word (or character) shingles.
    Words,
    /// Syntax-tree shingles of source code.
    Code,
}

fn parse_code_lang(s: &str) -> Result<CodeChoice, String> {
    CodeChoice::parse(s).ok_or_else(|| {
        let names: Vec<&str> = CodeLang::ALL.iter().map(|l| l.name()).collect();
        format!(
            "{s:?} is not a language code mode parses ({}, or auto)",
            names.join(", ")
        )
    })
}

/// Token rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TokensName {
    /// Unicode words.
    Words,
    /// Chinese words by jieba.
    Jieba,
    /// Characters.
    Chars,
}

fn parse_bits(s: &str) -> Result<u32, String> {
    match s {
        "64" => Ok(64),
        "128" => Ok(128),
        _ => Err(format!("fingerprints have 64 or 128 bits, not {s:?}")),
    }
}

/// Feature-hash profile names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileName {
    /// xxh3 token hashes combined per shingle.
    Xxh3,
    /// blake2b of the shingle text (seed 000 compatible).
    Blake2b,
}

/// Weighting names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightingName {
    /// Term frequency.
    Tf,
    /// Presence.
    Presence,
    /// Inverse document frequency.
    Idf,
}
