//! Pigeonhole band index: `b` contiguous bands, each an exact-match table.
//!
//! Two fingerprints within `k < b` bits agree exactly on at least one of `b` disjoint
//! bands, so probing the query's value in each band's table finds every result. Bands are
//! only a candidate generator: every candidate is verified by the full popcount, and an id
//! found through several bands is reported once. Why no crate: see `table/mod.rs`.

pub(crate) use super::plan::band_ranges;
use super::table::{table_index, table_options, KeySpec, TableIndex, TableOptions, TableSet};
use super::IndexError;

/// Builds a [`BandIndex`].
#[derive(Debug, Clone)]
pub struct BandIndexBuilder {
    bands: u32,
    options: TableOptions,
}

impl Default for BandIndexBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BandIndexBuilder {
    /// Eight bands (answers `max_distance` up to 7), no candidate cap.
    pub fn new() -> Self {
        BandIndexBuilder {
            bands: 8,
            options: TableOptions::default(),
        }
    }

    /// The number of bands, 1 to 64 (need not divide 64); the index answers
    /// `max_distance < bands`.
    pub fn bands(&mut self, bands: u32) -> &mut Self {
        self.bands = bands;
        self
    }

    table_options!();

    /// Builds the empty index.
    ///
    /// # Errors
    /// [`IndexError::InvalidLayout`] when `bands` is not in 1..=64.
    pub fn build(&self) -> Result<BandIndex, IndexError> {
        if !(1..=64).contains(&self.bands) {
            return Err(IndexError::InvalidLayout(format!(
                "bands = {}: the band count must be 1 to 64",
                self.bands
            )));
        }
        let keys = band_ranges(self.bands)
            .into_iter()
            .map(|range| KeySpec::new(&[range]))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BandIndex {
            tables: self.options.tables(keys),
            bands: self.bands,
        })
    }
}

/// Pigeonhole index over `b` contiguous bands; answers every `max_distance < b`.
///
/// Memory: about 12 bytes per fingerprint per band (sorted fingerprint plus row number)
/// plus a directory, and about 40 bytes per fingerprint for ids and the id map.
///
/// ```
/// use neardup::index::{BandIndex, HammingIndex, Match};
/// let mut index = BandIndex::builder().bands(8).build()?;
/// index.insert(47, 0xDEAD_BEEF)?;
/// index.insert(83, 0x0123_4567_89AB_CDEF)?;
/// assert_eq!(index.query(0xDEAD_BEEF ^ 0b101, 7)?, vec![Match { distance: 2, id: 47 }]);
/// assert!(index.query(0, 8).is_err()); // 8 bits could disturb all 8 bands
/// Ok::<(), neardup::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct BandIndex {
    tables: TableSet,
    bands: u32,
}

impl BandIndex {
    /// A builder, by default for 8 bands.
    pub fn builder() -> BandIndexBuilder {
        BandIndexBuilder::new()
    }

    /// An empty index of `bands` bands.
    ///
    /// # Errors
    /// [`IndexError::InvalidLayout`] when `bands` is not in 1..=64.
    pub fn new(bands: u32) -> Result<Self, IndexError> {
        Self::builder().bands(bands).build()
    }

    /// The number of bands.
    pub fn bands(&self) -> u32 {
        self.bands
    }
}

impl TableIndex for BandIndex {
    fn max_exact_distance(&self) -> u32 {
        self.bands - 1
    }

    fn describe(&self) -> String {
        format!("{} bands", self.bands)
    }
}

table_index!(BandIndex);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{HammingIndex, Match};

    #[test]
    fn max_distance_at_or_above_band_count_is_rejected() {
        let index = BandIndex::new(8).expect("valid band count");
        assert_eq!(
            index.query(0, 8),
            Err(IndexError::MaxDistanceUnsupported {
                max_distance: 8,
                blocks: 8
            })
        );
        assert!(index.query(0, 7).is_ok());
        assert!(BandIndex::new(0).is_err());
        assert!(BandIndex::new(65).is_err());
    }

    #[test]
    fn shared_band_alone_is_not_a_result() {
        let mut index = BandIndex::new(4).expect("valid band count");
        // Shares the low band with the query but differs in 48 other bits.
        index.insert(1, 0xFFFF_FFFF_FFFF_0000).expect("fresh id");
        index.insert(2, 0x0000_0000_0000_0007).expect("fresh id");
        let hits = index.query(0, 3).expect("3 < 4 bands");
        assert_eq!(hits, vec![Match { distance: 3, id: 2 }]);
    }

    #[test]
    fn id_found_through_several_bands_is_reported_once() {
        let mut index = BandIndex::new(5).expect("valid band count");
        index.insert(9, 0x1234).expect("fresh id");
        index.flush();
        assert_eq!(
            index.query(0x1234, 4).expect("4 < 5 bands"),
            vec![Match { distance: 0, id: 9 }]
        );
    }
}
