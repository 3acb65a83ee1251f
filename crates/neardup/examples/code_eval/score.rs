//! Scoring the pairs of a corpus: the rule "within k bits and Jaccard at least t" over a
//! grid, distance quantiles, and the scored pairs dumped as JSON Lines (`--dump FILE`) for a
//! rule chosen across corpora (`scripts/code_rule.py`).

use std::io::Write;
use std::sync::Arc;

use neardup::hamming;
use neardup::verify::id_jaccard;

pub struct Scores {
    /// (distance, Jaccard) of every true pair.
    pub positives: Vec<(u32, f64)>,
    /// (distance, Jaccard) of the other pairs within 24 bits (farther ones are never
    /// predicted on the grid).
    pub near_negatives: Vec<(u32, f64)>,
}

pub fn score(docs: &[(u64, Arc<[u32]>)], twin: &[usize]) -> Scores {
    let mut positives = Vec::new();
    let mut near_negatives = Vec::new();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            let d = hamming(docs[i].0, docs[j].0);
            let truth = twin[i] == j;
            if !truth && d > 24 {
                continue;
            }
            let jac = id_jaccard(&docs[i].1, &docs[j].1);
            if truth {
                positives.push((d, jac));
            } else {
                near_negatives.push((d, jac));
            }
        }
    }
    Scores {
        positives,
        near_negatives,
    }
}

/// (precision, recall) of the rule "within k bits and Jaccard at least t".
pub fn at(s: &Scores, k: u32, t: f64) -> (f64, f64) {
    let hit = |&(d, j): &(u32, f64)| d <= k && j >= t;
    let tp = s.positives.iter().filter(|p| hit(p)).count() as f64;
    let fp = s.near_negatives.iter().filter(|p| hit(p)).count() as f64;
    let precision = if tp + fp == 0.0 { 1.0 } else { tp / (tp + fp) };
    (precision, tp / s.positives.len().max(1) as f64)
}

/// The best recall at precision >= 0.99 over the grid, with its (k, t).
pub fn best(s: &Scores) -> (f64, f64, u32, f64) {
    let mut top = (0.0, 1.0, 0, 1.0);
    for k in (0..=24).step_by(2) {
        for t in (30..=95).step_by(5).map(|t| f64::from(t) / 100.0) {
            let (p, r) = at(s, k, t);
            if p >= 0.99 && r > top.0 {
                top = (r, p, k, t);
            }
        }
    }
    top
}

pub fn quantiles(mut v: Vec<u32>) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_unstable();
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    format!(
        "p50 {} p90 {} p99 {} max {}",
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    )
}

/// Appends one JSON line to `path`: a corpus's scored pairs in one mode and width, each
/// `[distance, jaccard]`, under `labels` (e.g. "positives", "negatives").
pub fn dump(path: &str, corpus: &str, mode: &str, width: usize, labels: &[(&str, &[(u32, f64)])]) {
    let mut line = serde_json::json!({"corpus": corpus, "mode": mode, "width": width});
    for (label, pairs) in labels {
        line[*label] = serde_json::json!(pairs);
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    writeln!(file, "{line}").unwrap_or_else(|e| panic!("{path}: {e}"));
}
