//! Text normalisation: Unicode NFKC and lowercasing, with an ASCII fast path.
//!
//! NFKC folds compatibility forms (full-width Latin, ligatures, superscripts) onto their plain
//! letters, so a page typed with full-width characters fingerprints like its half-width copy.
//! Lowercasing uses the full Unicode mapping (including the final sigma), the same as Python's
//! `str.lower()`, which the `blake2b` profile must reproduce.

use std::borrow::Cow;

use std::sync::OnceLock;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// One bit per Basic Multilingual Plane character: set when the character is NFKC-stable on
/// its own and a starter (combining class 0), so a run of such characters is NFKC. Built once
/// from the normalisation crate's own data; it turns the common case of the quick check into
/// a bit test.
fn stable_starters() -> &'static [u64; 1024] {
    static TABLE: OnceLock<Box<[u64; 1024]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u64; 1024]);
        for cp in 0..0x1_0000u32 {
            if let Some(c) = char::from_u32(cp) {
                if canonical_combining_class(c) == 0
                    && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
                {
                    t[(cp / 64) as usize] |= 1 << (cp % 64);
                }
            }
        }
        t
    })
}

/// Whether `text` is NFKC: a bit test per character in the common case, the full quick
/// check (and then, if undecided, full normalisation) otherwise.
fn is_nfkc(text: &str) -> bool {
    let table = stable_starters();
    text.chars().all(|c| is_stable_starter(table, c))
        || is_nfkc_quick(text.chars()) == IsNormalized::Yes
}

/// Whether `c` is marked in [`stable_starters`]' `table` (no character past the BMP is).
#[inline(always)]
fn is_stable_starter(table: &[u64; 1024], c: char) -> bool {
    let cp = c as u32;
    cp < 0x1_0000 && table[(cp / 64) as usize] & (1 << (cp % 64)) != 0
}

/// Returns `text` in NFKC, lowercased.
///
/// ASCII text cannot change under NFKC, so only ASCII lowercasing is applied to it, and the
/// input is borrowed when it has no uppercase letter. The function is idempotent:
/// `normalize(&normalize(t)) == normalize(t)`.
///
/// ```
/// use neardup::text::normalize;
/// assert_eq!(normalize("Ｆｕｌｌ-Width ＴＥＸＴ"), "full-width text");
/// assert_eq!(normalize("ΟΔΟΣ"), "οδος");
/// ```
pub fn normalize(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            return Cow::Owned(text.to_ascii_lowercase());
        }
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    normalize_non_ascii_into(text, &mut out);
    Cow::Owned(out)
}

/// How each Basic Multilingual Plane character normalises when that is simple: the offset
/// from it to its lowercase (0 for itself) when it is a stable starter whose lowercase is
/// one stable starter too, [`FOLD_SLOW`] otherwise. Stored as blocks of 256 characters that
/// share storage when equal (every block of ideographs is all zeros), about 40 KiB in all.
struct FoldTable {
    /// The block (an index into `blocks`) of each 256 characters.
    index: [u16; 256],
    blocks: Vec<[i16; 256]>,
}

/// A character [`fold_fast_into`] leaves to the full normalisation: not a stable starter
/// (it or a neighbour may change under NFKC), a lowercase of several characters or of one
/// that is not a stable starter, or a capital sigma (whose lowercase depends on context).
const FOLD_SLOW: i16 = i16::MIN;

fn fold_table() -> &'static FoldTable {
    static TABLE: OnceLock<FoldTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let stable = stable_starters();
        let is_stable = |c: char| is_stable_starter(stable, c);
        let mut t = FoldTable {
            index: [0; 256],
            blocks: Vec::new(),
        };
        let mut seen: std::collections::HashMap<[i16; 256], u16> = Default::default();
        for hi in 0..256u32 {
            let mut block = [FOLD_SLOW; 256];
            for (lo, delta) in block.iter_mut().enumerate() {
                let Some(c) = char::from_u32(hi << 8 | lo as u32) else {
                    continue;
                };
                let mut lower = c.to_lowercase();
                if let (Some(l), None) = (lower.next(), lower.next()) {
                    if c != 'Σ' && is_stable(c) && is_stable(l) {
                        *delta = i16::try_from(l as i32 - c as i32).unwrap_or(FOLD_SLOW);
                    }
                }
            }
            let next = u16::try_from(t.blocks.len()).expect("at most 256 blocks");
            let at = *seen.entry(block).or_insert_with(|| {
                t.blocks.push(block);
                next
            });
            t.index[hi as usize] = at;
        }
        t
    })
}

/// Writes `text` lowercased into `out` when every character takes the table's simple path,
/// which is then its normalised form: a string of stable starters is NFKC, and so is its
/// lowercase when each character's is one stable starter. Answers false (and leaves `out`
/// partly written) at the first character that needs the full normalisation. Unicode's
/// case mappings are binary searches and NFKC a decomposition; this is a table read per
/// character, for the Cyrillic, Greek, accented Latin and symbols of most non-ASCII text.
fn fold_fast_into(text: &str, out: &mut String) -> bool {
    let table = fold_table();
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
            continue;
        }
        let cp = c as u32;
        if cp >= 0x1_0000 {
            return false;
        }
        let delta =
            table.blocks[usize::from(table.index[(cp >> 8) as usize])][(cp & 0xff) as usize];
        if delta == FOLD_SLOW {
            return false;
        }
        match char::from_u32(cp.wrapping_add_signed(i32::from(delta))) {
            Some(l) => out.push(l),
            None => return false,
        }
    }
    true
}

