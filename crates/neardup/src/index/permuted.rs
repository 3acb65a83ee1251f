//! Permuted sorted tables (Manku, Jain, Das Sarma, "Detecting near-duplicates for web
//! crawling", WWW 2007).
//!
//! The 64 bits are split into `B` blocks. For every choice of `k` blocks that may hold the
//! differing bits, one table keeps every fingerprint ordered by the *other* `B - k`
//! blocks (the paper moves them to the top with a permutation `π` and sorts; we sort by
//! those bits directly, which yields the same runs, see `table/mod.rs`). Two
//! fingerprints within `k` bits differ in at most `k` blocks, so in the table whose prefix
//! avoids those blocks they share the whole prefix of `p` bits: a query looks up its prefix
//! in every table and verifies the run, which holds about `n / 2^p` fingerprints.
//!
//! The two-level variant (the paper's 16-table design) splits the bits left over by the
//! first level again into `B2` blocks and also fixes `B2 - k` of them, for
//! `C(B, k) * C(B2, k)` tables with longer prefixes.

pub use super::plan::PermutedLayout;
use super::table::{table_index, table_options, TableIndex, TableOptions, TableSet};
use super::IndexError;

/// Builds a [`PermutedIndex`].
#[derive(Debug, Clone)]
pub struct PermutedIndexBuilder {
    max_distance: u32,
    expected_len: u64,
    blocks: Option<u32>,
    second_level_blocks: Option<u32>,
    options: TableOptions,
}

impl Default for PermutedIndexBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PermutedIndexBuilder {
    /// `max_distance` 3, layout chosen for one million fingerprints.
    pub fn new() -> Self {
        PermutedIndexBuilder {
            max_distance: 3,
            expected_len: 1 << 20,
            blocks: None,
            second_level_blocks: None,
            options: TableOptions::default(),
        }
    }

    setters! {
        &mut;
        /// The largest radius queries will use (bits).
        max_distance(max_distance: u32);

        /// The number of fingerprints the layout is chosen for (when no blocks are given).
        expected_len(expected_len: u64);

        /// Overrides the automatic layout: this many first-level blocks.
        blocks(blocks: u32) => Some;

        /// Overrides the automatic layout: split the free blocks again into this many blocks
        /// (requires [`PermutedIndexBuilder::blocks`]).
        second_level_blocks(second_level_blocks: u32) => Some;
    }

    table_options!();

    /// The layout this builder would use.
    ///
    /// # Errors
    /// As [`PermutedLayout::new`] and [`PermutedLayout::two_level`].
    pub fn layout(&self) -> Result<PermutedLayout, IndexError> {
        match (self.blocks, self.second_level_blocks) {
            (Some(blocks), None) => PermutedLayout::new(self.max_distance, blocks),
            (Some(blocks), Some(second)) => {
                PermutedLayout::two_level(self.max_distance, blocks, second)
            }
            (None, Some(_)) => Err(IndexError::InvalidLayout(
                "second_level_blocks needs blocks".to_owned(),
            )),
            (None, None) => PermutedLayout::for_size(self.expected_len, self.max_distance),
        }
    }

    /// Builds the empty index.
    ///
    /// # Errors
    /// As [`PermutedIndexBuilder::layout`].
    pub fn build(&self) -> Result<PermutedIndex, IndexError> {
        let layout = self.layout()?;
        PermutedIndex::with_layout_and_options(layout, self.options)
    }
}

/// Manku's permuted sorted tables; answers every `max_distance` up to its layout's.
///
/// Memory: about 12 bytes per fingerprint per table (a sorted fingerprint plus a 32-bit
/// row number: rows are 4 bytes cheaper than repeating the 8-byte id in every table, and
/// the fingerprint is kept so that verification streams the run without touching the
/// row store), plus a directory of about 2 bytes per fingerprint per table, plus about
/// 40 bytes per fingerprint for ids and the id map.
///
/// ```
/// use neardup::index::{HammingIndex, Match, PermutedIndex};
/// let mut index = PermutedIndex::builder().max_distance(3).expected_len(1000).build()?;
/// index.insert(1, 0xF0F0)?;
/// index.insert(2, 0xF0F0 ^ 0b111)?;
/// let hits = index.query(0xF0F0, 3)?;
/// assert_eq!(hits, vec![Match { distance: 0, id: 1 }, Match { distance: 3, id: 2 }]);
/// Ok::<(), neardup::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PermutedIndex {
    tables: TableSet,
    layout: PermutedLayout,
}

impl PermutedIndex {
    /// A builder (radius 3, layout for a million fingerprints unless overridden).
    pub fn builder() -> PermutedIndexBuilder {
        PermutedIndexBuilder::new()
    }

    /// An empty index with `layout`.
    ///
    /// # Errors
    /// [`IndexError::InvalidLayout`] when a table's prefix cannot be built.
    pub fn with_layout(layout: PermutedLayout) -> Result<Self, IndexError> {
        Self::with_layout_and_options(layout, TableOptions::default())
    }

    fn with_layout_and_options(
        layout: PermutedLayout,
        options: TableOptions,
    ) -> Result<Self, IndexError> {
        Ok(PermutedIndex {
            tables: options.tables(layout.keys()?),
            layout,
        })
    }

    /// The layout.
    pub fn layout(&self) -> PermutedLayout {
        self.layout
    }
}

impl TableIndex for PermutedIndex {
    fn max_exact_distance(&self) -> u32 {
        self.layout.max_distance()
    }

    fn describe(&self) -> String {
        self.layout.to_string()
    }
}

table_index!(PermutedIndex);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::HammingIndex;

    #[test]
    fn manku_layouts_have_the_papers_prefix_lengths() {
        let ten = PermutedLayout::new(3, 5).expect("valid");
        assert_eq!(ten.tables(), 10);
        assert!(ten.prefix_bits().iter().all(|&p| p == 25 || p == 26));
        let twenty = PermutedLayout::new(3, 6).expect("valid");
        assert_eq!(twenty.tables(), 20);
        assert!(twenty.prefix_bits().iter().all(|&p| (31..=33).contains(&p)));
        let sixteen = PermutedLayout::two_level(3, 4, 4).expect("valid");
        assert_eq!(sixteen.tables(), 16);
        assert_eq!(sixteen.prefix_bits(), vec![28; 16]);
        assert_eq!(sixteen.keys().expect("valid keys").len(), 16);
    }

    #[test]
    fn every_k_bit_difference_leaves_some_prefix_intact() {
        // Exhaustive over all 3-bit differences for the two-level 16-table design.
        let layout = PermutedLayout::two_level(3, 4, 4).expect("valid");
        let masks: Vec<u64> = layout
            .keys()
            .expect("keys")
            .iter()
            .map(|k| k.mask())
            .collect();
        for a in 0..64 {
            for b in a..64 {
                for c in b..64 {
                    let diff = (1u64 << a) | (1u64 << b) | (1u64 << c);
                    assert!(masks.iter().any(|m| m & diff == 0), "{a} {b} {c}");
                }
            }
        }
    }

    #[test]
    fn layouts_that_cannot_guarantee_k_are_refused() {
        assert!(matches!(
            PermutedLayout::new(3, 3),
            Err(IndexError::MaxDistanceUnsupported { .. })
        ));
        assert!(PermutedLayout::two_level(3, 4, 3).is_err());
        let index = PermutedIndex::with_layout(PermutedLayout::new(2, 4).expect("valid"))
            .expect("valid layout");
        assert!(index.query(0, 3).is_err());
        assert!(index.query(0, 2).is_ok());
    }
}
