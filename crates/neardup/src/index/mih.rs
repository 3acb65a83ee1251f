//! Multi-index hashing (Norouzi, Punjani, Fleet, "Fast Search in Hamming Space with
//! Multi-Index Hashing", CVPR 2012).
//!
//! The 64 bits are cut into `m` contiguous substrings, each indexed in its own table. If
//! two fingerprints are within `k` bits, the differing bits fall into the substrings, and
//! for radii `r_i` with `sum (r_i + 1) > k` at least one substring `i` differs in at most
//! `r_i` bits (otherwise the distance would be at least `sum (r_i + 1)`). So a query probes,
//! in each table `i`, every substring value within `r_i` of its own, and verifies what it
//! finds: exact recall for any `k`, chosen per query. With `m` near `64 / log2 n` a bucket
//! holds about one fingerprint, and radii of `k / m` keep the probe count small even for
//! `k` of 10 to 16, where a pigeonhole layout would need `k + 1` tables of tiny keys.
//!
//! Tables are sorted arrays with a directory indexed by the whole substring (a CSR layout)
//! when the substring is short enough, see `table/mod.rs`; no hash map per bucket.

pub(crate) use super::plan::mih_radii;
use super::plan::{self, band_ranges};
use super::table::{
    ball_size, table_index, table_options, KeySpec, Probe, Radii, TableIndex, TableOptions,
    TableSet,
};
use super::IndexError;

/// Builds a [`MihIndex`].
#[derive(Debug, Clone)]
pub struct MihIndexBuilder {
    substrings: Option<u32>,
    expected_len: u64,
    max_distance: u32,
    options: TableOptions,
}

impl Default for MihIndexBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl MihIndexBuilder {
    /// Substring count chosen for a million fingerprints at radius 10.
    pub fn new() -> Self {
        MihIndexBuilder {
            substrings: None,
            expected_len: 1 << 20,
            max_distance: 10,
            options: TableOptions::default(),
        }
    }

    setters! {
        &mut;
        /// Overrides the automatic choice: this many substrings (1 to 64).
        substrings(substrings: u32) => Some;

        /// The number of fingerprints the substring count is chosen for.
        expected_len(expected_len: u64);

        /// The radius (bits) the substring count is tuned for; every radius stays exact.
        max_distance(max_distance: u32);
    }

    table_options!();

    /// Builds the empty index.
    ///
    /// # Errors
    /// [`IndexError::InvalidLayout`] when the substring count is not in 1..=64.
    pub fn build(&self) -> Result<MihIndex, IndexError> {
        let substrings = self
            .substrings
            .unwrap_or_else(|| plan::best_mih_substrings(self.expected_len, self.max_distance));
        if !(1..=64).contains(&substrings) {
            return Err(IndexError::InvalidLayout(format!(
                "substrings = {substrings}: the substring count must be 1 to 64"
            )));
        }
        let ranges = band_ranges(substrings);
        let keys = ranges
            .iter()
            .map(|&range| KeySpec::new(&[range]))
            .collect::<Result<Vec<_>, _>>()?;
        let widths: Vec<u32> = ranges.iter().map(|r| r.1).collect();
        Ok(MihIndex {
            tables: self.options.tables(keys),
            radii_by_distance: (0..=64).map(|k| mih_radii(&widths, k)).collect(),
            widths,
        })
    }
}

/// Multi-index hashing over `m` substrings; exact for every `max_distance`.
///
/// For radii whose probing would cost more than scanning every fingerprint (a large `k`
/// on a small set) the query scans instead; either way the answer is exact.
///
/// ```
/// use neardup::index::{HammingIndex, Match, MihIndex};
/// let mut index = MihIndex::builder().expected_len(1000).max_distance(12).build()?;
/// index.insert(5, 0)?;
/// index.insert(6, 0xFFF)?; // 12 bits from 0
/// let hits = index.query(0, 12)?;
/// assert_eq!(hits, vec![Match { distance: 0, id: 5 }, Match { distance: 12, id: 6 }]);
/// Ok::<(), neardup::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct MihIndex {
    tables: TableSet,
    widths: Vec<u32>,
    /// `mih_radii(widths, k)` for every `k` in 0..=64, computed once.
    radii_by_distance: Vec<Vec<Option<u32>>>,
}

impl MihIndex {
    /// A builder (substring count chosen for a million fingerprints at radius 10).
    pub fn builder() -> MihIndexBuilder {
        MihIndexBuilder::new()
    }

    /// An empty index of `substrings` substrings.
    ///
    /// # Errors
    /// [`IndexError::InvalidLayout`] when `substrings` is not in 1..=64.
    pub fn new(substrings: u32) -> Result<Self, IndexError> {
        Self::builder().substrings(substrings).build()
    }

    /// The number of substrings (tables).
    pub fn substrings(&self) -> u32 {
        self.widths.len() as u32
    }

    /// Whether probing for `max_distance` is expected to cost more than a full scan.
    fn scan_is_cheaper(&self, radii: &[Option<u32>]) -> bool {
        let n = self.tables.tabled_len() as f64;
        let mut probes = 0.0;
        let mut candidates = 0.0;
        for (&width, radius) in self.widths.iter().zip(radii) {
            if let Some(r) = *radius {
                let balls = ball_size(width, r);
                probes += balls;
                candidates += balls * n / 2f64.powi(width as i32);
            }
        }
        plan::probe_cost_ns(probes, candidates) > plan::scan_cost_ns(n)
    }
}

impl TableIndex for MihIndex {
    fn max_exact_distance(&self) -> u32 {
        64
    }

    /// Each substring's table within its radius, or a scan where that costs less; every
    /// radius is answered (past 64 bits, by everything stored).
    fn probe(&self, max_distance: u32) -> Result<Probe<'_>, IndexError> {
        let radii = &self.radii_by_distance[max_distance.min(64) as usize];
        Ok(if self.scan_is_cheaper(radii) {
            Probe::Scan
        } else {
            Probe::Tables(Radii::PerTable(radii))
        })
    }

    fn describe(&self) -> String {
        let bits: Vec<String> = self.tables.keys().map(|k| k.bits().to_string()).collect();
        format!(
            "multi-index hashing: {} substrings of {} bits",
            self.widths.len(),
            bits.join("/")
        )
    }
}

table_index!(MihIndex);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::HammingIndex;

    #[test]
    fn every_radius_is_exact_even_past_the_tables() {
        let mut index = MihIndex::new(4).expect("valid");
        index.insert(1, 0).expect("fresh");
        index.insert(2, u64::MAX).expect("fresh");
        index.flush();
        assert_eq!(index.query(0, 63).expect("exact").len(), 1);
        assert_eq!(index.query(0, 64).expect("exact").len(), 2);
    }
}
