//! The facts behind one pair's decision: which index tables bring it together and the
//! pipeline's verdict.

use serde::Serialize;

use super::pairs::RecordFacts;
use crate::index::bands::band_ranges;
use crate::index::mih::mih_radii;
use crate::index::plan::LayoutKind;
use crate::pipeline::Rule;
use crate::Result;

/// One lookup table of a layout seen from a pair: its key bits, how many of them differ,
/// and whether a query with one fingerprint reaches the other through it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableMatch {
    /// The table's number, from 0.
    pub table: usize,
    /// The key's bit ranges as `(lowest bit, width)`, lowest first.
    pub bit_ranges: Vec<(u32, u32)>,
    /// Bits in the key.
    pub key_bits: u32,
    /// Key bits in which the two fingerprints differ.
    pub differing_bits: u32,
    /// How far from the query's key the table is probed (0: exact match); `None` when the
    /// table is not probed at this radius.
    pub probe_radius: Option<u32>,
    /// Whether the pair meets in this table.
    pub matched: bool,
}

fn table_match(table: usize, mask: u64, diff: u64, probe_radius: Option<u32>) -> TableMatch {
    let differing_bits = (diff & mask).count_ones();
    TableMatch {
        table,
        bit_ranges: mask_ranges(mask),
        key_bits: mask.count_ones(),
        differing_bits,
        probe_radius,
        matched: probe_radius.is_some_and(|r| differing_bits <= r),
    }
}

/// The contiguous runs of set bits of `mask`, as `(lowest bit, width)`.
fn mask_ranges(mask: u64) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut bit = 0;
    while bit < 64 {
        if mask >> bit & 1 == 1 {
            let start = bit;
            while bit < 64 && mask >> bit & 1 == 1 {
                bit += 1;
            }
            out.push((start, bit - start));
        } else {
            bit += 1;
        }
    }
    out
}

fn range_mask((lo, width): (u32, u32)) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        ((1u64 << width) - 1) << lo
    }
}

/// Which tables of `layout` (planned for `max_distance`) bring 64-bit fingerprints `a` and
/// `b` together: bands and permuted tables need an exact key match, multi-index substrings
/// a match within their probe radius. A linear scan has no tables (everything is compared).
///
/// # Errors
/// An invalid layout.
pub fn table_matches(
    layout: &LayoutKind,
    max_distance: u32,
    a: u64,
    b: u64,
) -> Result<Vec<TableMatch>> {
    let diff = a ^ b;
    Ok(match layout {
        LayoutKind::Linear => Vec::new(),
        LayoutKind::Bands { bands } => band_matches(*bands, a, b),
        LayoutKind::Permuted(p) => p
            .keys()?
            .iter()
            .enumerate()
            .map(|(i, key)| table_match(i, key.mask(), diff, Some(0)))
            .collect(),
        LayoutKind::Mih { substrings } => {
            let ranges = band_ranges(*substrings);
            let widths: Vec<u32> = ranges.iter().map(|r| r.1).collect();
            let radii = mih_radii(&widths, max_distance);
            ranges
                .iter()
                .zip(radii)
                .enumerate()
                .map(|(i, (&r, radius))| table_match(i, range_mask(r), diff, radius))
                .collect()
        }
    })
}

/// The pigeonhole view: split 64 bits into `bands` contiguous bands; which are equal. Two
/// fingerprints within `bands - 1` bits always share at least one.
pub fn band_matches(bands: u32, a: u64, b: u64) -> Vec<TableMatch> {
    band_ranges(bands.clamp(1, 64))
        .into_iter()
        .enumerate()
        .map(|(i, r)| table_match(i, range_mask(r), a ^ b, Some(0)))
        .collect()
}

/// Why a pair is or is not a duplicate under a rule, in the pipeline's order of checks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Same normalised text: the exact tier merges it before any SimHash.
    Exact,
    /// Within the radius and similar enough: merged.
    NearDuplicate,
    /// One side has fewer words than `min_words`: only the exact tier applies.
    TooShort {
        /// The shorter side's words.
        words: usize,
        /// The rule's minimum.
        min_words: usize,
    },
    /// The fingerprints are further apart than the radius: never a candidate.
    TooFar {
        /// Their distance.
        distance: u32,
        /// The radius.
        max_distance: u32,
    },
    /// A candidate whose shingles are not similar enough: verification refuses it.
    TooDissimilar {
        /// Their Jaccard similarity.
        jaccard: f64,
        /// The threshold.
        min_jaccard: f64,
    },
}

impl Verdict {
    /// Whether the pipeline would put the two in one cluster.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Verdict::Exact | Verdict::NearDuplicate)
    }
}

/// Decides a pair the way the pipeline does: exact tier, minimum length, radius, Jaccard.
pub fn decide(rule: &Rule, a: &RecordFacts, b: &RecordFacts) -> Verdict {
    if a.content_hash == b.content_hash {
        return Verdict::Exact;
    }
    let words = a.words.min(b.words);
    if words < rule.min_words {
        return Verdict::TooShort {
            words,
            min_words: rule.min_words,
        };
    }
    let scores = a.scores(b);
    if scores.distance > rule.max_distance {
        return Verdict::TooFar {
            distance: scores.distance,
            max_distance: rule.max_distance,
        };
    }
    if scores.jaccard < rule.min_jaccard {
        return Verdict::TooDissimilar {
            jaccard: scores.jaccard,
            min_jaccard: rule.min_jaccard,
        };
    }
    Verdict::NearDuplicate
}
