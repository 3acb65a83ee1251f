//! The engine shared by the band, permuted and multi-index tables: a row store, key tables
//! sorted by a bit-subset of the fingerprint, an insert buffer and tombstones.
//!
//! Why no crate: this is the product's core. Bands (Charikar/pigeonhole), Manku's permuted
//! tables and Norouzi's multi-index hashing are all the same structure seen from here: a
//! table orders every fingerprint by a *key*, some of its bits, and a query looks up the
//! query's key (or every key within a small radius of it) and verifies the run it finds.
//! A permuted table sorted by `π(fp)` and probed on its top `p` bits finds exactly the run
//! this table finds for the key "the chosen blocks' bits", so we store the fingerprint
//! unpermuted: popcount is permutation-invariant, and the de-duplication test of the match
//! step (`query.rs`) needs the fingerprint in its own bit order.
//!
//! Layout of one table (about 12 bytes per fingerprint plus a directory):
//!
//! - `fps`: fingerprints sorted by (key, fingerprint), so a run is contiguous and the
//!   verification loop streams 8 bytes per candidate;
//! - `rows`: the parallel 32-bit row number, read only on a hit (a row indexes the row store,
//!   which holds the id; a `u64` id per table would cost 4 more bytes per table);
//! - `dir`: offsets indexed by the top `d` bits of the key (`d` about `log2 n - 1`, or all
//!   key bits when the key is that short: a CSR layout), so a lookup is one directory read
//!   plus at most a short binary search, instead of a search over the whole table.
//!
//! Inserts go to a buffer that every query scans linearly; when full it is merged into the
//! tables in one sequential pass on a thread of its own, so an insert never waits for a
//! merge: the full buffer is frozen (queries scan it too) and a fresh one takes the inserts
//! until the merged tables are swapped in. Removal marks the row dead at once (queries
//! check liveness on every hit, and the row's fingerprint and id are overwritten); merges
//! drop dead entries from the tables and compaction renumbers the rows, so erased data
//! really leaves memory.
//!
//! One job per file:
//!
//! - `key.rs`: [`KeySpec`], which bits a table orders by, and the keys within a radius;
//! - `sorted.rs`: [`SortedTable`], one table, built by radix sort or merged;
//! - `memory.rs`: huge pages and prefetch hints;
//! - `rows.rs`: [`TableSet`], the row store the tables point into, and its accounting;
//! - `merge.rs`: inserts, the buffer's merges on their own thread, removal, compaction;
//! - `query.rs`: the match step every query shares, the single query, the scans;
//! - `batch.rs`: batches of queries, on the same match step;
//! - `index.rs`: the [`HammingIndex`](super::HammingIndex) implementation the band,
//!   permuted and multi-index types share ([`TableIndex`], [`table_index!`]).

mod batch;
mod index;
mod key;
mod memory;
mod merge;
mod query;
mod rows;
mod sorted;

#[cfg(test)]
pub(crate) use batch::FORCE_SORTED_SWEEP;
pub(crate) use index::{
    on_tables, query_batch, query_nearest_batch, query_nearest_into, table_index, table_options,
    Probe, TableIndex, TableOptions,
};
pub(crate) use key::{ball_size, directory_bits, KeySpec};
pub(crate) use query::Radii;
pub(crate) use rows::TableSet;
pub(crate) use sorted::SortedTable;
