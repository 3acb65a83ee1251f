//! Word tokenisation of normalised text, for every script.
//!
//! Two rules exist. [`TokenRule::Unicode`] (the default) keeps letters, digits, `_` and the
//! combining marks inside words together, so Hindi "नमस्ते" is one token, and makes each Han
//! ideograph and kana its own token, since those scripts do not separate words by spaces.
//! [`TokenRule::PythonWord`] reproduces Python's `re.findall(r"\w+")` exactly (a character
//! is a word character when `str.isalnum()` is true or it is `_`), which splits words at
//! combining marks; the `blake2b` compatibility profile needs it.

use unicode_general_category::{get_general_category, GeneralCategory as Gc};

/// Which characters make up a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenRule {
    /// Letters, digits, `_` and in-word combining marks; Han, kana and the scripts written
    /// without spaces (Thai, Lao, Khmer, Myanmar) one token per character, so `w`-token
    /// shingles are character `w`-grams there.
    Unicode,
    /// As [`TokenRule::Unicode`], but runs of Han characters are segmented into words by
    /// jieba (its dictionary ships in the crate), for Chinese word shingles.
    UnicodeJieba,
    /// Python's `\w+`: letters (L*), numbers (N*) and `_`; marks end a word.
    PythonWord,
    /// Every letter or digit (with its marks) is a token and each run of anything else is one
    /// space token, so `w`-token shingles are character `w`-grams across word boundaries:
    /// the features for short text (seed 002).
    Characters,
    /// Source code in a language: the tokens of its syntax tree
    /// ([`code_tokens`](super::code_tokens)), parsed from the text as it is (not
    /// normalised); a text that does not parse falls back to [`TokenRule::Unicode`] words.
    Code(super::CodeLang),
    /// Source code in each field's own language ([`Field::code_lang`], which the pipeline
    /// takes from the record's id or URL: `src/main.rs` is Rust), so a directory of several
    /// languages is one corpus; a field with no language, or one that does not parse as
    /// its language, falls back to [`TokenRule::Unicode`] words.
    ///
    /// [`Field::code_lang`]: crate::Field::code_lang
    CodeAuto,
}

impl TokenRule {
    /// The name used in profiles.
    pub fn name(self) -> &'static str {
        match self {
            TokenRule::Unicode => "words",
            TokenRule::UnicodeJieba => "jieba",
            TokenRule::PythonWord => "python-words",
            TokenRule::Characters => "chars",
            TokenRule::Code(lang) => match lang {
                super::CodeLang::Rust => "code-rust",
                super::CodeLang::Python => "code-python",
                super::CodeLang::JavaScript => "code-javascript",
                super::CodeLang::TypeScript => "code-typescript",
                super::CodeLang::Tsx => "code-tsx",
                super::CodeLang::C => "code-c",
                super::CodeLang::Cpp => "code-cpp",
                super::CodeLang::Java => "code-java",
                super::CodeLang::Go => "code-go",
            },
            TokenRule::CodeAuto => "code-auto",
        }
    }

    /// Parses [`name`](Self::name)'s names.
    pub fn parse(name: &str) -> Option<TokenRule> {
        Some(match name {
            "words" => TokenRule::Unicode,
            "jieba" => TokenRule::UnicodeJieba,
            "python-words" => TokenRule::PythonWord,
            "chars" => TokenRule::Characters,
            "code-auto" => TokenRule::CodeAuto,
            _ => TokenRule::Code(super::CodeLang::parse(name.strip_prefix("code-")?)?),
        })
    }
}

/// ASCII word bytes: `[0-9A-Za-z_]`, shared by both rules.
pub(crate) static ASCII_WORD: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    t
};

/// How a character takes part in a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Class {
    /// Not part of any token.
    Break = 0,
    /// Part of a word.
    Word = 1,
    /// Part of a word only after a word character (combining marks).
    Joiner = 2,
    /// A token by itself (ideographs, kana).
    Single = 3,
}

/// Scripts written without spaces between words: one token per character (with its marks).
fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x31F0..=0x31FF // Katakana phonetic extensions
        | 0x0E00..=0x0EFF // Thai, Lao
        | 0x1000..=0x109F // Myanmar
        | 0x1780..=0x17FF // Khmer
    ) || is_han(c)
}

/// Han ideographs.
pub(crate) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0x20000..=0x3134F) // CJK extensions B..G
}

/// Classes of the Basic Multilingual Plane under [`TokenRule::Unicode`], two bits a
/// character, computed once: the Unicode property lookups behind `is_alphanumeric` and the
/// general category are binary searches, too slow to run per character of every document.
fn unicode_classes() -> &'static [u8; 0x4000] {
    static TABLE: std::sync::OnceLock<Box<[u8; 0x4000]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u8; 0x4000]);
        for cp in 0..0x1_0000u32 {
            let class = char::from_u32(cp).map_or(Class::Break, classify_unicode_slow);
            t[(cp / 4) as usize] |= (class as u8) << (2 * (cp % 4));
        }
        t
    })
}

