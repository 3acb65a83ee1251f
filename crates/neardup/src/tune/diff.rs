//! Shingles as words: the text behind each shingle hash and the shingle edit between two
//! texts.

use std::collections::HashSet;

use blake2::digest::consts::U8;
use blake2::{Blake2b, Digest};
use serde::Serialize;

use crate::fingerprint::{HashAlgo, SimHasher};
use crate::text::shingle::{shingle_hashes, token_hash};
use crate::text::{tokens, Boilerplate};

/// Every shingle of `text` in order, with the hash the fingerprint uses and its text (its
/// normalised tokens joined by spaces), so a hash can be shown as words.
///
/// ```
/// let hasher = neardup::SimHasher::builder().shingle_width(2).build()?;
/// let shingles = neardup::tune::shingle_texts(&hasher, "The quick, brown fox");
/// let texts: Vec<&str> = shingles.iter().map(|(_, t)| t.as_str()).collect();
/// assert_eq!(texts, ["the quick", "quick brown", "brown fox"]);
/// # Ok::<(), neardup::Error>(())
/// ```
pub fn shingle_texts(hasher: &SimHasher, text: &str) -> Vec<(u64, String)> {
    let words = tokens(text, hasher.token_rule());
    if words.is_empty() {
        return Vec::new();
    }
    let w = hasher.profile().shingle_width();
    let windows: Vec<&[String]> = if words.len() < w {
        vec![&words[..]]
    } else {
        words.windows(w).collect()
    };
    let texts: Vec<String> = windows.iter().map(|win| win.join(" ")).collect();
    let hashes: Vec<u64> = match hasher.profile().hash() {
        HashAlgo::Xxh3 => {
            let token_hashes: Vec<u64> = words.iter().map(|t| token_hash(t.as_bytes())).collect();
            let mut out = Vec::with_capacity(texts.len());
            shingle_hashes(&token_hashes, w, &mut out);
            out
        }
        HashAlgo::Blake2b => texts
            .iter()
            .map(|t| u64::from_be_bytes(Blake2b::<U8>::digest(t.as_bytes()).into()))
            .collect(),
    };
    hashes.into_iter().zip(texts).collect()
}

/// The edit between two texts in shingles: distinct shingles only in A, only in B, the
/// number shared, and the boilerplate shingles removed from each (first occurrence order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShingleDiff {
    /// Distinct content shingles in both.
    pub shared: usize,
    /// The passages of A made of shingles B has too: what matched (in code mode, the
    /// syntax-tree features the two share).
    pub passages_both: Vec<String>,
    /// Distinct content shingles only in A.
    pub only_a: Vec<String>,
    /// Distinct content shingles only in B.
    pub only_b: Vec<String>,
    /// The passages of A those shingles cover: runs of consecutive shingles merged into
    /// their words, so one changed word shows as one phrase rather than `w` shingles.
    pub passages_a: Vec<String>,
    /// The passages of B, likewise.
    pub passages_b: Vec<String>,
    /// Distinct shingles of A removed as boilerplate.
    pub boilerplate_a: Vec<String>,
    /// Distinct shingles of B removed as boilerplate.
    pub boilerplate_b: Vec<String>,
}

/// Merges shingles at consecutive positions into phrases (each shingle after the first of a
/// run adds its last word).
fn passages(shingles: &[(usize, &str)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut last: Option<usize> = None;
    for &(pos, text) in shingles {
        match (last, out.last_mut()) {
            (Some(prev), Some(phrase)) if pos == prev + 1 => {
                let word = text.rsplit(' ').next().unwrap_or(text);
                phrase.push(' ');
                phrase.push_str(word);
            }
            _ => out.push(text.to_owned()),
        }
        last = Some(pos);
    }
    out
}

/// Compares the shingles of two texts after removing `boilerplate`.
///
/// ```
/// let hasher = neardup::SimHasher::builder().shingle_width(2).build()?;
/// let diff = neardup::tune::shingle_diff(&hasher, "the cat sat on the mat", "the cat sat on a mat", None);
/// assert_eq!(diff.only_a, ["on the", "the mat"]);
/// assert_eq!(diff.passages_a, ["on the mat"]);
/// assert_eq!(diff.passages_b, ["on a mat"]);
/// # Ok::<(), neardup::Error>(())
/// ```
pub fn shingle_diff(
    hasher: &SimHasher,
    a: &str,
    b: &str,
    boilerplate: Option<&Boilerplate>,
) -> ShingleDiff {
    // (position of first occurrence, hash, text) of each distinct content shingle.
    let split = |text: &str| {
        let mut seen = HashSet::new();
        let (mut content, mut removed) = (Vec::new(), Vec::new());
        for (pos, (h, t)) in shingle_texts(hasher, text).into_iter().enumerate() {
            if seen.insert(h) {
                if boilerplate.is_some_and(|b| b.contains(h)) {
                    removed.push(t);
                } else {
                    content.push((pos, h, t));
                }
            }
        }
        (content, removed)
    };
    let (sa, boilerplate_a) = split(a);
    let (sb, boilerplate_b) = split(b);
    let ha: HashSet<u64> = sa.iter().map(|s| s.1).collect();
    let hb: HashSet<u64> = sb.iter().map(|s| s.1).collect();
    let only = |side: &[(usize, u64, String)], other: &HashSet<u64>| -> Vec<(usize, String)> {
        side.iter()
            .filter(|s| !other.contains(&s.1))
            .map(|s| (s.0, s.2.clone()))
            .collect()
    };
    let (oa, ob) = (only(&sa, &hb), only(&sb, &ha));
    let both: Vec<(usize, String)> = sa
        .iter()
        .filter(|s| hb.contains(&s.1))
        .map(|s| (s.0, s.2.clone()))
        .collect();
    let phrases = |o: &[(usize, String)]| {
        passages(&o.iter().map(|(p, t)| (*p, t.as_str())).collect::<Vec<_>>())
    };
    ShingleDiff {
        shared: ha.intersection(&hb).count(),
        passages_both: phrases(&both),
        passages_a: phrases(&oa),
        passages_b: phrases(&ob),
        only_a: oa.into_iter().map(|(_, t)| t).collect(),
        only_b: ob.into_iter().map(|(_, t)| t).collect(),
        boilerplate_a,
        boilerplate_b,
    }
}
