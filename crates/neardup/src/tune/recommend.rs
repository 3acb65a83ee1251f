//! Recommendations: the rule to use from a grid, and the inverse question (which radius and
//! layout reach a recall at a Jaccard target).

use serde::Serialize;

use super::grid::{Cell, Grid};
use crate::index::plan::{choose_layout, LayoutPlan, PlanRequest};
use crate::verify::Scores;
use crate::{Error, Result};

/// Two scores are the same when they differ by less than this (weighted sums of the same
/// pairs in the same order are bitwise equal; this only absorbs rounding of user weights).
const TIE: f64 = 1e-12;

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
    /// The recommended rule: among cells with precision at least `min_precision`, the
    /// highest recall; ties go to the higher F1, then the smaller radius (cheaper queries),
    /// then the middle of the tied Jaccard thresholds (the widest margin on both sides).
    /// When no cell reaches the floor, the best F1 with the same tie-breaks, flagged.
    pub fn recommend(&self, min_precision: f64) -> Recommendation {
        let qualifying: Vec<&Cell> = self
            .cells()
            .iter()
            .filter(|c| c.precision >= min_precision - TIE && c.true_positives > 0.0)
            .collect();
        let meets = !qualifying.is_empty();
        let pool: Vec<&Cell> = if meets {
            qualifying
        } else {
            self.cells().iter().collect()
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
/// let pairs = [(Scores::new(3, 0.9), 1.0), (Scores::new(9, 0.85), 1.0)];
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