/// Writes the normalised form of `text` (which need not be ASCII) into `out`, replacing its
/// contents.
pub(crate) fn normalize_non_ascii_into(text: &str, out: &mut String) {
    out.clear();
    if fold_fast_into(text, out) {
        return;
    }
    out.clear();
    let nfkc: Cow<'_, str> = if is_nfkc(text) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfkc().collect())
    };
    // `str::to_lowercase` applies the context-sensitive final-sigma rule, as Python does;
    // without a capital sigma, lowercasing char by char is the same and allocates nothing.
    if nfkc.contains('Σ') {
        out.push_str(&nfkc.to_lowercase());
    } else {
        for c in nfkc.chars() {
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase());
            } else {
                out.extend(c.to_lowercase());
            }
        }
    }
    // Lowercasing can leave the text non-NFKC (rarely); normalise once more then, which
    // keeps `normalize` idempotent.
    if !is_nfkc(out) {
        let again: String = out.nfkc().collect();
        *out = again;
    }
}

/// Normalises exactly as Python's `unicodedata.normalize("NFKC", text).lower()` does (seed
/// 000), with no second pass: the `blake2b` compatibility profile needs the same bytes.
pub(crate) fn normalize_python_into(text: &str, out: &mut String) {
    out.clear();
    if text.is_ascii() {
        out.push_str(text);
        out.make_ascii_lowercase();
        return;
    }
    let nfkc: String = text.nfkc().collect();
    out.push_str(&nfkc.to_lowercase());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ascii_without_uppercase_is_borrowed() {
        assert!(matches!(normalize("plain text"), Cow::Borrowed(_)));
        assert_eq!(normalize("Plain TEXT"), "plain text");
    }

    #[test]
    fn compatibility_forms_fold() {
        assert_eq!(normalize("ﬁle"), "file");
        assert_eq!(normalize("Ⅻ"), "xii");
        assert_eq!(normalize("x²"), "x2");
        assert_eq!(normalize("ＡＢＣ"), "abc");
    }

    #[test]
    fn stable_starter_table_agrees_with_the_quick_check() {
        for text in [
            "Привет мир",
            "東京タワー",
            "ﬁle",
            "e\u{301}",
            "한국어",
            "ＡＢＣ",
        ] {
            let quick = is_nfkc_quick(text.chars()) == IsNormalized::Yes;
            let nfkc: String = text.nfkc().collect();
            assert_eq!(is_nfkc(text), quick || nfkc == text, "{text:?}");
        }
    }

    /// [`normalize_non_ascii_into`] without the table's simple path.
    fn normalize_slowly(text: &str) -> String {
        let nfkc: String = if is_nfkc(text) {
            text.to_owned()
        } else {
            text.nfkc().collect()
        };
        let lower = nfkc.to_lowercase();
        if is_nfkc(&lower) {
            lower
        } else {
            lower.nfkc().collect()
        }
    }

    #[test]
    fn the_fold_table_agrees_with_full_normalisation_on_every_bmp_character() {
        let mut fast = 0;
        for cp in 0x80..0x1_0000u32 {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            // Alone, between ASCII letters, and beside a combining mark that may compose.
            for text in [c.to_string(), format!("A{c}b"), format!("{c}\u{301}")] {
                let mut out = String::new();
                if fold_fast_into(&text, &mut out) {
                    fast += 1;
                    assert_eq!(out, normalize_slowly(&text), "U+{cp:04X} in {text:?}");
                }
                normalize_non_ascii_into(&text, &mut out);
                assert_eq!(out, normalize_slowly(&text), "U+{cp:04X} in {text:?}");
            }
        }
        // Most characters take the table's path (ideographs, Cyrillic, Greek, symbols).
        assert!(fast > 100_000, "{fast}");
    }

    proptest! {
        #[test]
        fn prop_the_fold_table_agrees_with_full_normalisation(
            s in "[a-zA-Z0-9 \\u{c0}-\\u{24f}\\u{370}-\\u{4ff}\\u{1e00}-\\u{1fff}\\u{2000}-\\u{2bff}\\u{300}-\\u{36f}\\u{ff00}-\\u{ffef}]{0,30}"
        ) {
            let mut out = String::new();
            normalize_non_ascii_into(&s, &mut out);
            prop_assert_eq!(out, normalize_slowly(&s));
        }
    }

    #[test]
    fn final_sigma_is_lowercased_in_context() {
        assert_eq!(normalize("ΟΔΟΣ ΟΔΟΣ"), "οδος οδος");
    }

    proptest! {
        #[test]
        fn prop_normalize_is_idempotent(s in "\\PC{0,40}") {
            let once = normalize(&s).into_owned();
            prop_assert_eq!(normalize(&once).into_owned(), once);
        }
    }
}
