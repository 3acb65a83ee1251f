//! Exact Jaccard ground truth: the truth pairs, by brute force.

use neardup::verify::{intersection_len, shingle_ids};
use rayon::prelude::*;

#[derive(Clone, Copy)]
pub(crate) struct TruthPair {
    pub(crate) a: u32,
    pub(crate) b: u32,
    pub(crate) j: f64,
    pub(crate) d: u32,
}

pub(crate) fn key(a: u32, b: u32) -> (u32, u32) {
    if a < b {
        (a, b)
    } else {
        (b, a)
    }
}

pub(crate) fn jac(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let i = intersection_len(a, b);
    i as f64 / (a.len() + b.len() - i) as f64
}

pub(crate) fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Every pair with exact Jaccard >= `min` over `sets` (sorted), by brute force, with its
/// Jaccard. J <= min/max of the set sizes, so pairs whose sizes differ by more than that
/// cannot reach `min` and are skipped exactly.
pub(crate) fn pairs_at_least(sets: &[Vec<u64>], min: f64) -> Vec<((u32, u32), f64)> {
    let n = sets.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| (sets[i as usize].len(), i));
    (0..n)
        .into_par_iter()
        .flat_map_iter(|x| {
            let a = order[x] as usize;
            let la = sets[a].len();
            let mut v = Vec::new();
            for &b in &order[x + 1..] {
                let lb = sets[b as usize].len();
                if (la as f64) < min * lb as f64 {
                    break;
                }
                let inter = intersection_len(&sets[a], &sets[b as usize]);
                let j = inter as f64 / (la + lb - inter).max(1) as f64;
                if j >= min {
                    v.push((key(a as u32, b), j));
                }
            }
            v
        })
        .collect()
}

/// Jaccard as the pipeline verifies it: on the upper 32 bits of each shingle hash.
pub(crate) fn jac32(a: &[u64], b: &[u64]) -> f64 {
    let (a, b) = (shingle_ids(a), shingle_ids(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let i = intersection_len(&a, &b);
    i as f64 / (a.len() + b.len() - i) as f64
}
