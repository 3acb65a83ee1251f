//! Thresholds from evidence: labelled pairs → precision, recall and F1 per (max_distance,
//! min_jaccard), the recommended pair and the index layout it needs, the inverse question
//! (which radius reaches a recall at a Jaccard target), stratified pair sampling for
//! labelling, and the facts behind one pair's decision.
//!
//! Seeds 000 and 004 both say the same thing: label pairs from your own corpus and pick the
//! threshold that separates them. This module does the arithmetic; the command line reads
//! the files, prints and plots.
//!
//! A pair is predicted a near-duplicate at `(k, J)` when its fingerprints are within `k`
//! bits **and** its shingle sets' Jaccard is at least `J`: exactly the pipeline's
//! [`Rule::accepts`]. Every pair carries a weight (1 for a hand-made set; for pairs sampled
//! per distance bucket by [`sample_pairs`], the bucket's population over its sample size),
//! so counts are Horvitz-Thompson estimates of the whole corpus's pairs.
//!
//! ```
//! use neardup::tune::{evaluate, GridSpec, LabelledPair};
//! use neardup::verify::Scores;
//!
//! let pair = |distance, jaccard, duplicate| LabelledPair {
//!     scores: Scores { distance, jaccard },
//!     duplicate,
//!     weight: 1.0,
//! };
//! let pairs = [pair(2, 0.95, true), pair(6, 0.85, true), pair(9, 0.40, false), pair(30, 0.02, false)];
//! let grid = evaluate(&pairs, &GridSpec::default())?;
//! let best = grid.recommend(0.99);
//! assert_eq!(best.cell.recall, 1.0);
//! assert_eq!(best.cell.max_distance, 6); // the smallest radius that keeps every duplicate
//! # Ok::<(), neardup::Error>(())
//! ```

use std::collections::HashSet;

use blake2::digest::consts::U8;
use blake2::{Blake2b, Digest};
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::fingerprint::{Field, HashAlgo, Scratch, SimHasher};
use crate::index::bands::band_ranges;
use crate::index::mih::mih_radii;
use crate::index::plan::{choose_layout, LayoutKind, LayoutPlan, PlanRequest};
use crate::index::self_join;
use crate::pipeline::Rule;
use crate::text::shingle::{shingle_hashes, token_hash};
use crate::text::{tokens, Boilerplate};
use crate::verify::{id_jaccard, shingle_ids, Scores};
use crate::{Error, Result};

/// The largest radius of the default grid, in bits.
pub const DEFAULT_GRID_MAX_DISTANCE: u32 = 16;
/// The lowest Jaccard threshold of the default grid.
pub const DEFAULT_GRID_MIN_JACCARD: f64 = 0.5;
/// The Jaccard step of the default grid.
pub const DEFAULT_GRID_JACCARD_STEP: f64 = 0.02;
/// The default precision floor of [`Grid::recommend`].
pub const DEFAULT_MIN_PRECISION: f64 = 0.99;

/// Two scores are the same when they differ by less than this (weighted sums of the same
/// pairs in the same order are bitwise equal; this only absorbs rounding of user weights).
const TIE: f64 = 1e-12;

/// What verification sees of one record: fingerprint, exact-tier hash, verification set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFacts {
    /// The fingerprint's bits (upper 64 zero for 64-bit profiles).
    pub fingerprint: u128,
    /// Hash of the normalised token stream.
    pub content_hash: u128,
    /// Sorted distinct 32-bit shingle ids after boilerplate removal, as the store keeps them.
    pub shingle_ids: Vec<u32>,
    /// Words in the text.
    pub words: usize,
    /// Shingle occurrences removed as boilerplate.
    pub boilerplate_removed: usize,
}

impl RecordFacts {
    /// Analyses a text the way the pipeline does: one field, `boilerplate` removed first
    /// (and, as the pipeline does, the whole text kept when nothing but boilerplate is left).
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when the text has no words.
    ///
    /// ```
    /// use neardup::tune::RecordFacts;
    /// let hasher = neardup::SimHasher::builder().build()?;
    /// let facts = RecordFacts::of_text(&hasher, "the quick brown fox jumps over the lazy dog", None)?;
    /// assert_eq!(facts.words, 9);
    /// # Ok::<(), neardup::Error>(())
    /// ```
    pub fn of_text(
        hasher: &SimHasher,
        text: &str,
        boilerplate: Option<&Boilerplate>,
    ) -> Result<RecordFacts> {
        Self::of_fields(hasher, &[Field::new(text)], boilerplate)
    }

