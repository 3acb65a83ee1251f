//! People check the decisions: a queue of pairs to judge, drawn from a store's merge log
//! and rejections in disjoint strata, and what their labels say about precision (seed 000's
//! boundary sample).
//!
//! The strata do not overlap, so each label stands for its stratum's pairs in proportion:
//! - [`Stratum::Boundary`]: merges whose Jaccard is within the margin of the threshold,
//!   where mistakes are likeliest;
//! - [`Stratum::Random`]: the other merges, sampled uniformly, so precision is estimated
//!   for every merge and not only the borderline ones;
//! - [`Stratum::Rejected`]: candidates that failed verification with a Jaccard within the
//!   margin under the threshold, where missed duplicates are.
//!
//! A pair is shown as `(a, b)`: for a merge, the record it was verified against and the
//! merged record; for a rejection, the stored candidate and the arriving record.

use std::collections::HashMap;

use serde::Serialize;

use crate::store::{Label, Store, Verdict};
use crate::tune::LabelledPair;
use crate::verify::Scores;
use crate::Result;

/// Where a queued pair comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stratum {
    /// A merge near the threshold.
    Boundary,
    /// A rejected candidate just under the threshold.
    Rejected,
    /// A merge away from the threshold, sampled uniformly.
    Random,
}

impl Stratum {
    /// Every stratum, in queue order.
    pub const ALL: [Stratum; 3] = [Stratum::Boundary, Stratum::Rejected, Stratum::Random];

    /// The stable name, as labels store it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stratum::Boundary => "boundary",
            Stratum::Rejected => "rejected",
            Stratum::Random => "random",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(s: &str) -> Option<Stratum> {
        Stratum::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether its pairs were merged (so a label of it speaks to precision).
    pub fn is_merge(self) -> bool {
        self != Stratum::Rejected
    }
}

/// What goes into the queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueSpec {
    /// The Jaccard threshold the decisions were made with.
    pub threshold: f64,
    /// Pairs within this of the threshold are near it.
    pub margin: f64,
    /// At most this many boundary merges, and as many rejected candidates.
    pub sample: usize,
    /// At most this many random merges (0: none).
    pub random: usize,
    /// Seed of the samples: the same store and seed give the same queue.
    pub seed: u64,
}

impl Default for QueueSpec {
    fn default() -> QueueSpec {
        QueueSpec {
            threshold: crate::pipeline::DEFAULT_MIN_JACCARD,
            margin: 0.03,
            sample: 50,
            random: 20,
            seed: 0,
        }
    }
}

/// One pair to judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueuedPair {
    /// The stored record (see the [module docs](self)).
    pub a: String,
    /// The arriving record.
    pub b: String,
    /// Where it comes from.
    pub stratum: Stratum,
    /// Hamming distance and Jaccard similarity.
    pub scores: Scores,
    /// The merge's survivor at the time (merges only).
    pub kept: Option<String>,
    /// When it was decided, RFC 3339 (merges only).
    pub at: Option<String>,
}

/// The queue and the size of each stratum it was drawn from.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Queue {
    /// Boundary merges first (nearest the threshold first), then rejected candidates
    /// (nearest first), then random merges.
    pub pairs: Vec<QueuedPair>,
    /// Pairs in each stratum's population.
    pub populations: HashMap<Stratum, u64>,
}

impl Queue {
    /// The queued pair `(a, b)`.
    pub fn find(&self, a: &str, b: &str) -> Option<&QueuedPair> {
        self.pairs.iter().find(|p| p.a == a && p.b == b)
    }
}

/// Orders by a keyed hash: a stable pseudo-random sample.
fn sample_key(seed: u64, a: &str, b: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(format!("{a}\u{1f}{b}").as_bytes(), seed)
}

