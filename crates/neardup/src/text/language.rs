//! Script and language detection (whatlang) and per-language stopwords (stop-words).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::OnceLock;

use super::boilerplate::{IdentityHasher, ShingleSet};
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
/// run on every record (the trigram scoring is linear in the sample).
const SAMPLE_BYTES: usize = 300;

/// Detects the language and script of `text` from its first 300 bytes.
///
/// A Latin-script sample made of one language's stopwords (at least 8 hits, three times any
/// other language's) is that language; otherwise whatlang's trigram scoring decides, among
/// the languages whose stopwords the sample uses when it uses a few.
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
    let sample = &text[..end];
    // A CJK character carries about a word, a Latin letter a fifth of one: a Chinese or
    // Japanese text full of inline English names would otherwise read as Latin.
    let is_cjk = |c: char| {
        super::tokenize::is_han(c) || matches!(c as u32, 0x3040..=0x30FF | 0xAC00..=0xD7AF)
    };
    let cjk = sample.chars().filter(|&c| is_cjk(c)).count();
    let letters = sample.chars().filter(|c| c.is_alphabetic()).count();
    let info = if cjk > 0 && cjk * 4 >= letters - cjk {
        let only: String = sample
            .chars()
            .filter(|&c| is_cjk(c) || c.is_whitespace())
            .collect();
        detector().detect(&only)?
    } else if whatlang::detect_script(sample) == Some(whatlang::Script::Latin) {
        match latin_vote(sample) {
            LatinVote::Decided(lang) => {
                return Some(Language {
                    code: lang.code(),
                    script: whatlang::Script::Latin.name().to_owned(),
                    reliable: true,
                })
            }
            LatinVote::Candidates(candidates) => {
                whatlang::Detector::with_allowlist(candidates).detect(sample)?
            }
            LatinVote::Undecided => detector().detect(sample)?,
        }
    } else {
        detector().detect(sample)?
    };
    Some(Language {
        code: info.lang().code(),
        script: info.script().name().to_owned(),
        reliable: info.is_reliable(),
    })
}

/// The Latin-script languages the detector tells apart (the widely written ones).
const LATIN: [whatlang::Lang; 22] = {
    use whatlang::Lang::*;
    [
        Eng, Spa, Por, Fra, Deu, Ita, Nld, Pol, Tur, Swe, Ces, Ron, Hun, Ind, Vie, Fin, Dan, Nob,
        Cat, Hrv, Slk, Lit,
    ]
};

/// How many Latin-script languages a sample's stopwords nominate for trigram scoring.
const LATIN_CANDIDATES: usize = 6;

/// Stopword hits a sample needs before its stopwords may narrow the candidates.
const MIN_STOPWORD_HITS: u32 = 4;

/// Stopword hits of the leading language, and how many times the runner-up's, that decide
/// a sample without trigram scoring.
const DECISIVE_HITS: u32 = 8;
const DECISIVE_RATIO: u32 = 3;

/// What a Latin-script sample's stopwords say about its language.
#[derive(Debug, PartialEq, Eq)]
enum LatinVote {
    /// One language's function words dominate: that is the language.
    Decided(whatlang::Lang),
    /// The few languages whose function words the sample uses, best first: score only
    /// these.
    Candidates(Vec<whatlang::Lang>),
    /// Too few stopwords to tell: score every language.
    Undecided,
}