    /// Like [`of_text`](Self::of_text) for a record of several weighted fields.
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when no field has a word; [`Error::InvalidConfig`] for a
    /// field weight of 0.
    pub fn of_fields(
        hasher: &SimHasher,
        fields: &[Field<'_>],
        boilerplate: Option<&Boilerplate>,
    ) -> Result<RecordFacts> {
        let mut scratch = Scratch::default();
        let analysis = match hasher.analyze(fields, boilerplate, &mut scratch) {
            Err(Error::EmptyFeatureBag { .. }) if boilerplate.is_some() => {
                hasher.analyze(fields, None, &mut scratch)?
            }
            other => other?,
        };
        Ok(RecordFacts {
            fingerprint: analysis.fingerprint.value(),
            content_hash: analysis.content_hash.0,
            shingle_ids: shingle_ids(&analysis.shingles),
            words: analysis.token_count,
            boilerplate_removed: analysis.boilerplate_removed,
        })
    }

    /// Both scores against `other`: Hamming distance over the full width, Jaccard of the
    /// verification sets.
    pub fn scores(&self, other: &RecordFacts) -> Scores {
        Scores {
            distance: (self.fingerprint ^ other.fingerprint).count_ones(),
            jaccard: id_jaccard(&self.shingle_ids, &other.shingle_ids),
        }
    }
}

/// One labelled pair: its scores, the label and how many corpus pairs it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LabelledPair {
    /// Hamming distance and Jaccard similarity.
    pub scores: Scores,
    /// Whether a person (or a labelling rule) called it a duplicate.
    pub duplicate: bool,
    /// How many pairs it stands for (1 for a hand-made set), > 0.
    pub weight: f64,
}

/// The thresholds to tabulate: every radius `0..=max_distance` against every Jaccard
/// threshold from a start to 1.0 by a step.
#[derive(Debug, Clone, PartialEq)]
pub struct GridSpec {
    max_distance: u32,
    min_jaccards: Vec<f64>,
}

impl Default for GridSpec {
    /// Radii 0..=16 and Jaccard 0.50..=1.00 by 0.02.
    fn default() -> Self {
        GridSpec::new(
            DEFAULT_GRID_MAX_DISTANCE,
            DEFAULT_GRID_MIN_JACCARD,
            DEFAULT_GRID_JACCARD_STEP,
        )
        .expect("the default grid is valid")
    }
}

impl GridSpec {
    /// Radii `0..=max_distance` and Jaccard thresholds `jaccard_from, jaccard_from + step,
    /// ..., 1.0` (each rounded to 6 decimals, so 0.8 is the `f64` nearest 0.8).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a radius above 128 bits, a start outside 0..=1 or a step
    /// outside 0.001..=1.
    pub fn new(max_distance: u32, jaccard_from: f64, jaccard_step: f64) -> Result<GridSpec> {
        if max_distance > 128 {
            return Err(Error::InvalidConfig {
                field: "max_distance",
                value: max_distance.to_string(),
                reason: "a fingerprint has at most 128 bits".into(),
            });
        }
        if !(0.0..=1.0).contains(&jaccard_from) {
            return Err(Error::InvalidConfig {
                field: "jaccard_from",
                value: jaccard_from.to_string(),
                reason: "must be between 0 and 1".into(),
            });
        }
        if !(0.001..=1.0).contains(&jaccard_step) {
            return Err(Error::InvalidConfig {
                field: "jaccard_step",
                value: jaccard_step.to_string(),
                reason: "must be between 0.001 and 1".into(),
            });
        }
        let steps = ((1.0 - jaccard_from) / jaccard_step + 1e-9).floor() as usize;
        let round = |x: f64| (x * 1e6).round() / 1e6;
        let mut min_jaccards: Vec<f64> = (0..=steps)
            .map(|i| round(jaccard_from + i as f64 * jaccard_step))
            .collect();
        if min_jaccards.last() != Some(&1.0) {
            min_jaccards.push(1.0);
        }
        Ok(GridSpec {
            max_distance,
            min_jaccards,
        })
    }

    /// The largest radius tabulated.
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The Jaccard thresholds tabulated, ascending.
    pub fn min_jaccards(&self) -> &[f64] {
        &self.min_jaccards
    }
}

/// Precision, recall and F1 of one `(max_distance, min_jaccard)` rule over labelled pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cell {
    /// The radius, bits.
    pub max_distance: u32,
    /// The Jaccard threshold.
    pub min_jaccard: f64,
    /// Weight of duplicates the rule accepts.
    pub true_positives: f64,
    /// Weight of non-duplicates the rule accepts.
    pub false_positives: f64,
    /// Weight of duplicates the rule refuses.
    pub false_negatives: f64,
    /// Weight of non-duplicates the rule refuses.
    pub true_negatives: f64,
    /// `tp / (tp + fp)`; 1.0 when the rule accepts nothing (it made no wrong merge).
    pub precision: f64,
    /// `tp / (tp + fn)`.
    pub recall: f64,
    /// Harmonic mean of precision and recall (0 when both are 0).
    pub f1: f64,
    /// Share of duplicates within `max_distance` bits, whatever their Jaccard: the recall
    /// of the index's candidates alone, which bounds the rule's recall.
    pub candidate_recall: f64,
}

impl Cell {
    fn new(max_distance: u32, min_jaccard: f64) -> Cell {
        Cell {
            max_distance,
            min_jaccard,
            true_positives: 0.0,
            false_positives: 0.0,
            false_negatives: 0.0,
            true_negatives: 0.0,
            precision: 1.0,
            recall: 0.0,
            f1: 0.0,
            candidate_recall: 0.0,
        }
    }

