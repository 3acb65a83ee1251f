//! All-pairs join: every pair of a batch of fingerprints within `max_distance`, at once.
//!
//! Sort-based, per Manku et al.'s batch mode: for each table of a permuted layout the
//! batch is sorted by the table's prefix (a counting sort, see `table/sorted.rs`), and every
//! pair inside a run of equal prefixes is verified by popcount. A near pair shares the
//! whole prefix of at least one table, so it is found; it is reported only by the *first*
//! table whose prefix it shares (a later table checks the pair's XOR against every
//! earlier prefix mask), so each pair appears exactly once with no global hash set. Tables
//! are processed in parallel with rayon. Why no crate: it reuses the index's own tables.

use rayon::prelude::*;

use super::linear::scan;
use super::plan::{permuted_layouts, PermutedLayout};
use super::table::SortedTable;
use super::IndexError;

/// Cost of sorting one fingerprint into one table (counting sort, two passes).
const SORT_NS: f64 = 12.0;
/// Cost of verifying one pair inside a run.
const PAIR_NS: f64 = 0.4;

/// One near pair of a join: positions `a < b` in the input, and their distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NearPair {
    /// The smaller position.
    pub a: u32,
    /// The larger position.
    pub b: u32,
    /// Exact Hamming distance.
    pub distance: u32,
}

/// The permuted layout with the lowest modelled join cost for `n` fingerprints at `k`:
/// `tables * n` sorted entries plus the expected `tables * n^2 / 2^(p+1)` pairs in runs.
pub fn join_layout(n: u64, max_distance: u32) -> Option<PermutedLayout> {
    let nf = n as f64;
    permuted_layouts(max_distance)
        .into_iter()
        .map(|layout| {
            let sort = layout.tables() as f64 * nf * SORT_NS;
            let pairs: f64 = layout
                .prefix_bits()
                .iter()
                .map(|&p| nf * nf / 2f64.powi(p as i32 + 1))
                .sum();
            (sort + pairs * PAIR_NS, layout)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, layout)| layout)
}

/// Every pair `(a, b)`, `a < b`, of `fingerprints` within `max_distance` bits, sorted by
/// `(a, b)`; the layout is chosen by [`join_layout`].
///
/// ```
/// let fps = [0u64, 0b11, u64::MAX, 0b1];
/// let pairs = neardup::index::self_join(&fps, 2)?;
/// let found: Vec<(u32, u32, u32)> = pairs.iter().map(|p| (p.a, p.b, p.distance)).collect();
/// assert_eq!(found, vec![(0, 1, 2), (0, 3, 1), (1, 3, 1)]);
/// Ok::<(), neardup::Error>(())
/// ```
///
/// # Errors
/// [`IndexError::Full`] for more than 2^32 - 1 fingerprints,
/// [`IndexError::InvalidLayout`] when no layout answers `max_distance`.
pub fn self_join(fingerprints: &[u64], max_distance: u32) -> Result<Vec<NearPair>, IndexError> {
    let layout = join_layout(fingerprints.len() as u64, max_distance).ok_or_else(|| {
        IndexError::InvalidLayout(format!(
            "no permuted layout answers max_distance {max_distance}"
        ))
    })?;
    self_join_with(fingerprints, max_distance, layout)
}

/// Like [`self_join`] with a given layout.
///
/// # Errors
/// [`IndexError::MaxDistanceUnsupported`] when the layout answers less than
/// `max_distance`, [`IndexError::Full`] for more than 2^32 - 1 fingerprints.
pub fn self_join_with(
    fingerprints: &[u64],
    max_distance: u32,
    layout: PermutedLayout,
) -> Result<Vec<NearPair>, IndexError> {
    if max_distance > layout.max_distance() {
        return Err(IndexError::MaxDistanceUnsupported {
            max_distance,
            blocks: layout.max_distance() + 1,
        });
    }
    if fingerprints.len() >= u32::MAX as usize {
        return Err(IndexError::Full {
            rows: fingerprints.len(),
        });
    }
    let keys = layout.keys()?;
    let masks: Vec<u64> = keys.iter().map(|k| k.mask()).collect();
    let per_table: Vec<Vec<NearPair>> = keys
        .par_iter()
        .enumerate()
        .map(|(t, &key)| {
            let earlier = &masks[..t];
            let table = SortedTable::build(key, fingerprints);
            let mut pairs = Vec::new();
            table.for_each_shared_run(|fps, rows| {
                for (i, (&fp, &row)) in fps.iter().zip(rows).enumerate() {
                    let rest = &fps[i + 1..];
                    let mut hit = |j: usize, distance: u32| {
                        let diff = fp ^ rest[j];
                        // Found by an earlier table already: report there only.
                        if earlier.iter().any(|&m| diff & m == 0) {
                            return;
                        }
                        let other = rows[i + 1 + j];
                        pairs.push(NearPair {
                            a: row.min(other),
                            b: row.max(other),
                            distance,
                        });
                    };
                    if rest.len() > 32 {
                        scan(rest, fp, max_distance, hit);
                    } else {
                        for (j, &other) in rest.iter().enumerate() {
                            let distance = (fp ^ other).count_ones();
                            if distance <= max_distance {
                                hit(j, distance);
                            }
                        }
                    }
                }
            });
            pairs
        })
        .collect();
    let mut pairs: Vec<NearPair> = per_table.into_iter().flatten().collect();
    pairs.par_sort_unstable();
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(fps: &[u64], k: u32) -> Vec<NearPair> {
        let mut out = Vec::new();
        for a in 0..fps.len() {
            for b in a + 1..fps.len() {
                let distance = (fps[a] ^ fps[b]).count_ones();
                if distance <= k {
                    out.push(NearPair {
                        a: a as u32,
                        b: b as u32,
                        distance,
                    });
                }
            }
        }
        out
    }

    #[test]
    fn join_equals_brute_force_on_clusters() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let centers: Vec<u64> = (0..8).map(|_| next()).collect();
        let fps: Vec<u64> = (0..600)
            .map(|i| {
                let mut fp = centers[i % 8];
                for _ in 0..(next() % 6) {
                    fp ^= 1 << (next() % 64);
                }
                fp
            })
            .collect();
        for k in [0, 1, 3, 5, 8] {
            assert_eq!(self_join(&fps, k).expect("join"), brute(&fps, k), "k = {k}");
        }
    }

    #[test]
    fn radius_beyond_layout_is_refused() {
        let layout = PermutedLayout::new(2, 4).expect("valid");
        assert!(matches!(
            self_join_with(&[1, 2], 3, layout),
            Err(IndexError::MaxDistanceUnsupported { .. })
        ));
    }
}
