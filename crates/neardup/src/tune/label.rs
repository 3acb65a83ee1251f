//! Label sampling: pairs spread over distance buckets, each weighted by the corpus pairs it
//! stands for.

use std::collections::HashSet;

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::index::self_join;
use crate::Result;

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