    fn finish(&mut self, candidates: f64) {
        let (tp, fp, fn_) = (
            self.true_positives,
            self.false_positives,
            self.false_negatives,
        );
        self.precision = if tp + fp > 0.0 { tp / (tp + fp) } else { 1.0 };
        self.recall = if tp + fn_ > 0.0 { tp / (tp + fn_) } else { 0.0 };
        let (p, r) = (self.precision, self.recall);
        self.f1 = if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        };
        self.candidate_recall = if tp + fn_ > 0.0 {
            candidates / (tp + fn_)
        } else {
            0.0
        };
    }
}

/// Scores one rule over labelled pairs (any thresholds, on the grid or not).
///
/// ```
/// use neardup::tune::{score_rule, LabelledPair};
/// use neardup::verify::Scores;
/// let pairs = [
///     LabelledPair { scores: Scores { distance: 3, jaccard: 0.9 }, duplicate: true, weight: 1.0 },
///     LabelledPair { scores: Scores { distance: 3, jaccard: 0.6 }, duplicate: false, weight: 1.0 },
/// ];
/// let cell = score_rule(&pairs, 12, 0.8);
/// assert_eq!((cell.precision, cell.recall), (1.0, 1.0));
/// ```
pub fn score_rule(pairs: &[LabelledPair], max_distance: u32, min_jaccard: f64) -> Cell {
    let mut cell = Cell::new(max_distance, min_jaccard);
    let mut candidates = 0.0;
    for p in pairs {
        let near = p.scores.distance <= max_distance;
        let accepted = near && p.scores.jaccard >= min_jaccard;
        match (p.duplicate, accepted) {
            (true, true) => cell.true_positives += p.weight,
            (true, false) => cell.false_negatives += p.weight,
            (false, true) => cell.false_positives += p.weight,
            (false, false) => cell.true_negatives += p.weight,
        }
        if p.duplicate && near {
            candidates += p.weight;
        }
    }
    cell.finish(candidates);
    cell
}

/// Every cell of a [`GridSpec`] over one set of labelled pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    spec: GridSpec,
    /// Row-major: `cells[k * min_jaccards.len() + j]`.
    cells: Vec<Cell>,
    pairs: usize,
    duplicates: f64,
    non_duplicates: f64,
}

/// Tabulates precision, recall and F1 for every `(k, J)` of `spec`.
///
/// # Errors
/// [`Error::InvalidInput`] for no pairs, a weight that is not a positive number, or a set
/// without both duplicates and non-duplicates (nothing to separate).
pub fn evaluate(pairs: &[LabelledPair], spec: &GridSpec) -> Result<Grid> {
    if pairs.is_empty() {
        return Err(Error::InvalidInput {
            field: "pairs",
            value: String::new(),
            reason: "no labelled pairs".into(),
        });
    }
    if let Some(p) = pairs
        .iter()
        .find(|p| !(p.weight > 0.0 && p.weight.is_finite()))
    {
        return Err(Error::InvalidInput {
            field: "weight",
            value: p.weight.to_string(),
            reason: "a pair's weight must be a positive number".into(),
        });
    }
    let duplicates: f64 = pairs.iter().filter(|p| p.duplicate).map(|p| p.weight).sum();
    let non_duplicates: f64 = pairs
        .iter()
        .filter(|p| !p.duplicate)
        .map(|p| p.weight)
        .sum();
    let count = |dup: bool| pairs.iter().filter(|p| p.duplicate == dup).count();
    if count(true) == 0 || count(false) == 0 {
        return Err(Error::InvalidInput {
            field: "pairs",
            value: format!(
                "{} duplicates, {} non-duplicates",
                count(true),
                count(false)
            ),
            reason:
                "label both duplicates and non-duplicates: a threshold needs both sides to separate"
                    .into(),
        });
    }
    let mut cells = Vec::with_capacity((spec.max_distance as usize + 1) * spec.min_jaccards.len());
    for k in 0..=spec.max_distance {
        for &j in &spec.min_jaccards {
            cells.push(score_rule(pairs, k, j));
        }
    }
    Ok(Grid {
        spec: spec.clone(),
        cells,
        pairs: pairs.len(),
        duplicates,
        non_duplicates,
    })
}

/// The rule [`Grid::recommend`] picked, and whether it met the precision floor.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Recommendation {
    /// The chosen cell.
    pub cell: Cell,
    /// The precision floor asked for.
    pub min_precision: f64,
    /// False when no cell reached the floor: the cell then has the best F1 instead.
    pub meets_min_precision: bool,
}

impl Grid {
    /// The spec tabulated.
    pub fn spec(&self) -> &GridSpec {
        &self.spec
    }

    /// Every cell, radius-major.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// The cell at radius `max_distance` and the `jaccard_index`-th threshold.
    ///
    /// # Panics
    /// When either is outside the spec.
    pub fn cell(&self, max_distance: u32, jaccard_index: usize) -> &Cell {
        let width = self.spec.min_jaccards.len();
        assert!(max_distance <= self.spec.max_distance && jaccard_index < width);
        &self.cells[max_distance as usize * width + jaccard_index]
    }

