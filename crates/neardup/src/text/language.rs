//! Script and language detection (whatlang) and per-language stopwords (stop-words).

use std::collections::HashMap;
use std::sync::OnceLock;

use super::boilerplate::ShingleSet;
use super::shingle::token_hash;
use super::tokenize::{for_each_token, TokenRule};

/// What a record is written in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Language {
    /// ISO 639-3 code (`eng`, `cmn`, `rus`, …).
    pub code: &'static str,
    /// The script's name (`Latin`, `Mandarin`, `Cyrillic`, …).
    pub script: String,
    /// Whether the detector considers the guess reliable.
    pub reliable: bool,
}

/// How many bytes of a text the detector reads: enough for a reliable guess, cheap enough to
/// run on every record.
const SAMPLE_BYTES: usize = 1024;

/// Detects the language and script of `text` from its first kilobyte.
///
/// ```
/// let l = neardup::text::detect_language("Le renard brun saute par-dessus le chien paresseux, puis il s'en va").unwrap();
/// assert_eq!(l.code, "fra");
/// assert_eq!(l.script, "Latin");
/// ```
pub fn detect_language(text: &str) -> Option<Language> {
    let mut end = text.len().min(SAMPLE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let info = whatlang::detect(&text[..end])?;
    Some(Language {
        code: info.lang().code(),
        script: info.script().name().to_owned(),
        reliable: info.is_reliable(),
    })
}

/// whatlang's ISO 639-3 codes mapped to the ISO 639-1 codes of the stopword lists.
const ISO_639_3_TO_1: &[(&str, &str)] = &[
    ("afr", "af"),
    ("aka", "ak"),
    ("amh", "am"),
    ("ara", "ar"),
    ("aze", "az"),
    ("bel", "be"),
    ("ben", "bn"),
    ("bul", "bg"),
    ("cat", "ca"),
    ("ces", "cs"),
    ("cmn", "zh"),
    ("dan", "da"),
    ("deu", "de"),
    ("ell", "el"),
    ("eng", "en"),
    ("epo", "eo"),
    ("est", "et"),
    ("fin", "fi"),
    ("fra", "fr"),
    ("guj", "gu"),
    ("heb", "he"),
    ("hin", "hi"),
    ("hrv", "hr"),
    ("hun", "hu"),
    ("hye", "hy"),
    ("ind", "id"),
    ("ita", "it"),
    ("jav", "jv"),
    ("jpn", "ja"),
    ("kan", "kn"),
    ("kat", "ka"),
    ("khm", "km"),
    ("kor", "ko"),
    ("lat", "la"),
    ("lav", "lv"),
    ("lit", "lt"),
    ("mal", "ml"),
    ("mar", "mr"),
    ("mkd", "mk"),
    ("mya", "my"),
    ("nep", "ne"),
    ("nld", "nl"),
    ("nob", "no"),
    ("ori", "or"),
    ("pan", "pa"),
    ("pes", "fa"),
    ("pol", "pl"),
    ("por", "pt"),
    ("ron", "ro"),
    ("rus", "ru"),
    ("sin", "si"),
    ("slk", "sk"),
    ("slv", "sl"),
    ("sna", "sn"),
    ("spa", "es"),
    ("srp", "sr"),
    ("swe", "sv"),
    ("tam", "ta"),
    ("tel", "te"),
    ("tgl", "tl"),
    ("tha", "th"),
    ("tuk", "tk"),
    ("tur", "tr"),
    ("ukr", "uk"),
    ("urd", "ur"),
    ("uzb", "uz"),
    ("vie", "vi"),
    ("yid", "yi"),
    ("zul", "zu"),
];

/// The token hashes of a language's stopwords (single-token entries), built once.
pub(crate) fn stopwords(code: &str) -> Option<&'static ShingleSet> {
    static TABLES: OnceLock<HashMap<&'static str, ShingleSet>> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        let mut t = HashMap::new();
        for &(three, one) in ISO_639_3_TO_1 {
            let Some(words) = stop_words::lookup(one) else {
                continue;
            };
            let mut set = ShingleSet::default();
            for w in words {
                let normalized = super::normalize(w);
                let mut toks = Vec::new();
                for_each_token(&normalized, TokenRule::Unicode, |x| toks.push(x));
                if let [only] = toks[..] {
                    set.insert(token_hash(only.as_bytes()));
                }
            }
            if !set.is_empty() {
                t.insert(three, set);
            }
        }
        t
    });
    tables.get(code)
}

/// Whether `word` is a stopword of the language with ISO 639-3 code `code`.
///
/// ```
/// assert!(neardup::text::is_stopword("eng", "The"));
/// assert!(!neardup::text::is_stopword("eng", "fingerprint"));
/// ```
pub fn is_stopword(code: &str, word: &str) -> bool {
    stopwords(code).is_some_and(|s| s.contains(&token_hash(super::normalize(word).as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_scripts_and_languages() {
        let zh = detect_language("我们在北京大学学习文本去重算法，这是一个关于相似度计算的例子。")
            .unwrap();
        assert_eq!(zh.code, "cmn");
        let ru = detect_language("Быстрая коричневая лиса прыгает через ленивую собаку").unwrap();
        assert_eq!(ru.code, "rus");
        assert_eq!(ru.script, "Cyrillic");
        assert!(detect_language("").is_none());
    }

    #[test]
    fn stopword_lists_exist_for_common_languages() {
        for code in ["eng", "deu", "fra", "rus", "spa", "cmn"] {
            assert!(stopwords(code).is_some_and(|s| s.len() > 20), "{code}");
        }
        assert!(is_stopword("deu", "und"));
        assert!(!is_stopword("eng", "und"));
    }
}