/// Draws the review queue from a store's merge log and rejections.
///
/// # Errors
/// Store failures.
pub fn review_queue(store: &dyn Store, spec: &QueueSpec) -> Result<Queue> {
    let near = |j: f64| (j - spec.threshold).abs() <= spec.margin;
    let mut boundary = Vec::new();
    let mut random = Vec::new();
    store.merges(&mut |m| {
        if m.rule != "simhash+jaccard" || m.matched == "<erased>" || m.kept == "<erased>" {
            return;
        }
        let pair = QueuedPair {
            a: m.matched,
            b: m.merged,
            stratum: if near(m.jaccard) {
                Stratum::Boundary
            } else {
                Stratum::Random
            },
            scores: Scores::new(m.distance, m.jaccard),
            kept: Some(m.kept),
            at: Some(m.at),
        };
        match pair.stratum {
            Stratum::Boundary => boundary.push(pair),
            _ => random.push(pair),
        }
    })?;
    let mut rejected = Vec::new();
    let mut seen = std::collections::HashSet::new();
    store.rejections(&mut |r| {
        if r.jaccard < spec.threshold
            && near(r.jaccard)
            && seen.insert((r.candidate.clone(), r.record.clone()))
        {
            rejected.push(QueuedPair {
                a: r.candidate,
                b: r.record,
                stratum: Stratum::Rejected,
                scores: Scores::new(r.distance, r.jaccard),
                kept: None,
                at: None,
            });
        }
    })?;
    let mut populations = HashMap::new();
    let mut pairs = Vec::new();
    for (stratum, mut items, n) in [
        (Stratum::Boundary, boundary, spec.sample),
        (Stratum::Rejected, rejected, spec.sample),
        (Stratum::Random, random, spec.random),
    ] {
        populations.insert(stratum, items.len() as u64);
        items.sort_by_key(|p| sample_key(spec.seed, &p.a, &p.b));
        items.truncate(n);
        if stratum != Stratum::Random {
            // Nearest the threshold first; ties keep the sample's order.
            items.sort_by(|x, y| {
                let dx = (x.scores.jaccard - spec.threshold).abs();
                let dy = (y.scores.jaccard - spec.threshold).abs();
                dx.total_cmp(&dy)
            });
        }
        pairs.extend(items);
    }
    Ok(Queue { pairs, populations })
}

/// A proportion with its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
    /// Labels it rests on (unsure ones left out).
    pub labels: u64,
}

/// The Wilson score interval at 95% for `successes` of `n`; `None` for no trials.
pub fn wilson(successes: u64, n: u64) -> Option<Estimate> {
    if n == 0 {
        return None;
    }
    let (k, n_f) = (successes as f64, n as f64);
    let z = 1.959_963_984_540_054_f64;
    let p = k / n_f;
    let denom = 1.0 + z * z / n_f;
    let centre = (p + z * z / (2.0 * n_f)) / denom;
    let half = z * ((p * (1.0 - p) / n_f) + z * z / (4.0 * n_f * n_f)).sqrt() / denom;
    Some(Estimate {
        value: p,
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
        labels: n,
    })
}

/// What the labels of a queue's strata say.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LabelSummary {
    /// Labels per stratum name (labels of other sources under their own name) and verdict.
    pub counts: std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>,
    /// Precision of each merge stratum: the share of its labelled pairs that are
    /// duplicates (Wilson interval).
    pub precision_by_stratum: std::collections::BTreeMap<String, Estimate>,
    /// Precision of all merges: the strata's precisions weighted by their populations, with
    /// a normal-approximation interval. `None` until both merge strata with pairs have
    /// labels; then [`boundary_only`](Self::boundary_only) says whether it stands for
    /// the boundary alone (no random merges exist).
    pub precision: Option<Estimate>,
    /// Whether `precision` covers only the boundary stratum.
    pub boundary_only: bool,
}

/// Sums up labels against the queue's stratum populations.
pub fn summarize(queue: &Queue, labels: &[Label]) -> LabelSummary {
    let mut summary = LabelSummary::default();
    let mut tally: HashMap<Stratum, (u64, u64)> = HashMap::new();
    for l in labels {
        *summary
            .counts
            .entry(l.source.clone())
            .or_default()
            .entry(l.verdict.as_str().to_owned())
            .or_default() += 1;
        if let (Some(s), Some(dup)) = (Stratum::parse(&l.source), l.verdict.is_duplicate()) {
            let t = tally.entry(s).or_default();
            t.1 += 1;
            if dup {
                t.0 += 1;
            }
        }
    }
    let mut total_pop = 0.0;
    let (mut value, mut variance) = (0.0, 0.0);
    let mut labelled = 0;
    let mut complete = true;
    for s in [Stratum::Boundary, Stratum::Random] {
        let pop = queue.populations.get(&s).copied().unwrap_or(0) as f64;
        let (k, n) = tally.get(&s).copied().unwrap_or((0, 0));
        if let Some(e) = wilson(k, n) {
            summary
                .precision_by_stratum
                .insert(s.as_str().to_owned(), e);
        }
        if pop == 0.0 {
            continue;
        }
        if n == 0 {
            complete = false;
            continue;
        }
        let p = k as f64 / n as f64;
        total_pop += pop;
        value += pop * p;
        // Finite-population correction: a stratum labelled in full has no sampling error.
        let fpc = if pop > 1.0 {
            ((pop - n as f64) / (pop - 1.0)).max(0.0)
        } else {
            0.0
        };
        // Wilson-style floor: never claim zero variance from a sample of agreeing labels.
        let p_var =
            ((k as f64 + 1.0) / (n as f64 + 2.0)) * (1.0 - (k as f64 + 1.0) / (n as f64 + 2.0));
        variance += pop * pop * p_var / n as f64 * fpc;
        labelled += n;
    }
    if complete && total_pop > 0.0 {
        let p = value / total_pop;
        let half = 1.959_963_984_540_054 * variance.sqrt() / total_pop;
        summary.precision = Some(Estimate {
            value: p,
            low: (p - half).max(0.0),
            high: (p + half).min(1.0),
            labels: labelled,
        });
        summary.boundary_only = queue
            .populations
            .get(&Stratum::Random)
            .copied()
            .unwrap_or(0)
            == 0;
    }
    summary
}