    /// The index of threshold `min_jaccard` in the spec, if it is on the grid.
    pub fn jaccard_index(&self, min_jaccard: f64) -> Option<usize> {
        self.spec
            .min_jaccards
            .iter()
            .position(|&j| (j - min_jaccard).abs() < 1e-9)
    }

    /// The cells of every radius at one threshold.
    pub fn by_distance(&self, jaccard_index: usize) -> Vec<Cell> {
        (0..=self.spec.max_distance)
            .map(|k| *self.cell(k, jaccard_index))
            .collect()
    }

    /// The cells of every threshold at one radius.
    pub fn by_jaccard(&self, max_distance: u32) -> Vec<Cell> {
        (0..self.spec.min_jaccards.len())
            .map(|j| *self.cell(max_distance, j))
            .collect()
    }

    /// The number of pairs.
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// Total weight of duplicates.
    pub fn duplicates(&self) -> f64 {
        self.duplicates
    }

    /// Total weight of non-duplicates.
    pub fn non_duplicates(&self) -> f64 {
        self.non_duplicates
    }

    /// The recommended rule: among cells with precision at least `min_precision`, the
    /// highest recall; ties go to the higher F1, then the smaller radius (cheaper queries),
    /// then the middle of the tied Jaccard thresholds (the widest margin on both sides).
    /// When no cell reaches the floor, the best F1 with the same tie-breaks, flagged.
    pub fn recommend(&self, min_precision: f64) -> Recommendation {
        let qualifying: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| c.precision >= min_precision - TIE && c.true_positives > 0.0)
            .collect();
        let meets = !qualifying.is_empty();
        let pool: Vec<&Cell> = if meets {
            qualifying
        } else {
            self.cells.iter().collect()
        };
        let key = |c: &Cell| {
            if meets {
                (c.recall, c.f1)
            } else {
                (c.f1, c.recall)
            }
        };
        let better = |a: (f64, f64), b: (f64, f64)| {
            a.0 > b.0 + TIE || ((a.0 - b.0).abs() <= TIE && a.1 > b.1 + TIE)
        };
        let same =
            |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() <= TIE && (a.1 - b.1).abs() <= TIE;
        let mut best = key(pool[0]);
        for c in &pool {
            if better(key(c), best) {
                best = key(c);
            }
        }
        let tied: Vec<&Cell> = pool.into_iter().filter(|c| same(key(c), best)).collect();
        let k = tied.iter().map(|c| c.max_distance).min().expect("a tie");
        let at_k: Vec<&Cell> = tied.into_iter().filter(|c| c.max_distance == k).collect();
        let cell = *at_k[(at_k.len() - 1) / 2];
        Recommendation {
            cell,
            min_precision,
            meets_min_precision: meets,
        }
    }
}

/// The answer to "for Jaccard J* and a recall target, which radius and layout, at what
/// cost": see [`radius_for`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RadiusAnswer {
    /// The target similarity J*.
    pub min_jaccard: f64,
    /// The recall asked for.
    pub target_recall: f64,
    /// Pairs with Jaccard at least J* (the ones to find).
    pub similar_pairs: usize,
    /// Their total weight.
    pub similar_weight: f64,
    /// The smallest radius whose candidates include `target_recall` of them.
    pub max_distance: u32,
    /// The recall reached at that radius.
    pub recall: f64,
    /// Recall of the similar pairs at each radius `0..=max_distance`.
    pub recall_by_distance: Vec<f64>,
    /// The records the layout is planned for.
    pub records: u64,
    /// The cheapest layout for `records` at that radius, with its cost per query.
    #[serde(skip)]
    pub plan: LayoutPlan,
}