/// The Latin-script languages whose stopwords `sample` uses.
///
/// whatlang scores a Latin-script text against each candidate's 300-trigram profile, a
/// fixed ~30 us per record for 22 languages (the largest single cost of a dedup run). A
/// language's score does not depend on the other candidates, so narrowing the candidates
/// to the few whose function words the text is made of gives the same answer whenever the
/// winner is among them. When one language has at least [`DECISIVE_HITS`] stopword hits
/// and [`DECISIVE_RATIO`] times the runner-up's, the text is made of that language's
/// function words and no trigram scoring is needed: on 11,753 such samples of the bench
/// corpus (man pages and package docs in many languages) the vote and whatlang disagreed
/// on 139, nearly all English technical text (commands, changelogs) that trigrams called
/// French, German or Catalan.
fn latin_vote(sample: &str) -> LatinVote {
    // Keys are token hashes already: no second hash.
    type Words = HashMap<u64, u32, BuildHasherDefault<IdentityHasher>>;
    static WORDS: OnceLock<Words> = OnceLock::new();
    let words = WORDS.get_or_init(|| {
        let mut words = Words::default();
        for (bit, lang) in LATIN.iter().enumerate() {
            let Some(set) = stopwords(lang.code()) else {
                continue;
            };
            for &h in set {
                *words.entry(h).or_default() |= 1 << bit;
            }
        }
        words
    });
    let mut hits = [0u32; LATIN.len()];
    let mut total = 0;
    for_each_token(&super::normalize(sample), TokenRule::Unicode, |t| {
        if let Some(&langs) = words.get(&token_hash(t.as_bytes())) {
            total += 1;
            for (bit, h) in hits.iter_mut().enumerate() {
                *h += (langs >> bit) & 1;
            }
        }
    });
    if total < MIN_STOPWORD_HITS {
        return LatinVote::Undecided;
    }
    let mut order: Vec<usize> = (0..LATIN.len()).filter(|&i| hits[i] > 0).collect();
    // Most hits first; ties in LATIN's order (most written first).
    order.sort_by_key(|&i| (std::cmp::Reverse(hits[i]), i));
    let first = hits[order[0]];
    let second = order.get(1).map_or(0, |&i| hits[i]);
    if first >= DECISIVE_HITS && first >= DECISIVE_RATIO * second {
        return LatinVote::Decided(LATIN[order[0]]);
    }
    order.truncate(LATIN_CANDIDATES);
    LatinVote::Candidates(order.into_iter().map(|i| LATIN[i]).collect())
}

/// The detector: the widely written Latin-script languages and every language of the other
/// scripts. Scoring a text costs a pass over each candidate language's trigram profile, so
/// leaving out the rarer Latin-script languages halves the cost per record.
fn detector() -> &'static whatlang::Detector {
    static DETECTOR: OnceLock<whatlang::Detector> = OnceLock::new();
    DETECTOR.get_or_init(|| {
        let allowed: Vec<whatlang::Lang> = whatlang::Lang::all()
            .iter()
            .copied()
            .filter(|l| LATIN.contains(l) || !is_latin_script_lang(*l))
            .collect();
        whatlang::Detector::with_allowlist(allowed)
    })
}