/// The labels as the pairs `tune` scores, each weighted by its stratum's population over
/// the labels of that stratum (so the grid estimates the store's pairs, not the sample's
/// mix). Unsure labels are left out; labels of other sources weigh 1.
pub fn labelled_pairs(queue: &Queue, labels: &[Label]) -> Vec<(Label, LabelledPair)> {
    let mut per: HashMap<&str, u64> = HashMap::new();
    for l in labels {
        if l.verdict != Verdict::Unsure {
            *per.entry(l.source.as_str()).or_default() += 1;
        }
    }
    labels
        .iter()
        .filter_map(|l| {
            let duplicate = l.verdict.is_duplicate()?;
            let weight = match Stratum::parse(&l.source) {
                Some(s) => {
                    let pop = queue.populations.get(&s).copied().unwrap_or(0) as f64;
                    let n = per.get(l.source.as_str()).copied().unwrap_or(1) as f64;
                    (pop / n).max(1.0)
                }
                None => 1.0,
            };
            Some((
                l.clone(),
                LabelledPair {
                    scores: Scores::new(l.distance, l.jaccard),
                    duplicate,
                    weight,
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Batch, MemoryStore, MergeLogEntry, Rejection};

    fn merge(matched: &str, merged: &str, jaccard: f64) -> MergeLogEntry {
        MergeLogEntry {
            kept: matched.into(),
            merged: merged.into(),
            merged_fingerprint: "0".into(),
            rule: "simhash+jaccard".into(),
            distance: 4,
            jaccard,
            cosine: None,
            matched: matched.into(),
            source_urls: vec![],
            at: "2026-12-06T10:00:00Z".into(),
        }
    }

    fn store() -> MemoryStore {
        let mut s = MemoryStore::new();
        let mut merges: Vec<MergeLogEntry> = (0..10)
            .map(|i| merge(&format!("k{i}"), &format!("m{i}"), 0.76 + i as f64 * 0.01))
            .collect();
        merges.extend((0..30).map(|i| merge(&format!("k{i}"), &format!("r{i}"), 0.95)));
        let mut exact = merge("x", "y", 1.0);
        exact.rule = "exact".into();
        merges.push(exact);
        let rejections = vec![
            Rejection {
                record: "n1".into(),
                candidate: "o1".into(),
                distance: 9,
                jaccard: 0.78,
                cosine: None,
            },
            Rejection {
                record: "n2".into(),
                candidate: "o2".into(),
                distance: 9,
                jaccard: 0.30,
                cosine: None,
            },
            Rejection {
                record: "n1".into(),
                candidate: "o1".into(),
                distance: 9,
                jaccard: 0.78,
                cosine: None,
            },
        ];
        s.commit(&Batch {
            merges,
            rejections,
            ..Batch::default()
        })
        .unwrap();
        s
    }

    fn label(p: &QueuedPair, verdict: Verdict) -> Label {
        Label {
            a: p.a.clone(),
            b: p.b.clone(),
            verdict,
            source: p.stratum.as_str().into(),
            distance: p.scores.distance,
            jaccard: p.scores.jaccard,
            by: "t".into(),
            at: "2026-12-06T11:00:00Z".into(),
        }
    }

    #[test]
    fn the_queue_holds_disjoint_strata_nearest_the_threshold_first() {
        let spec = QueueSpec {
            threshold: 0.8,
            margin: 0.025,
            sample: 4,
            random: 5,
            seed: 1,
        };
        let q = review_queue(&store(), &spec).unwrap();
        // Boundary: J 0.78..=0.82 are within 0.025 of 0.8: i = 2..=6 (5 merges).
        assert_eq!(q.populations[&Stratum::Boundary], 5);
        assert_eq!(
            q.populations[&Stratum::Random],
            35,
            "5 further from the threshold + 30 far; exact left out"
        );
        assert_eq!(
            q.populations[&Stratum::Rejected],
            1,
            "deduplicated, far ones left out"
        );
        let strata: Vec<Stratum> = q.pairs.iter().map(|p| p.stratum).collect();
        assert_eq!(
            strata.iter().filter(|s| **s == Stratum::Boundary).count(),
            4
        );
        assert_eq!(strata.iter().filter(|s| **s == Stratum::Random).count(), 5);
        assert_eq!(strata[4], Stratum::Rejected);
        let gaps: Vec<f64> = q.pairs[..4]
            .iter()
            .map(|p| (p.scores.jaccard - 0.8).abs())
            .collect();
        assert!(gaps.windows(2).all(|w| w[0] <= w[1]), "{gaps:?}");
        assert_eq!((q.pairs[4].a.as_str(), q.pairs[4].b.as_str()), ("o1", "n1"));
        let first = &q.pairs[0];
        assert_eq!(q.find(&first.a, &first.b), Some(first));
        assert_eq!(q.find(&first.b, &first.a), None, "pairs are ordered");
        assert_eq!(
            review_queue(&store(), &spec).unwrap(),
            q,
            "the same seed, the same queue"
        );
        let other = review_queue(&store(), &QueueSpec { seed: 2, ..spec }).unwrap();
        assert_ne!(
            other.pairs[5..],
            q.pairs[5..],
            "another seed, another random sample"
        );
    }

    #[test]
    fn wilson_intervals_hold_the_estimate_and_narrow_with_labels() {
        assert_eq!(wilson(0, 0), None);
        let e = wilson(9, 10).unwrap();
        assert!((e.value - 0.9).abs() < 1e-12);
        assert!(
            (e.low - 0.5958).abs() < 1e-3 && (e.high - 0.9821).abs() < 1e-3,
            "{e:?}"
        );
        let all = wilson(10, 10).unwrap();
        assert!(
            all.high > 0.9999 && (all.low - 0.7225).abs() < 1e-3,
            "{all:?}"
        );
        assert!(wilson(90, 100).unwrap().low > e.low);
    }

    #[test]
    fn precision_weighs_strata_by_population() {
        let spec = QueueSpec {
            threshold: 0.8,
            margin: 0.025,
            sample: 7,
            random: 35,
            seed: 1,
        };
        let q = review_queue(&store(), &spec).unwrap();
        let boundary: Vec<&QueuedPair> = q
            .pairs
            .iter()
            .filter(|p| p.stratum == Stratum::Boundary)
            .collect();
        let random: Vec<&QueuedPair> = q
            .pairs
            .iter()
            .filter(|p| p.stratum == Stratum::Random)
            .collect();
        // Boundary: half wrong; random: all right. Populations 5 and 35.
        let mut labels: Vec<Label> = boundary[..4]
            .iter()
            .enumerate()
            .map(|(i, p)| {
                label(
                    p,
                    if i % 2 == 0 {
                        Verdict::Duplicate
                    } else {
                        Verdict::NotDuplicate
                    },
                )
            })
            .collect();
        let s = summarize(&q, &labels);
        assert_eq!(
            s.precision, None,
            "random merges exist but none is labelled yet"
        );
        assert_eq!(s.precision_by_stratum["boundary"].value, 0.5);
        labels.extend(random[..5].iter().map(|p| label(p, Verdict::Duplicate)));
        labels.push(label(random[5], Verdict::Unsure));
        let s = summarize(&q, &labels);
        let p = s.precision.unwrap();
        assert!((p.value - (5.0 * 0.5 + 35.0) / 40.0).abs() < 1e-12, "{p:?}");
        assert!(p.low < p.value && p.value < p.high && p.high <= 1.0);
        assert_eq!(p.labels, 9, "unsure left out");
        assert!(!s.boundary_only);
        assert_eq!(s.counts["random"]["unsure"], 1);

        let pairs = labelled_pairs(&q, &labels);
        assert_eq!(pairs.len(), 9);
        let w = |src: &str| {
            pairs
                .iter()
                .find(|(l, _)| l.source == src)
                .unwrap()
                .1
                .weight
        };
        assert!((w("boundary") - 5.0 / 4.0).abs() < 1e-12);
        assert!((w("random") - 35.0 / 5.0).abs() < 1e-12);
    }
}
