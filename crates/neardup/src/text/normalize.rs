//! Text normalisation: Unicode NFKC and lowercasing, with an ASCII fast path.
//!
//! NFKC folds compatibility forms (full-width Latin, ligatures, superscripts) onto their plain
//! letters, so a page typed with full-width characters fingerprints like its half-width copy.
//! Lowercasing uses the full Unicode mapping (including the final sigma), the same as Python's
//! `str.lower()`, which the `blake2b` profile must reproduce.

use std::borrow::Cow;

use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

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

/// Writes the normalised form of `text` (which need not be ASCII) into `out`, replacing its
/// contents.
pub(crate) fn normalize_non_ascii_into(text: &str, out: &mut String) {
    out.clear();
    let nfkc: Cow<'_, str> = match is_nfkc_quick(text.chars()) {
        IsNormalized::Yes => Cow::Borrowed(text),
        _ => Cow::Owned(text.nfkc().collect()),
    };
    // `str::to_lowercase` applies the context-sensitive final-sigma rule, as Python does;
    // lowercasing can leave the text non-NFKC (e.g. U+0130), so normalise once more then,
    // which keeps `normalize` idempotent.
    let lower = nfkc.to_lowercase();
    match is_nfkc_quick(lower.chars()) {
        IsNormalized::Yes => out.push_str(&lower),
        _ => out.extend(lower.nfkc()),
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
