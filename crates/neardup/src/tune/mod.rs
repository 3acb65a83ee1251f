//! Thresholds from evidence: labelled pairs → precision, recall and F1 per (max_distance,
//! min_jaccard), the recommended pair and the index layout it needs, the inverse question
//! (which radius reaches a recall at a Jaccard target), stratified pair sampling for
//! labelling, the facts behind one pair's decision, and the [`review`] queue people label.
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
//! [`Rule::accepts`]: crate::pipeline::Rule::accepts
//!
//! ```
//! use neardup::tune::{evaluate, GridSpec, LabelledPair};
//! use neardup::verify::Scores;
//!
//! let pair = |distance, jaccard, duplicate| LabelledPair {
//!     scores: Scores::new(distance, jaccard),
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

mod diff;
mod explain;
mod grid;
mod label;
mod pairs;
mod recommend;
pub mod review;

pub use diff::{shingle_diff, shingle_texts, ShingleDiff};
pub use explain::{band_matches, decide, table_matches, TableMatch, Verdict};
pub use grid::{evaluate, score_rule, Cell, Grid, GridSpec};
pub use label::{sample_pairs, SampledPair};
pub use pairs::{LabelledPair, RecordFacts};
pub use recommend::{layout_for, radius_for, RadiusAnswer, Recommendation};

/// The largest radius of the default grid, in bits.
pub const DEFAULT_GRID_MAX_DISTANCE: u32 = 16;
/// The lowest Jaccard threshold of the default grid.
pub const DEFAULT_GRID_MIN_JACCARD: f64 = 0.5;
/// The Jaccard step of the default grid.
pub const DEFAULT_GRID_JACCARD_STEP: f64 = 0.02;
/// The default precision floor of [`Grid::recommend`].
pub const DEFAULT_MIN_PRECISION: f64 = 0.99;

#[cfg(test)]
mod tests;
