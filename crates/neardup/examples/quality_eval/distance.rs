//! The Hamming distance distribution of the truth pairs: the evidence for `max_distance`.

use serde_json::{json, Value};

use crate::score::Ctx;
use crate::truth::{percentile, TruthPair};

/// The distance figures `results.json` keeps.
pub(crate) struct Distance {
    /// p50, p90, p95, p99 and max of the pairs with J >= 0.8.
    pub(crate) pct: Vec<(f64, u32)>,
    /// The recall each radius allows.
    pub(crate) within: Vec<Value>,
    /// Per Jaccard band.
    pub(crate) bands: Vec<Value>,
}

/// Prints the distance distribution of the truth pairs `found` (and of the near misses).
pub(crate) fn report(ctx: &Ctx, found: &[TruthPair]) -> Distance {
    // The distance distribution of truth pairs: the evidence for max_distance.
    let mut dist: Vec<u32> = found.iter().filter(|t| t.j >= 0.8).map(|t| t.d).collect();
    dist.sort_unstable();
    let pct: Vec<(f64, u32)> = [50.0, 90.0, 95.0, 99.0, 100.0]
        .iter()
        .map(|&p| (p, percentile(&dist, p)))
        .collect();
    println!();
    println!(
        "Hamming distance (default 64-bit fingerprints) of the {} pairs with J >= 0.8:",
        dist.len()
    );
    println!(
        "  p50 {}  p90 {}  p95 {}  p99 {}  max {}",
        pct[0].1, pct[1].1, pct[2].1, pct[3].1, pct[4].1
    );
    let ks = [3u32, 6, 8, 10, 12, 14, 16];
    let mut within = Vec::new();
    print!("  recall a radius allows:");
    for &k in &ks {
        let r = dist.iter().filter(|&&d| d <= k).count() as f64 / dist.len().max(1) as f64;
        within.push(json!({"k": k, "recall": r}));
        print!("  k={k}: {:.4}", r);
    }
    println!();
    let long: Vec<u32> = found
        .iter()
        .filter(|t| {
            t.j >= 0.8
                && ctx.tokens[t.a as usize] >= neardup::pipeline::DEFAULT_MIN_WORDS
                && ctx.tokens[t.b as usize] >= neardup::pipeline::DEFAULT_MIN_WORDS
        })
        .map(|t| t.d)
        .collect();
    print!(
        "  (pairs of documents with >= 50 words: {}; within k:",
        long.len()
    );
    for &k in &ks {
        print!(
            " {k}: {:.4}",
            long.iter().filter(|&&d| d <= k).count() as f64 / long.len().max(1) as f64
        );
    }
    println!(")");
    println!("  by Jaccard band:      pairs    p50   p95   max   within 3   within 12");
    let bands = [
        (0.8, 0.85),
        (0.85, 0.9),
        (0.9, 0.95),
        (0.95, 1.0),
        (1.0, 1.01),
    ];
    let mut band_json = Vec::new();
    for (lo, hi) in bands {
        let mut d: Vec<u32> = found
            .iter()
            .filter(|t| t.j >= lo && t.j < hi)
            .map(|t| t.d)
            .collect();
        d.sort_unstable();
        let w = |k: u32| d.iter().filter(|&&x| x <= k).count() as f64 / d.len().max(1) as f64;
        let label = if lo >= 1.0 {
            "J = 1".to_owned()
        } else {
            format!("[{lo:.2},{hi:.2})")
        };
        println!(
            "  {label:<18} {:>8} {:>6} {:>5} {:>5} {:>10.4} {:>11.4}",
            d.len(),
            percentile(&d, 50.0),
            percentile(&d, 95.0),
            percentile(&d, 100.0),
            w(3),
            w(12)
        );
        band_json.push(json!({"band": label, "pairs": d.len(), "p50": percentile(&d, 50.0),
            "p95": percentile(&d, 95.0), "max": percentile(&d, 100.0), "within3": w(3), "within12": w(12)}));
    }
    // And the other side: how close do unrelated pairs come?
    let mut near_miss: Vec<u32> = found
        .iter()
        .filter(|t| t.j < 0.8 && t.j >= 0.7)
        .map(|t| t.d)
        .collect();
    near_miss.sort_unstable();
    println!(
        "  pairs with 0.7 <= J < 0.8: {} (distance p50 {}, p5 {})",
        near_miss.len(),
        percentile(&near_miss, 50.0),
        percentile(&near_miss, 5.0)
    );
    Distance {
        pct,
        within,
        bands: band_json,
    }
}
