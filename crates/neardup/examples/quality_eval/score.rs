//! Scoring predicted pairs against the ground truth.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;
use serde_json::{json, Value};

use crate::systems::RunResult;
use crate::truth::{jac, key, TruthPair};

pub(crate) struct Metrics {
    predicted: usize,
    tp: usize,
    truth: usize,
}

impl Metrics {
    pub(crate) fn p(&self) -> f64 {
        if self.predicted == 0 {
            1.0
        } else {
            self.tp as f64 / self.predicted as f64
        }
    }
    pub(crate) fn r(&self) -> f64 {
        if self.truth == 0 {
            1.0
        } else {
            self.tp as f64 / self.truth as f64
        }
    }
    pub(crate) fn f1(&self) -> f64 {
        let (p, r) = (self.p(), self.r());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

pub(crate) fn pairs_of_clusters(clusters: &[Vec<u32>]) -> HashSet<(u32, u32)> {
    let mut s = HashSet::new();
    for c in clusters {
        for (x, &a) in c.iter().enumerate() {
            for &b in &c[x + 1..] {
                s.insert(key(a, b));
            }
        }
    }
    s
}

pub(crate) struct Ctx {
    pub(crate) ids: Vec<String>,
    pub(crate) sets: Vec<Vec<u64>>,
    pub(crate) fps: Vec<u64>,
    pub(crate) tokens: Vec<usize>,
    pub(crate) truth: HashMap<(u32, u32), TruthPair>,
    pub(crate) truth08: HashSet<(u32, u32)>,
}

impl Ctx {
    /// The position of each id.
    pub(crate) fn index(&self) -> HashMap<&str, u32> {
        self.ids
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i as u32))
            .collect()
    }

    pub(crate) fn exact_j(&self, p: (u32, u32)) -> f64 {
        self.truth.get(&p).map_or_else(
            || jac(&self.sets[p.0 as usize], &self.sets[p.1 as usize]),
            |t| t.j,
        )
    }

    pub(crate) fn score(&self, predicted: &HashSet<(u32, u32)>) -> Metrics {
        Metrics {
            predicted: predicted.len(),
            tp: predicted
                .iter()
                .filter(|p| self.truth08.contains(p))
                .count(),
            truth: self.truth08.len(),
        }
    }

    /// J histogram of false-positive pairs.
    pub(crate) fn fp_bands(&self, predicted: &HashSet<(u32, u32)>) -> Value {
        let mut bands = [0usize; 5];
        let mut fps: Vec<(u32, u32)> = predicted
            .iter()
            .filter(|p| !self.truth08.contains(p))
            .copied()
            .collect();
        fps.sort_unstable();
        let js: Vec<f64> = fps.par_iter().map(|&p| self.exact_j(p)).collect();
        for j in js {
            let b = if j >= 0.75 {
                0
            } else if j >= 0.7 {
                1
            } else if j >= 0.6 {
                2
            } else if j >= 0.5 {
                3
            } else {
                4
            };
            bands[b] += 1;
        }
        json!({"[0.75,0.8)": bands[0], "[0.7,0.75)": bands[1], "[0.6,0.7)": bands[2],
               "[0.5,0.6)": bands[3], "<0.5": bands[4]})
    }

    /// Prints the P/R/F1 row of every run; returns their `results.json` entries.
    pub(crate) fn table(&self, runs: &[RunResult]) -> Vec<Value> {
        println!();
        println!(
            "{:<46} {:>9} {:>9} {:>7} {:>7} {:>7} {:>8} {:>8}",
            "system (pairs in one final cluster)",
            "predicted",
            "true",
            "P",
            "R",
            "F1",
            "edge P",
            "seconds"
        );
        let mut systems = Vec::new();
        for r in runs {
            let predicted = pairs_of_clusters(&r.clusters);
            let m = self.score(&predicted);
            let edge_ok = r.edges.iter().filter(|&&e| self.exact_j(e) >= 0.8).count();
            let edge_p = if r.edges.is_empty() {
                f64::NAN
            } else {
                edge_ok as f64 / r.edges.len() as f64
            };
            println!(
                "{:<46} {:>9} {:>9} {:>7.4} {:>7.4} {:>7.4} {:>8} {:>8.2}",
                r.name,
                m.predicted,
                m.tp,
                m.p(),
                m.r(),
                m.f1(),
                if edge_p.is_nan() {
                    "-".to_owned()
                } else {
                    format!("{edge_p:.4}")
                },
                r.seconds
            );
            let largest = r.clusters.iter().map(Vec::len).max().unwrap_or(0);
            systems.push(json!({
                "name": r.name, "precision": m.p(), "recall": m.r(), "f1": m.f1(),
                "predicted_pairs": m.predicted, "true_positives": m.tp, "truth_pairs": m.truth,
                "edges": r.edges.len(), "edge_precision": if edge_p.is_nan() { Value::Null } else { json!(edge_p) },
                "clusters": r.clusters.len(), "largest_cluster": largest,
                "fp_jaccard_bands": self.fp_bands(&predicted),
                "seconds": r.seconds,
                "rule": r.rule.map(|x| json!({"max_distance": x.max_distance, "min_jaccard": x.min_jaccard, "min_words": x.min_words})),
            }));
        }
        systems
    }
}