const CLASSES: [Class; 4] = [Class::Break, Class::Word, Class::Joiner, Class::Single];

/// The class of an ASCII character, the same under every rule.
#[inline]
fn ascii_class(c: char) -> Class {
    if ASCII_WORD[c as usize] {
        Class::Word
    } else {
        Class::Break
    }
}

#[inline]
fn classify(c: char, rule: TokenRule) -> Class {
    if c.is_ascii() {
        return ascii_class(c);
    }
    let cp = c as u32;
    if rule != TokenRule::PythonWord && cp < 0x1_0000 {
        let bits = unicode_classes()[(cp / 4) as usize] >> (2 * (cp % 4));
        return CLASSES[usize::from(bits & 3)];
    }
    classify_slow(c, rule)
}

fn classify_unicode_slow(c: char) -> Class {
    classify_slow(c, TokenRule::Unicode)
}

fn classify_slow(c: char, rule: TokenRule) -> Class {
    if c.is_ascii() {
        return ascii_class(c);
    }
    match rule {
        TokenRule::Unicode
        | TokenRule::UnicodeJieba
        | TokenRule::Characters
        | TokenRule::Code(_)
        | TokenRule::CodeAuto => {
            let joiner = matches!(
                get_general_category(c),
                Gc::NonspacingMark | Gc::SpacingMark | Gc::EnclosingMark
            );
            if joiner {
                Class::Joiner
            } else if is_unspaced(c) && c.is_alphanumeric() {
                Class::Single
            } else if c.is_alphanumeric() {
                Class::Word
            } else {
                match get_general_category(c) {
                    Gc::NonspacingMark | Gc::SpacingMark | Gc::EnclosingMark => Class::Joiner,
                    Gc::ConnectorPunctuation => Class::Word,
                    _ => Class::Break,
                }
            }
        }
        TokenRule::PythonWord => match get_general_category(c) {
            Gc::UppercaseLetter
            | Gc::LowercaseLetter
            | Gc::TitlecaseLetter
            | Gc::ModifierLetter
            | Gc::OtherLetter
            | Gc::DecimalNumber
            | Gc::LetterNumber
            | Gc::OtherNumber => Class::Word,
            _ => Class::Break,
        },
    }
}

/// Calls `f` with each token of `normalized` (text already passed through
/// [`normalize`](super::normalize)), in order.
pub(crate) fn for_each_token<'a>(normalized: &'a str, rule: TokenRule, mut f: impl FnMut(&'a str)) {
    if rule == TokenRule::Characters {
        return for_each_character(normalized, &mut f);
    }
    if rule == TokenRule::UnicodeJieba && normalized.chars().any(is_han) {
        return for_each_token_jieba(normalized, &mut f);
    }
    // The open token: where it starts, and whether it is a one-character token that only
    // marks may extend.
    let mut open: Option<(usize, bool)> = None;
    for (i, c) in normalized.char_indices() {
        match classify(c, rule) {
            Class::Word => match open {
                Some((_, false)) => {}
                Some((s, true)) => {
                    f(&normalized[s..i]);
                    open = Some((i, false));
                }
                None => open = Some((i, false)),
            },
            Class::Joiner => {
                // A mark continues the open token; a mark with none open is dropped.
            }
            Class::Break => {
                if let Some((s, _)) = open.take() {
                    f(&normalized[s..i]);
                }
            }
            Class::Single => {
                if let Some((s, _)) = open.take() {
                    f(&normalized[s..i]);
                }
                open = Some((i, true));
            }
        }
    }
    if let Some((s, _)) = open {
        f(&normalized[s..]);
    }
}

/// Character tokens: each word character with its marks, and one `" "` per run of others
/// between them.
fn for_each_character<'a>(normalized: &'a str, f: &mut dyn FnMut(&'a str)) {
    let mut open: Option<usize> = None;
    let mut gap = false;
    let mut any = false;
    for (i, c) in normalized.char_indices() {
        match classify(c, TokenRule::Unicode) {
            Class::Joiner => {}
            Class::Break => {
                if let Some(s) = open.take() {
                    f(&normalized[s..i]);
                }
                gap = any;
            }
            Class::Word | Class::Single => {
                if let Some(s) = open.take() {
                    f(&normalized[s..i]);
                }
                if gap {
                    f(" ");
                    gap = false;
                }
                open = Some(i);
                any = true;
            }
        }
    }
    if let Some(s) = open {
        f(&normalized[s..]);
    }
}

/// The shared jieba segmenter: building it parses the bundled dictionary, so it is built once.
fn jieba() -> &'static jieba_rs::Jieba {
    static JIEBA: std::sync::OnceLock<jieba_rs::Jieba> = std::sync::OnceLock::new();
    JIEBA.get_or_init(jieba_rs::Jieba::new)
}