/// The inverse question: which radius `k` makes the index propose at least `target_recall`
/// of the pairs whose Jaccard is at least `min_jaccard` (labels are not needed, only scores
/// and weights), and which layout answers `k` for `records` records at what cost.
///
/// # Errors
/// [`Error::InvalidConfig`] for a target outside 0..=1; [`Error::InvalidInput`] when no pair
/// reaches `min_jaccard`; index planning errors.
///
/// ```
/// use neardup::tune::radius_for;
/// use neardup::verify::Scores;
/// let pairs = [(Scores { distance: 3, jaccard: 0.9 }, 1.0), (Scores { distance: 9, jaccard: 0.85 }, 1.0)];
/// let answer = radius_for(&pairs, 0.8, 1.0, 1_000_000)?;
/// assert_eq!(answer.max_distance, 9);
/// println!("{}", answer.plan);
/// # Ok::<(), neardup::Error>(())
/// ```
pub fn radius_for(
    pairs: &[(Scores, f64)],
    min_jaccard: f64,
    target_recall: f64,
    records: u64,
) -> Result<RadiusAnswer> {
    for (field, value) in [
        ("min_jaccard", min_jaccard),
        ("target_recall", target_recall),
    ] {
        if !(0.0..=1.0).contains(&value) {
            return Err(Error::InvalidConfig {
                field,
                value: value.to_string(),
                reason: "must be between 0 and 1".into(),
            });
        }
    }
    let similar: Vec<&(Scores, f64)> = pairs
        .iter()
        .filter(|(s, _)| s.jaccard >= min_jaccard)
        .collect();
    if similar.is_empty() {
        return Err(Error::InvalidInput {
            field: "min_jaccard",
            value: min_jaccard.to_string(),
            reason: "no pair is that similar: lower the target or add similar pairs".into(),
        });
    }
    let total: f64 = similar.iter().map(|(_, w)| w).sum();
    let max_bits = similar.iter().map(|(s, _)| s.distance).max().unwrap_or(0);
    let mut recall_by_distance = Vec::new();
    let mut chosen = max_bits;
    for k in 0..=max_bits {
        // A fold, not `sum`: an empty f64 sum is -0.0.
        let within = similar
            .iter()
            .filter(|(s, _)| s.distance <= k)
            .fold(0.0, |acc, (_, w)| acc + w);
        let recall = within / total;
        recall_by_distance.push(recall);
        if recall >= target_recall - TIE {
            chosen = k;
            break;
        }
    }
    let plan = choose_layout(&PlanRequest::new(records, chosen))?;
    Ok(RadiusAnswer {
        min_jaccard,
        target_recall,
        similar_pairs: similar.len(),
        similar_weight: total,
        max_distance: chosen,
        recall: *recall_by_distance.last().expect("at least radius 0"),
        recall_by_distance,
        records,
        plan,
    })
}

/// The layout the pipeline would use for `records` records at `max_distance` bits (the same
/// choice as `AutoIndex::for_size`).
///
/// # Errors
/// [`crate::index::IndexError::OverBudget`] when no layout fits the default budget.
pub fn layout_for(records: u64, max_distance: u32) -> Result<LayoutPlan> {
    Ok(choose_layout(&PlanRequest::new(records, max_distance))?)
}

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
    let phrases = |o: &[(usize, String)]| {
        passages(&o.iter().map(|(p, t)| (*p, t.as_str())).collect::<Vec<_>>())
    };
    ShingleDiff {
        shared: ha.intersection(&hb).count(),
        passages_a: phrases(&oa),
        passages_b: phrases(&ob),
        only_a: oa.into_iter().map(|(_, t)| t).collect(),
        only_b: ob.into_iter().map(|(_, t)| t).collect(),
        boilerplate_a,
        boilerplate_b,
    }
}

/// One pair chosen by [`sample_pairs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SampledPair {
    /// Position of the first record.
    pub a: u32,
    /// Position of the second record (`a < b`).
    pub b: u32,
    /// Hamming distance over the full width.
    pub distance: u32,
    /// The distance bucket (`None`: beyond the largest bucket).
    pub bucket: Option<u32>,
    /// Corpus pairs in the bucket divided by pairs sampled from it.
    pub weight_numerator: u64,
    /// Pairs sampled from the bucket.
    pub weight_denominator: u64,
}

impl SampledPair {
    /// How many corpus pairs this one stands for.
    pub fn weight(&self) -> f64 {
        self.weight_numerator as f64 / self.weight_denominator.max(1) as f64
    }
}

/// A deterministic generator for sampling far pairs (splitmix64): no `rand` dependency for
/// one sampler, and the same seed gives the same file.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// Samples about `sample` pairs of `fingerprints` spread over distance buckets: one bucket
/// per distance `0..=max_distance` and one for everything further. Most pairs of a corpus
/// are far apart, so a uniform sample would hold almost no near pair; here the sample is
/// shared round-robin among the non-empty buckets, and each pair's weight says how many
/// corpus pairs it stands for. Deterministic for a seed; sorted by (distance, a, b).
///
/// Near pairs come from an all-pairs join, whose cost grows quickly with the radius (about
/// n²/2 popcounts at 16 bits): keep corpora for labelling to tens of thousands of records.
///
/// # Errors
/// Index errors from the join (more than 2^32 - 1 fingerprints).
pub fn sample_pairs(
    fingerprints: &[u128],
    max_distance: u32,
    sample: usize,
    seed: u64,
) -> Result<Vec<SampledPair>> {
    let n = fingerprints.len() as u64;
    let low: Vec<u64> = fingerprints.iter().map(|&f| f as u64).collect();
    let join_radius = max_distance.min(64);
    let mut buckets: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); max_distance as usize + 1];
    if n >= 2 {
        for p in self_join(&low, join_radius)? {
            let d = (fingerprints[p.a as usize] ^ fingerprints[p.b as usize]).count_ones();
            if d <= max_distance {
                buckets[d as usize].push((p.a, p.b, d));
            }
        }
    }
    let near: u64 = buckets.iter().map(|b| b.len() as u64).sum();
    let far_population = (n * n.saturating_sub(1) / 2).saturating_sub(near);
    let populations: Vec<u64> = buckets
        .iter()
        .map(|b| b.len() as u64)
        .chain([far_population])
        .collect();
    // Round-robin quotas: each non-empty bucket gets one more until the sample is spent.
    let mut quotas = vec![0u64; populations.len()];
    let mut left = sample as u64;
    while left > 0 {
        let mut gave = false;
        for (q, &pop) in quotas.iter_mut().zip(&populations) {
            if left > 0 && *q < pop {
                *q += 1;
                left -= 1;
                gave = true;
            }
        }
        if !gave {
            break;
        }
    }
    let mut out = Vec::new();
    for (d, bucket) in buckets.iter_mut().enumerate() {
        let quota = quotas[d] as usize;
        if quota == 0 {
            continue;
        }
        bucket.sort_by_key(|&(a, b, _)| {
            xxh3_64_with_seed(&(u64::from(a) << 32 | u64::from(b)).to_le_bytes(), seed)
        });
        for &(a, b, distance) in &bucket[..quota] {
            out.push(SampledPair {
                a,
                b,
                distance,
                bucket: Some(d as u32),
                weight_numerator: populations[d],
                weight_denominator: quota as u64,
            });
        }
    }
    let far_quota = *quotas.last().expect("the far bucket");
    if far_quota > 0 {
        let far = sample_far(fingerprints, max_distance, far_quota, seed);
        let taken = far.len() as u64;
        out.extend(far.into_iter().map(|(a, b, distance)| SampledPair {
            a,
            b,
            distance,
            bucket: None,
            weight_numerator: far_population,
            weight_denominator: taken,
        }));
    }
    out.sort_by_key(|p| (p.distance, p.a, p.b));
    Ok(out)
}

