//! The (k, J) grid: precision, recall and F1 of every `(max_distance, min_jaccard)` rule
//! over labelled pairs.

use serde::Serialize;

use super::pairs::LabelledPair;
use super::{DEFAULT_GRID_JACCARD_STEP, DEFAULT_GRID_MAX_DISTANCE, DEFAULT_GRID_MIN_JACCARD};
use crate::{Error, Result};

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
///     LabelledPair { scores: Scores::new(3, 0.9), duplicate: true, weight: 1.0 },
///     LabelledPair { scores: Scores::new(3, 0.6), duplicate: false, weight: 1.0 },
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
}