/// Whether whatlang writes the language in Latin script: every language but those of the
/// other scripts listed here.
fn is_latin_script_lang(lang: whatlang::Lang) -> bool {
    static LATIN: OnceLock<Vec<whatlang::Lang>> = OnceLock::new();
    LATIN
        .get_or_init(|| {
            whatlang::Lang::all()
                .iter()
                .copied()
                .filter(|&l| {
                    !matches!(
                        l,
                        whatlang::Lang::Rus
                            | whatlang::Lang::Ukr
                            | whatlang::Lang::Bel
                            | whatlang::Lang::Bul
                            | whatlang::Lang::Srp
                            | whatlang::Lang::Mkd
                            | whatlang::Lang::Cmn
                            | whatlang::Lang::Jpn
                            | whatlang::Lang::Kor
                            | whatlang::Lang::Ara
                            | whatlang::Lang::Pes
                            | whatlang::Lang::Urd
                            | whatlang::Lang::Heb
                            | whatlang::Lang::Yid
                            | whatlang::Lang::Hin
                            | whatlang::Lang::Mar
                            | whatlang::Lang::Nep
                            | whatlang::Lang::Ben
                            | whatlang::Lang::Tha
                            | whatlang::Lang::Ell
                            | whatlang::Lang::Kat
                            | whatlang::Lang::Hye
                            | whatlang::Lang::Tam
                            | whatlang::Lang::Tel
                            | whatlang::Lang::Kan
                            | whatlang::Lang::Mal
                            | whatlang::Lang::Guj
                            | whatlang::Lang::Pan
                            | whatlang::Lang::Ori
                            | whatlang::Lang::Sin
                            | whatlang::Lang::Khm
                            | whatlang::Lang::Mya
                            | whatlang::Lang::Amh
                    )
                })
                .collect()
        })
        .contains(&lang)
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
    fn stopwords_narrow_the_candidates_without_changing_the_answer() {
        let texts = [
            ("eng", "The committee said that it would not publish the report until all of the members had read it and agreed on the changes."),
            ("fra", "Le comité a déclaré qu'il ne publierait pas le rapport avant que tous les membres ne l'aient lu et aient accepté les modifications."),
            ("deu", "Der Ausschuss sagte, dass er den Bericht nicht veröffentlichen werde, bis alle Mitglieder ihn gelesen und den Änderungen zugestimmt hätten."),
            ("spa", "El comité dijo que no publicaría el informe hasta que todos los miembros lo hubieran leído y estuvieran de acuerdo con los cambios."),
            ("ita", "Il comitato ha detto che non avrebbe pubblicato il rapporto finché tutti i membri non lo avessero letto e approvato le modifiche."),
            ("nld", "De commissie zei dat zij het rapport pas zou publiceren als alle leden het hadden gelezen en met de wijzigingen hadden ingestemd."),
            ("por", "O comitê disse que não publicaria o relatório até que todos os membros o tivessem lido e concordado com as mudanças propostas."),
            ("pol", "Komisja oświadczyła, że nie opublikuje raportu, dopóki wszyscy członkowie go nie przeczytają i nie zgodzą się na zmiany."),
            ("swe", "Kommittén sade att den inte skulle publicera rapporten förrän alla medlemmar hade läst den och godkänt ändringarna som föreslogs."),
        ];
        for (code, text) in texts {
            let full = detector().detect(text).unwrap();
            assert_eq!(full.lang().code(), code, "{text}");
            match latin_vote(text) {
                LatinVote::Decided(lang) => assert_eq!(lang.code(), code, "{text}"),
                LatinVote::Candidates(candidates) => {
                    assert!(candidates.len() <= LATIN_CANDIDATES);
                    assert_eq!(candidates[0].code(), code, "{text}");
                }
                LatinVote::Undecided => panic!("enough stopwords to narrow: {text}"),
            }
            assert_eq!(detect_language(text).unwrap().code, code);
        }
        // One sentence of prose is decided by its function words alone.
        assert_eq!(
            latin_vote(texts[0].1),
            LatinVote::Decided(whatlang::Lang::Eng)
        );
        // A few stopwords of two languages narrow the candidates but decide nothing.
        assert!(matches!(
            latin_vote("die Katze und the dog of la casa de el perro"),
            LatinVote::Candidates(_)
        ));
        // Too few stopwords to tell: every language is scored.
        assert_eq!(
            latin_vote("gcloud compute --flatten --format=json"),
            LatinVote::Undecided
        );
    }

    #[test]
    fn english_technical_text_is_english() {
        // From tzdata's NEWS: trigram scoring alone calls this Norwegian.
        let text = "that mishandles 64-bit TZif data\n    or uses obsolete TZ strings like \
                    \"EET-2EEST\" that lack DST rules.\n    Slim format is more efficient and \
                    does not work around 64-bit bugs\n    or obsolete TZ strings";
        assert_eq!(
            whatlang::Detector::with_allowlist(LATIN.to_vec())
                .detect(text)
                .map(|i| i.lang()),
            Some(whatlang::Lang::Nob)
        );
        assert_eq!(detect_language(text).unwrap().code, "eng");
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