/// Tokens with Han runs segmented by jieba and everything else as under `Unicode`.
fn for_each_token_jieba<'a>(normalized: &'a str, f: &mut dyn FnMut(&'a str)) {
    let mut rest = normalized;
    while !rest.is_empty() {
        let han_start = rest.find(is_han).unwrap_or(rest.len());
        for_each_token(&rest[..han_start], TokenRule::Unicode, &mut *f);
        rest = &rest[han_start..];
        let han_end = rest.find(|c: char| !is_han(c)).unwrap_or(rest.len());
        if han_end > 0 {
            for token in jieba().cut(&rest[..han_end], false) {
                f(token.word);
            }
        }
        rest = &rest[han_end..];
    }
}

/// The tokens of `text`, normalised first: a convenience for tools and tests; the
/// fingerprint path hashes tokens without collecting them.
///
/// ```
/// use neardup::text::{tokens, TokenRule};
/// assert_eq!(tokens("The QUICK, brown fox!", TokenRule::Unicode), ["the", "quick", "brown", "fox"]);
/// assert_eq!(tokens("नमस्ते दुनिया", TokenRule::Unicode), ["नमस्ते", "दुनिया"]);
/// assert_eq!(tokens("नमस्ते", TokenRule::PythonWord), ["नमस", "त"]);
/// assert_eq!(tokens("去重算法", TokenRule::Unicode), ["去", "重", "算", "法"]);
/// ```
pub fn tokens(text: &str, rule: TokenRule) -> Vec<String> {
    if let TokenRule::Code(lang) = rule {
        if let Some(tokens) = super::code_tokens(text, lang) {
            return tokens;
        }
    }
    let normalized = match rule {
        TokenRule::Unicode
        | TokenRule::UnicodeJieba
        | TokenRule::Characters
        | TokenRule::Code(_)
        | TokenRule::CodeAuto => super::normalize(text).into_owned(),
        TokenRule::PythonWord => {
            let mut s = String::new();
            super::normalize::normalize_python_into(text, &mut s);
            s
        }
    };
    let mut out = Vec::new();
    for_each_token(&normalized, rule, |t| out.push(t.to_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! token_cases {
        ($($name:ident: $rule:expr, $input:expr => [$($tok:expr),*];)*) => {$(
            #[test]
            fn $name() {
                let want: Vec<&str> = vec![$($tok),*];
                assert_eq!(tokens($input, $rule), want);
            }
        )*};
    }

    #[test]
    fn class_table_agrees_with_properties() {
        for cp in (0..0x1_0000u32).step_by(7) {
            if let Some(c) = char::from_u32(cp) {
                assert_eq!(
                    classify(c, TokenRule::Unicode),
                    classify_slow(c, TokenRule::Unicode),
                    "U+{cp:04X}"
                );
            }
        }
    }

    token_cases! {
        ascii_punctuation_splits: TokenRule::Unicode, "a,b;c  d" => ["a", "b", "c", "d"];
        underscore_and_digits_join: TokenRule::Unicode, "snake_case 3x4" => ["snake_case", "3x4"];
        empty_text: TokenRule::Unicode, "" => [];
        only_punctuation: TokenRule::Unicode, " -- !! " => [];
        cyrillic_words: TokenRule::Unicode, "Привет, Мир" => ["привет", "мир"];
        hindi_keeps_marks: TokenRule::Unicode, "नमस्ते" => ["नमस्ते"];
        python_splits_at_virama: TokenRule::PythonWord, "नमस्ते" => ["नमस", "त"];
        kana_and_han_are_single: TokenRule::Unicode, "東京タワー" => ["東", "京", "タ", "ワ", "ー"];
        thai_characters_keep_their_marks: TokenRule::Unicode, "สวัสดี" => ["ส", "วั", "ส", "ดี"];
        characters_with_one_space_per_gap: TokenRule::Characters, "Hi, yo!" => ["h", "i", " ", "y", "o"];
        characters_keep_marks: TokenRule::Characters, "नमस्ते" => ["न", "म", "स्", "ते"];
        jieba_segments_chinese_words: TokenRule::UnicodeJieba, "我们在北京大学学习 SimHash" => ["我们", "在", "北京大学", "学习", "simhash"];
        jieba_leaves_other_scripts_alone: TokenRule::UnicodeJieba, "北京タワー tower" => ["北京", "タ", "ワ", "ー", "tower"];
        python_keeps_han_runs: TokenRule::PythonWord, "東京 tower" => ["東京", "tower"];
        leading_mark_dropped: TokenRule::Unicode, "\u{301}abc" => ["abc"];
        accented_latin_nfkc: TokenRule::Unicode, "Cafe\u{301} CAFÉ" => ["café", "café"];
    }
}
