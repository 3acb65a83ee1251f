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
/// run on every record (the trigram scoring is linear in the sample).
const SAMPLE_BYTES: usize = 300;

/// How many tokens the stopword vote reads at most: three windows of a third of this, at a
/// quarter, half and three quarters of the text (beginnings are often headers, bylines or
/// navigation in another language than the content, and one window can fall on a quote).
const VOTE_TOKENS: usize = 300;

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
    let sample = prefix(text, SAMPLE_BYTES);
    let mut tokens = Vec::new();
    for_each_token(&super::normalize(sample), TokenRule::Unicode, |t| {
        tokens.push(token_hash(t.as_bytes()));
    });
    detect_language_of(sample, &tokens)
}

/// Detects the language of a record from `sample`, a few hundred bytes of its text (whose
/// first 300 bytes are read), and `tokens`, the token hashes of its longest text (word
/// tokens hashed as [`token_hash`] does), of which the stopword vote reads up to 300.
///
/// Voting on the tokens the fingerprint computes anyway costs a table lookup per token,
/// and a few hundred tokens decide far more texts than the 50 words of a sample.
pub(crate) fn detect_language_of(sample: &str, tokens: &[u64]) -> Option<Language> {
    let sample = prefix(sample, SAMPLE_BYTES);
    let info = if sample.is_ascii() {
        // ASCII letters are Latin script; no other script can be present.
        if !sample.bytes().any(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        latin(sample, tokens)?
    } else {
        // A CJK character carries about a word, a Latin letter a fifth of one: a Chinese or
        // Japanese text full of inline English names would otherwise read as Latin.
        let is_cjk = |c: char| {
            super::tokenize::is_han(c) || matches!(c as u32, 0x3040..=0x30FF | 0xAC00..=0xD7AF)
        };
        let cjk = sample.chars().filter(|&c| is_cjk(c)).count();
        let letters = sample.chars().filter(|c| c.is_alphabetic()).count();
        if cjk > 0 && cjk * 4 >= letters - cjk {
            let only: String = sample
                .chars()
                .filter(|&c| is_cjk(c) || c.is_whitespace())
                .collect();
            detector().detect(&only)?
        } else if whatlang::detect_script(sample) == Some(whatlang::Script::Latin) {
            latin(sample, tokens)?
        } else {
            detector().detect(sample)?
        }
    };
    Some(Language {
        code: info.lang().code(),
        script: info.script().name().to_owned(),
        reliable: info.is_reliable(),
    })
}

/// The language of a Latin-script text: by stopword vote when it decides, else by trigram
/// scoring of `sample` among the vote's candidates.
fn latin(sample: &str, tokens: &[u64]) -> Option<whatlang::Info> {
    match latin_vote(tokens) {
        LatinVote::Decided(lang) => Some(whatlang::Info::new(whatlang::Script::Latin, lang, 1.0)),
        LatinVote::Candidates(candidates) => {
            whatlang::Detector::with_allowlist(candidates).detect(sample)
        }
        LatinVote::Undecided => detector().detect(sample),
    }
}

/// The longest prefix of `text` of at most `bytes` bytes that ends on a character boundary.
fn prefix(text: &str, bytes: usize) -> &str {
    &text[..floor_boundary(text, text.len().min(bytes))]
}

/// The character boundary of `text` at or before byte `at`.
fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The sample of a long text trigram scoring reads: three windows of a third of 300 bytes
/// at a quarter, half and three quarters, as the vote's token windows (see [`VOTE_TOKENS`]).
pub(crate) fn windows_sample(text: &str) -> String {
    let window = SAMPLE_BYTES / 3;
    let mut sample = String::with_capacity(SAMPLE_BYTES + 3);
    for quarter in 1..=3 {
        let start = floor_boundary(text, (text.len() * quarter / 4).saturating_sub(window / 2));
        let end = floor_boundary(text, (start + window).min(text.len()));
        sample.push_str(&text[start..end]);
        sample.push('\n');
    }
    sample
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

/// The Latin-script languages whose stopwords the token hashes `tokens` are (up to
/// [`VOTE_TOKENS`] of them, in three windows).
///
/// whatlang scores a Latin-script text against each candidate's 300-trigram profile, a
/// fixed ~30 us per record for 22 languages (the largest single cost of a dedup run). A
/// language's score does not depend on the other candidates, so narrowing the candidates
/// to the few whose function words the text is made of gives the same answer whenever the
/// winner is among them. When one language has at least [`DECISIVE_HITS`] stopword hits
/// and [`DECISIVE_RATIO`] times the runner-up's, the text is made of that language's
/// function words and no trigram scoring is needed.
///
/// Single letters and numerals are left out of the vote: the stopword lists of many
/// languages hold them (Spanish holds every digit and letter), and technical text is full
/// of them. With them, English changelogs and command references tied with Spanish or
/// Portuguese and went to trigram scoring, which called them French, Catalan or Spanish.
/// On 60,000 records of the bench corpus (man pages and package docs in many languages)
/// the vote over 300 tokens decides 85% of the Latin-script ones; of those it decides and
/// the 300-byte sample's vote did not, whatlang disagreed on a quarter, and every one of a
/// sample read by hand was English code, changelog or command text that whatlang called
/// French, Spanish, Catalan, Danish or Norwegian.
fn latin_vote(tokens: &[u64]) -> LatinVote {
    static WORDS: OnceLock<StopwordTable> = OnceLock::new();
    let words = WORDS.get_or_init(|| {
        let mut words: HashMap<u64, u32> = HashMap::new();
        for (bit, lang) in LATIN.iter().enumerate() {
            for word in single_token_stopwords(lang.code()) {
                if word.chars().count() < 2 || word.chars().any(char::is_numeric) {
                    continue;
                }
                *words.entry(token_hash(word.as_bytes())).or_default() |= 1 << bit;
            }
        }
        StopwordTable::new(&words)
    });
    let (hits, total) = count_stopwords(words, tokens);
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

/// Each language's stopword hits among the tokens [`vote_windows`] picks, and the tokens that
/// are a stopword of any language.
///
/// Branch-free: a token's languages (bits of [`LATIN`]) are added a byte at a time to
/// counters of one byte per language, each byte spread over the eight lanes of a `u64` by
/// [`SPREAD`]. Branching per token on whether it is a stopword, and per language it is one
/// of, mispredicted on most tokens and was the vote's main cost.
fn count_stopwords(words: &StopwordTable, tokens: &[u64]) -> ([u32; LATIN.len()], u32) {
    const LANES: usize = LATIN.len().div_ceil(8);
    let mut hits = [0u32; LATIN.len()];
    let mut total = 0u32;
    let mut lanes = [0u64; LANES];
    let mut pending = 0u32;
    let mut flush = |lanes: &mut [u64; LANES]| {
        for (lane, group) in lanes.iter_mut().zip(hits.chunks_mut(8)) {
            for (j, hit) in group.iter_mut().enumerate() {
                *hit += ((*lane >> (8 * j)) & 0xff) as u32;
            }
            *lane = 0;
        }
    };
    for window in vote_windows(tokens) {
        for &h in window {
            let langs = words.get(h);
            total += u32::from(langs != 0);
            for (g, lane) in lanes.iter_mut().enumerate() {
                *lane += SPREAD[((langs >> (8 * g)) & 0xff) as usize];
            }
            pending += 1;
            if pending == 255 {
                // A lane holds at most 255 hits.
                flush(&mut lanes);
                pending = 0;
            }
        }
    }
    flush(&mut lanes);
    (hits, total)
}

/// Bit `j` of a byte as byte `j` of a `u64` (0 or 1), for [`count_stopwords`].
static SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut j = 0;
        while j < 8 {
            if b & (1 << j) != 0 {
                t[b] |= 1 << (8 * j);
            }
            j += 1;
        }
        b += 1;
    }
    t
};

/// The Latin-script stopwords' token hashes and the languages (bits of [`LATIN`]) each is a
/// stopword of, in a cuckoo table of one word per slot, at most half full: each stopword
/// sits in one of two slots its hash names, so a lookup reads both and compares without a
/// branch. (A linear probe's loop ran on past occupied slots for a token that is no
/// stopword, most of them, and mispredicted where it stopped; and slots of 16 bytes made a
/// table of a megabyte, whose reads missed the cache.)
///
/// A slot holds the low [`TAG_BITS`] bits of its stopword's hash above its languages. The
/// first slot is named by the hash's top bits, the second by the first and the tag (as in a
/// cuckoo filter), so a token found in either agrees with the stopword on the slot's bits
/// and the tag's: 57 bits for the ~10,000 stopwords' 32,768 slots, where two of the 64-bit
/// token hashes everything else compares are the same token.
struct StopwordTable {
    slots: Vec<u64>,
    shift: u32,
}

/// Bits of a stopword's hash kept in its slot.
const TAG_BITS: u32 = 64 - LANG_BITS;
/// Bits of a slot that hold languages.
const LANG_BITS: u32 = LATIN.len() as u32;

impl StopwordTable {
    fn new(words: &HashMap<u64, u32>) -> StopwordTable {
        let mut slots = (words.len() * 2).next_power_of_two().max(64);
        loop {
            if let Some(t) = StopwordTable::build(words, slots) {
                return t;
            }
            slots *= 2;
        }
    }

    /// The table of `slots` slots, unless cuckoo insertion fails (a cycle of evictions).
    fn build(words: &HashMap<u64, u32>, slots: usize) -> Option<StopwordTable> {
        let mut t = StopwordTable {
            slots: vec![0; slots],
            shift: 64 - slots.trailing_zeros(),
        };
        // By hash, so the table is the same from run to run.
        let mut sorted: Vec<(u64, u32)> = words.iter().map(|(&h, &l)| (h, l)).collect();
        sorted.sort_unstable();
        for (h, langs) in sorted {
            debug_assert!(langs != 0 && langs < 1 << LANG_BITS);
            let mut item = (h << LANG_BITS) | u64::from(langs);
            let mut at = t.first(h);
            let mut placed = false;
            for _ in 0..slots {
                std::mem::swap(&mut t.slots[at], &mut item);
                if item == 0 {
                    placed = true;
                    break;
                }
                // Evicted: to its other slot.
                at = t.other(at, item >> LANG_BITS);
            }
            if !placed {
                return None;
            }
        }
        Some(t)
    }

    /// The first slot of hash `h`.
    #[inline(always)]
    fn first(&self, h: u64) -> usize {
        (h >> self.shift) as usize
    }

    /// The slot other than `at` of a stopword whose tag is `tag`.
    #[inline(always)]
    fn other(&self, at: usize, tag: u64) -> usize {
        at ^ (crate::text::shingle::fmix64(tag) as usize & (self.slots.len() - 1))
    }

    /// The languages `h` is a stopword of (0: none).
    #[inline(always)]
    fn get(&self, h: u64) -> u64 {
        let tag = h & ((1 << TAG_BITS) - 1);
        let first = self.first(h);
        let a = self.slots[first];
        let b = self.slots[self.other(first, tag)];
        let langs = (1u64 << LANG_BITS) - 1;
        // Selects rather than branches: a token is a stopword about half the time.
        std::hint::select_unpredictable(a >> LANG_BITS == tag, a & langs, 0)
            | std::hint::select_unpredictable(b >> LANG_BITS == tag, b & langs, 0)
    }
}

/// The tokens the vote reads: all of them up to [`VOTE_TOKENS`], else three windows of a
/// third of that centred at a quarter, half and three quarters.
fn vote_windows(tokens: &[u64]) -> [&[u64]; 3] {
    if tokens.len() <= VOTE_TOKENS {
        return [tokens, &[], &[]];
    }
    let window = VOTE_TOKENS / 3;
    [1, 2, 3].map(|quarter| {
        let start = (tokens.len() * quarter / 4).saturating_sub(window / 2);
        &tokens[start..(start + window).min(tokens.len())]
    })
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

/// A language's stopwords that normalise to a single token, normalised.
fn single_token_stopwords(code: &str) -> Vec<String> {
    let Some(&(_, one)) = ISO_639_3_TO_1.iter().find(|(three, _)| *three == code) else {
        return Vec::new();
    };
    let Some(words) = stop_words::lookup(one) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for w in words {
        let normalized = super::normalize(w);
        let mut toks = Vec::new();
        for_each_token(&normalized, TokenRule::Unicode, |x| toks.push(x));
        if let [only] = toks[..] {
            out.push(only.to_owned());
        }
    }
    out
}

/// The token hashes of a language's stopwords (single-token entries), built once.
pub(crate) fn stopwords(code: &str) -> Option<&'static ShingleSet> {
    static TABLES: OnceLock<HashMap<&'static str, ShingleSet>> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        let mut t = HashMap::new();
        for &(three, _) in ISO_639_3_TO_1 {
            let set: ShingleSet = single_token_stopwords(three)
                .iter()
                .map(|w| token_hash(w.as_bytes()))
                .collect();
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
    fn the_stopword_table_answers_as_a_map_does() {
        let mut words: HashMap<u64, u32> = HashMap::new();
        let mut x = 1u64;
        for i in 0..3000u32 {
            x = crate::text::shingle::fmix64(x.wrapping_add(u64::from(i)));
            words.insert(x, 1 + i % 7);
        }
        // Keys that share their first slot (top bits), so all but one sit in their second.
        for i in 0..50u64 {
            words.insert(0xABCD_0000_0000_0000 | i, 9);
        }
        let t = StopwordTable::new(&words);
        for (&h, &langs) in &words {
            assert_eq!(t.get(h), u64::from(langs));
        }
        for i in 0..100_000u64 {
            let h = crate::text::shingle::fmix64(i ^ 0x5555);
            assert_eq!(t.get(h), u64::from(words.get(&h).copied().unwrap_or(0)));
        }
        assert_eq!(t.get(0xABCD_0000_0000_0000 | 77), 0);
    }

    #[test]
    fn stopword_counts_are_those_of_a_plain_count() {
        let words = {
            let mut words: HashMap<u64, u32> = HashMap::new();
            let mut x = 7u64;
            for i in 0..2000u32 {
                x = crate::text::shingle::fmix64(x.wrapping_add(u64::from(i)));
                // Up to all 22 languages' bits, and words of one language.
                let langs = if i % 3 == 0 {
                    1 << (i % 22)
                } else {
                    (x >> 20) as u32 & 0x3F_FFFF
                };
                words.insert(x, langs.max(1));
            }
            words
        };
        let table = StopwordTable::new(&words);
        let keys: Vec<u64> = words.keys().copied().collect();
        for len in [0usize, 1, 254, 255, 256, 300, 301, 1000, 5000] {
            // Half stopwords, half not; long enough to cross the byte lanes' flush.
            let tokens: Vec<u64> = (0..len)
                .map(|i| {
                    if i % 2 == 0 {
                        keys[(i * 31) % keys.len()]
                    } else {
                        crate::text::shingle::fmix64(i as u64 ^ 0xdead)
                    }
                })
                .collect();
            let mut hits = [0u32; LATIN.len()];
            let mut total = 0;
            for window in vote_windows(&tokens) {
                for h in window {
                    let langs = words.get(h).copied().unwrap_or(0);
                    total += u32::from(langs != 0);
                    for (bit, hit) in hits.iter_mut().enumerate() {
                        *hit += (langs >> bit) & 1;
                    }
                }
            }
            assert_eq!(
                count_stopwords(&table, &tokens),
                (hits, total),
                "{len} tokens"
            );
        }
    }

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

    /// The vote over the words of `text`.
    fn vote(text: &str) -> LatinVote {
        let mut tokens = Vec::new();
        for_each_token(&super::super::normalize(text), TokenRule::Unicode, |t| {
            tokens.push(token_hash(t.as_bytes()));
        });
        latin_vote(&tokens)
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
            match vote(text) {
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
        assert_eq!(vote(texts[0].1), LatinVote::Decided(whatlang::Lang::Eng));
        // A few stopwords of two languages narrow the candidates but decide nothing.
        assert!(matches!(
            vote("die Katze und the dog of la casa de el perro"),
            LatinVote::Candidates(_)
        ));
        // Too few stopwords to tell: every language is scored.
        assert_eq!(
            vote("gcloud compute --flatten --format=json"),
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
    fn single_letters_and_numerals_do_not_vote() {
        // A git log: Spanish's stopword list holds every digit and letter, so counting them
        // made this a tie between English and Spanish, left to trigram scoring.
        let text = "commit 5400bb4fb43dc811b813f11d5b0c023db727f543 Author: A. B. Tagoh \
                    Date: Tue Jan 22 12:11:09 2013 +0900 Add the list of fonts to the cache \
                    1 file changed, 2 insertions(+), 1 deletion(-) commit 0d8b15f00f11a5150d8 \
                    Date: Fri Feb 13 17:18:11 2009 -0800 Fix a leak in the 2 x 4 c h loops";
        assert_eq!(vote(text), LatinVote::Decided(whatlang::Lang::Eng));
        assert_eq!(detect_language(text).unwrap().code, "eng");
    }

    #[test]
    fn the_vote_reads_windows_of_the_whole_text() {
        let hash = |text: &str| {
            let mut tokens = Vec::new();
            for_each_token(&super::super::normalize(text), TokenRule::Unicode, |t| {
                tokens.push(token_hash(t.as_bytes()));
            });
            tokens
        };
        // A long text whose beginning is a German menu and whose body is English prose:
        // the windows at a quarter, half and three quarters are all English.
        let menu = "Startseite Suche Anmelden Kontakt Impressum Datenschutz und Hilfe ".repeat(5);
        let body = "It was the best of times and it was the worst of times, and all of us \
                    were going to the place where we had been before the war. "
            .repeat(20);
        let tokens = hash(&format!("{menu}{body}"));
        assert!(tokens.len() > VOTE_TOKENS);
        assert_eq!(latin_vote(&tokens), LatinVote::Decided(whatlang::Lang::Eng));
        // The text's first 300 bytes alone are the menu: not English.
        let first = detect_language(&menu).unwrap();
        assert_ne!(first.code, "eng");
        // The sample for trigram scoring is not read when the vote decides.
        let lang = detect_language_of(&menu, &tokens).unwrap();
        assert_eq!((lang.code, lang.reliable), ("eng", true));
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
