//! The [`HammingIndex`] implementation the band, permuted and multi-index types share:
//! they differ only in their keys and in how a radius is probed ([`TableIndex`]), and
//! [`table_index!`] writes the rest once for each of them.

use super::super::{batch_one_by_one, nearest_one_by_one, HammingIndex};
use super::super::{IndexError, Match, QueryStats};
use super::key::KeySpec;
use super::query::Radii;
use super::rows::TableSet;

/// How a query at some radius reads the tables.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Probe<'a> {
    /// Look up every table with these key radii.
    Tables(Radii<'a>),
    /// Scan every row instead: probing would cost more.
    Scan,
}

/// What a table index adds to its [`TableSet`] (a field `tables`): the radius it answers
/// and how it probes for one. [`table_index!`] implements [`HammingIndex`] from it.
pub(crate) trait TableIndex {
    /// The largest radius the layout answers exactly.
    fn max_exact_distance(&self) -> u32;

    /// How a query at `max_distance` reads the tables: by default every table at its
    /// exact key, up to [`max_exact_distance`](Self::max_exact_distance).
    ///
    /// # Errors
    /// [`IndexError::MaxDistanceUnsupported`] past the radius the layout answers.
    fn probe(&self, max_distance: u32) -> Result<Probe<'_>, IndexError> {
        let answered = self.max_exact_distance();
        if max_distance > answered {
            return Err(IndexError::MaxDistanceUnsupported {
                max_distance,
                blocks: answered + 1,
            });
        }
        Ok(Probe::Tables(Radii::Exact))
    }

    /// The layout, for [`IndexStats::layout`](super::super::IndexStats::layout).
    fn describe(&self) -> String;
}

/// Options every table index's builder offers (see [`table_options!`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TableOptions {
    pub(crate) buffer_capacity: Option<usize>,
    pub(crate) max_candidates_per_probe: Option<usize>,
}

impl TableOptions {
    /// Empty tables keyed by `keys`, with these options.
    pub(crate) fn tables(&self, keys: Vec<KeySpec>) -> TableSet {
        TableSet::new(keys, self.buffer_capacity, self.max_candidates_per_probe)
    }
}

/// [`HammingIndex::query_nearest_into`] of a table index whose tables are `tables`.
#[inline]
pub(crate) fn query_nearest_into<I: TableIndex>(
    index: &I,
    tables: &TableSet,
    fingerprint: u64,
    max_distance: u32,
    limit: usize,
    out: &mut Vec<Match>,
) -> Result<QueryStats, IndexError> {
    Ok(match index.probe(max_distance)? {
        Probe::Tables(radii) => tables.query(fingerprint, max_distance, radii, limit, out),
        Probe::Scan => tables.query_by_scan(fingerprint, max_distance, limit, out),
    })
}

/// [`HammingIndex::query_nearest_batch`] of a table index whose tables are `tables`:
/// multi-index radii by sorted sweeps of the tables (whose keys must then fit in 32 bits),
/// the rest one by one.
pub(crate) fn query_nearest_batch<I: TableIndex + HammingIndex>(
    index: &I,
    tables: &TableSet,
    fingerprints: &[u64],
    max_distance: u32,
    limit: usize,
    out: &mut Vec<Vec<Match>>,
) -> Result<QueryStats, IndexError> {
    match index.probe(max_distance) {
        Ok(Probe::Tables(Radii::PerTable(radii))) if tables.keys().all(|k| k.bits() <= 32) => {
            Ok(tables.query_radii_batch(fingerprints, max_distance, radii, limit, out))
        }
        _ => nearest_one_by_one(index, fingerprints, max_distance, limit, out),
    }
}

/// [`HammingIndex::query_batch`] of a table index whose tables are `tables`: exact keys by
/// the grouped or swept batch paths, the rest one by one.
pub(crate) fn query_batch<I: TableIndex + HammingIndex>(
    index: &I,
    tables: &TableSet,
    fingerprints: &[u64],
    max_distance: u32,
    out: &mut Vec<(usize, Match)>,
) -> Result<QueryStats, IndexError> {
    match index.probe(max_distance)? {
        Probe::Tables(Radii::Exact) => {
            Ok(tables.query_batch_exact(fingerprints, max_distance, out))
        }
        _ => batch_one_by_one(index, fingerprints, max_distance, out),
    }
}

/// Where a table index sends each [`HammingIndex`] call (the `$reach` of
/// [`delegate_hamming_index!`](super::super::delegate_hamming_index)): the queries to the
/// functions above, the radius and the layout's name to its [`TableIndex`], the rest to
/// its [`TableSet`] (field `tables`).
macro_rules! on_tables {
    ($index:ident => query_nearest_into($($arg:ident),*)) => {
        $crate::index::table::query_nearest_into($index, &$index.tables, $($arg),*)
    };
    ($index:ident => query_nearest_batch($($arg:ident),*)) => {
        $crate::index::table::query_nearest_batch($index, &$index.tables, $($arg),*)
    };
    ($index:ident => query_batch($($arg:ident),*)) => {
        $crate::index::table::query_batch($index, &$index.tables, $($arg),*)
    };
    ($index:ident => max_supported_distance()) => {
        $index.max_exact_distance()
    };
    ($index:ident => settle()) => {
        $index.tables.poll_merge()
    };
    ($index:ident => stats()) => {
        $index.tables.stats($index.describe())
    };
    ($index:ident => $name:ident($($arg:ident),*)) => {
        $index.tables.$name($($arg),*)
    };
}
pub(crate) use on_tables;

/// Implements [`HammingIndex`] for a [`TableIndex`] with a `tables: TableSet` field, and
/// gives it `extend` and `flush`.
macro_rules! table_index {
    ($index:ty) => {
        // A block of its own, so that the impls see these names whatever the caller imports.
        const _: () = {
            use $crate::index::table::{on_tables, TableIndex};
            use $crate::index::{delegate_hamming_index, HammingIndex};
            use $crate::index::{IndexError, IndexStats, Match, QueryStats};

            impl $index {
                /// Inserts many `(id, fingerprint)` pairs and sorts them into the tables at
                /// once.
                ///
                /// # Errors
                /// [`IndexError::DuplicateId`] at the first id already present (the pairs
                /// before it stay inserted), [`IndexError::Full`] past 2^32 - 1 rows.
                pub fn extend<I: IntoIterator<Item = (u64, u64)>>(
                    &mut self,
                    items: I,
                ) -> Result<(), IndexError> {
                    self.tables.extend(items)
                }

                /// Merges the insert buffer into the tables (queries then scan no buffer).
                pub fn flush(&mut self) {
                    self.tables.merge_buffer();
                }
            }

            impl HammingIndex for $index {
                delegate_hamming_index!(on_tables);
            }
        };
    };
}
pub(crate) use table_index;

/// The setters of [`TableOptions`] for a builder with a field `options: TableOptions`.
macro_rules! table_options {
    () => {
        /// Inserts buffered (and scanned linearly by queries) before a merge into the
        /// tables; by default about `sqrt(n)`.
        pub fn buffer_capacity(&mut self, inserts: usize) -> &mut Self {
            self.options.buffer_capacity = Some(inserts.max(1));
            self
        }

        /// Verify at most this many candidates per probe (a bucket, or a run of a sorted
        /// table); longer ones are cut short and counted in
        /// [`QueryStats::capped_probes`](crate::index::QueryStats::capped_probes) (the
        /// result is then possibly incomplete).
        pub fn max_candidates_per_probe(&mut self, candidates: usize) -> &mut Self {
            self.options.max_candidates_per_probe = Some(candidates);
            self
        }
    };
}
pub(crate) use table_options;