/// Up to `quota` distinct pairs further than `max_distance` apart: by enumeration when the
/// corpus is small, by seeded rejection sampling otherwise.
fn sample_far(
    fingerprints: &[u128],
    max_distance: u32,
    quota: u64,
    seed: u64,
) -> Vec<(u32, u32, u32)> {
    let n = fingerprints.len();
    let dist = |a: usize, b: usize| (fingerprints[a] ^ fingerprints[b]).count_ones();
    if n <= 2048 {
        let mut all: Vec<(u32, u32, u32)> = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                let d = dist(a, b);
                if d > max_distance {
                    all.push((a as u32, b as u32, d));
                }
            }
        }
        all.sort_by_key(|&(a, b, _)| {
            xxh3_64_with_seed(&(u64::from(a) << 32 | u64::from(b)).to_le_bytes(), seed)
        });
        all.truncate(quota as usize);
        return all;
    }
    let mut rng = SplitMix(seed ^ 0x6c61_6265_6c5f_6661);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut attempts = 0u64;
    while (out.len() as u64) < quota && attempts < quota * 1000 {
        attempts += 1;
        let a = rng.below(n as u64) as usize;
        let b = rng.below(n as u64) as usize;
        let (a, b) = (a.min(b), a.max(b));
        if a == b || !seen.insert((a, b)) {
            continue;
        }
        let d = dist(a, b);
        if d > max_distance {
            out.push((a as u32, b as u32, d));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::PermutedLayout;

    fn pair(distance: u32, jaccard: f64, duplicate: bool) -> LabelledPair {
        LabelledPair {
            scores: Scores { distance, jaccard },
            duplicate,
            weight: 1.0,
        }
    }

    /// A small labelled set: duplicates spread to 10 bits, one far-but-similar duplicate,
    /// near non-duplicates with low Jaccard (shared template), far unrelated pairs.
    fn fixture() -> Vec<LabelledPair> {
        vec![
            pair(0, 1.0, true),
            pair(2, 0.95, true),
            pair(4, 0.90, true),
            pair(7, 0.86, true),
            pair(10, 0.82, true),
            pair(20, 0.81, true),
            pair(3, 0.55, false),
            pair(6, 0.70, false),
            pair(9, 0.30, false),
            pair(25, 0.05, false),
            pair(31, 0.01, false),
        ]
    }

    macro_rules! rule_cases {
        ($($name:ident: ($k:expr, $j:expr) => ($p:expr, $r:expr);)*) => {$(
            #[test]
            fn $name() {
                let cell = score_rule(&fixture(), $k, $j);
                assert!((cell.precision - $p).abs() < 1e-9, "precision {}", cell.precision);
                assert!((cell.recall - $r).abs() < 1e-9, "recall {}", cell.recall);
            }
        )*};
    }

    rule_cases! {
        radius_zero_finds_identical_only: (0, 0.5) => (1.0, 1.0 / 6.0);
        loose_jaccard_admits_template_pairs: (10, 0.5) => (5.0 / 7.0, 5.0 / 6.0);
        seed_default_k3_misses_edits: (3, 0.8) => (1.0, 2.0 / 6.0);
        measured_default_k12: (12, 0.8) => (1.0, 5.0 / 6.0);
        nothing_accepted_is_vacuously_precise: (16, 1.01) => (1.0, 0.0);
    }

    #[test]
    fn grid_has_every_cell_in_order() {
        let grid = evaluate(&fixture(), &GridSpec::default()).expect("grid");
        assert_eq!(grid.spec().min_jaccards().len(), 26);
        assert_eq!(grid.spec().min_jaccards()[15], 0.8);
        assert_eq!(grid.cells().len(), 17 * 26);
        let j = grid.jaccard_index(0.8).expect("0.8 on the grid");
        assert_eq!(*grid.cell(12, j), score_rule(&fixture(), 12, 0.8));
        assert_eq!(grid.by_distance(j).len(), 17);
        assert_eq!(grid.by_jaccard(4).len(), 26);
        assert_eq!(grid.duplicates(), 6.0);
    }

    #[test]
    fn recommendation_is_the_smallest_radius_with_the_best_recall() {
        let grid = evaluate(&fixture(), &GridSpec::default()).expect("grid");
        let rec = grid.recommend(0.99);
        assert!(rec.meets_min_precision);
        assert_eq!(rec.cell.max_distance, 10);
        assert_eq!(rec.cell.recall, 5.0 / 6.0);
        assert_eq!(rec.cell.precision, 1.0);
        // Tied thresholds run from 0.72 (above the 0.70 template pair) to 0.82: the middle.
        assert!(
            (0.72..=0.82).contains(&rec.cell.min_jaccard),
            "{}",
            rec.cell.min_jaccard
        );
        assert_eq!(rec.cell.min_jaccard, 0.76);
    }

    #[test]
    fn unreachable_precision_falls_back_to_best_f1() {
        let pairs = vec![pair(1, 0.9, true), pair(1, 0.9, false)];
        let grid = evaluate(&pairs, &GridSpec::default()).expect("grid");
        let rec = grid.recommend(0.99);
        assert!(!rec.meets_min_precision);
        assert_eq!(rec.cell.recall, 1.0);
        assert_eq!(rec.cell.max_distance, 1);
    }

    #[test]
    fn weights_scale_counts() {
        let mut pairs = fixture();
        pairs[6].weight = 10.0; // the near template pair stands for ten
        let cell = score_rule(&pairs, 10, 0.5);
        assert_eq!(cell.false_positives, 11.0);
        assert!((cell.precision - 5.0 / 16.0).abs() < 1e-12);
    }

    #[test]
    fn bad_sets_are_refused() {
        assert!(evaluate(&[], &GridSpec::default()).is_err());
        assert!(evaluate(&[pair(1, 0.9, true)], &GridSpec::default()).is_err());
        let mut p = fixture();
        p[0].weight = 0.0;
        assert!(evaluate(&p, &GridSpec::default()).is_err());
        assert!(GridSpec::new(16, 1.5, 0.02).is_err());
        assert!(GridSpec::new(16, 0.5, 0.0).is_err());
        assert_eq!(
            GridSpec::new(4, 0.9, 0.05).expect("spec").min_jaccards(),
            &[0.9, 0.95, 1.0]
        );
    }

    #[test]
    fn inverse_question_picks_the_radius_for_the_recall() {
        let scored: Vec<(Scores, f64)> = fixture().iter().map(|p| (p.scores, 1.0)).collect();
        // Jaccard >= 0.8: distances 0, 2, 4, 7, 10, 20.
        let answer = radius_for(&scored, 0.8, 0.8, 1_000_000).expect("answer");
        assert_eq!(answer.similar_pairs, 6);
        assert_eq!(answer.max_distance, 10);
        assert!((answer.recall - 5.0 / 6.0).abs() < 1e-12);
        assert_eq!(answer.recall_by_distance.len(), 11);
        assert!(answer.plan.max_supported_distance >= 10);
        let all = radius_for(&scored, 0.8, 1.0, 1000).expect("answer");
        assert_eq!(all.max_distance, 20);
        assert!(radius_for(&scored, 1.0, 0.5, 10).is_ok());
        assert!(radius_for(
            &[(
                Scores {
                    distance: 1,
                    jaccard: 0.1
                },
                1.0
            )],
            0.8,
            0.9,
            10
        )
        .is_err());
        assert!(radius_for(&scored, 0.8, 1.5, 10).is_err());
    }

    #[test]
    fn shingle_texts_hash_like_the_fingerprint() {
        let text = "The Quick brown fox — jumps over the lazy dog; the quick brown fox naps. Ünïcödé 東京タワー";
        for hash in [HashAlgo::Xxh3, HashAlgo::Blake2b] {
            for width in [1, 3, 4, 40] {
                let hasher = SimHasher::builder()
                    .hash(hash)
                    .shingle_width(width.min(16))
                    .build()
                    .expect("hasher");
                let mut mine: Vec<u64> = shingle_texts(&hasher, text).iter().map(|s| s.0).collect();
                mine.sort_unstable();
                mine.dedup();
                assert_eq!(mine, hasher.shingle_set(text), "{hash:?} w{width}");
            }
        }
    }

    #[test]
    fn diff_shows_the_edit_and_the_boilerplate() {
        let hasher = SimHasher::builder()
            .shingle_width(2)
            .build()
            .expect("hasher");
        let a = "home news sport the cat sat on the mat";
        let b = "home news sport the cat sat on a hat";
        let nav = Boilerplate::from_hashes(hasher.shingle_set("home news sport"));
        let diff = shingle_diff(&hasher, a, b, Some(&nav));
        assert_eq!(diff.boilerplate_a, ["home news", "news sport"]);
        assert_eq!(diff.only_a, ["on the", "the mat"]);
        assert_eq!(diff.only_b, ["on a", "a hat"]);
        assert_eq!(diff.passages_a, ["on the mat"]);
        assert_eq!(diff.passages_b, ["on a hat"]);
        // "sport the", "the cat", "cat sat", "sat on"
        assert_eq!(diff.shared, 4);
    }

    #[test]
    fn decisions_follow_the_pipeline_order() {
        let hasher = SimHasher::builder().build().expect("hasher");
        let long: String = (0..300u64)
            .map(|i| format!("w{} ", i * 7919 % 1009))
            .collect();
        let edited = long
            .replacen("w7919 ", "changed ", 1)
            .replacen("w0 ", "w1 ", 1);
        let fact = |t: &str| RecordFacts::of_text(&hasher, t, None).expect("facts");
        // A short-text rule under 50 words (the default has none).
        let rule = Rule {
            min_words: 50,
            ..Rule::default()
        };
        assert_eq!(
            decide(&rule, &fact(&long), &fact(&long.to_uppercase())),
            Verdict::Exact
        );
        assert!(decide(&rule, &fact(&long), &fact(&edited)).is_duplicate());
        assert!(matches!(
            decide(
                &rule,
                &fact("a short text here"),
                &fact("a short text there")
            ),
            Verdict::TooShort { words: 4, .. }
        ));
        let unrelated = "quarterly earnings rose on strong demand ".repeat(20);
        assert!(!decide(&rule, &fact(&long), &fact(&unrelated)).is_duplicate());
        let strict = Rule {
            min_jaccard: 0.999,
            ..Rule::default()
        };
        assert!(matches!(
            decide(&strict, &fact(&long), &fact(&edited)),
            Verdict::TooDissimilar { .. } | Verdict::TooFar { .. }
        ));
    }

    #[test]
    fn tables_meet_exactly_when_the_index_would_find_the_pair() {
        let a = 0x0123_4567_89ab_cdefu64;
        let b = a ^ 0b101 ^ (1 << 40); // 3 bits: low band and one high
        let bands = band_matches(4, a, b);
        assert_eq!(bands.len(), 4);
        assert_eq!(
            bands.iter().map(|t| t.matched).collect::<Vec<_>>(),
            [false, true, false, true]
        );
        assert_eq!(bands[0].bit_ranges, [(0, 16)]);
        assert_eq!(bands[0].differing_bits, 2);
        let layout = LayoutKind::Permuted(PermutedLayout::new(3, 5).expect("layout"));
        let tables = table_matches(&layout, 3, a, b).expect("tables");
        assert_eq!(tables.len(), 10);
        assert!(tables.iter().any(|t| t.matched));
        // Six radius units over two substrings: each probed within 2 bits.
        let c = a ^ 0b111 ^ (1 << 40);
        let mih = table_matches(&LayoutKind::Mih { substrings: 2 }, 5, a, c).expect("mih");
        assert_eq!(mih.len(), 2);
        assert!(mih.iter().all(|t| t.probe_radius == Some(2)));
        assert!(mih[1].matched && !mih[0].matched);
        assert!(table_matches(&LayoutKind::Linear, 3, a, b)
            .expect("linear")
            .is_empty());
    }

    #[test]
    fn sampling_spreads_over_buckets_with_weights() {
        let mut fps: Vec<u128> = Vec::new();
        for i in 0..40u128 {
            let base = (i * 0x9e37_79b9_7f4a_7c15) & u128::from(u64::MAX);
            fps.push(base);
            fps.push(base ^ (1 << (i % 60)) ^ (1 << ((i + 7) % 60))); // 2 bits away
        }
        let pairs = sample_pairs(&fps, 4, 20, 7).expect("sample");
        assert_eq!(pairs.len(), 20);
        let near: Vec<&SampledPair> = pairs.iter().filter(|p| p.bucket == Some(2)).collect();
        assert!(!near.is_empty());
        assert!(pairs.iter().any(|p| p.bucket.is_none()));
        let total = (80 * 79 / 2) as f64;
        // The weights of a full bucket census add up to the corpus's pairs.
        let all = sample_pairs(&fps, 4, 100_000, 7).expect("census");
        let weight: f64 = all.iter().map(SampledPair::weight).sum();
        assert!((weight - total).abs() < 1e-6, "{weight}");
        assert_eq!(all.len(), 80 * 79 / 2);
        assert_eq!(sample_pairs(&fps, 4, 20, 7).expect("again"), pairs);
        assert!(pairs.windows(2).all(|w| w[0].distance <= w[1].distance));
    }
}
