//! Hamming-space indexes: every stored fingerprint within `max_distance` bits of a query.
//!
//! Four exact indexes share one interface, [`HammingIndex`]:
//!
//! | type | candidate generator | good for |
//! |---|---|---|
//! | [`LinearIndex`] | none: a vectorised XOR-popcount scan | tests (the oracle), tiny sets, baselines |
//! | [`BandIndex`] | `b` contiguous bands, exact match on one band (pigeonhole) | small `k`, `k < b` |
//! | [`PermutedIndex`] | Manku et al. (2007): tables sorted by a permuted prefix | `k <= 4` at any size |
//! | [`MihIndex`] | Norouzi et al. (2012): multi-index hashing, substring balls | `k` of 6 to 16 |
//!
//! [`AutoIndex`] picks one of them from a [`plan`](plan::choose_layout) for the expected
//! size and radius, and [`join::self_join`] reports every near pair of a batch at once.
//!
//! Every index verifies every candidate by the full XOR popcount, so a result is never a
//! shared band or prefix alone, and the layouts guarantee recall: no stored fingerprint
//! within `max_distance` is ever missed, unless a per-probe candidate cap was configured and
//! hit, which [`QueryStats::capped_probes`] and [`IndexStats::capped_probes`] then report.
//!
//! Why no crate: the index is the product's core, its layouts and costs are what
//! [`plan`] reasons about, and none of the Hamming-search crates we looked at offers
//! erasure, exact recall with skew caps and a shared interface at once.

mod auto;
pub mod bands;
pub mod join;
pub mod linear;
pub mod mih;
pub mod permuted;
pub mod plan;
mod table;

#[cfg(test)]
mod tests;

pub use auto::AutoIndex;
pub use bands::{BandIndex, BandIndexBuilder};
pub use join::{self_join, self_join_with, NearPair};
pub use linear::LinearIndex;
pub use mih::{MihIndex, MihIndexBuilder};
pub use permuted::{PermutedIndex, PermutedIndexBuilder, PermutedLayout};
pub use plan::{
    choose_layout, format_plans, plan_layouts, LayoutKind, LayoutPlan, PlanRequest,
    DEFAULT_BYTES_PER_FINGERPRINT,
};

/// One verified result of a query: a stored id and its exact Hamming distance to the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    /// Exact Hamming distance (full XOR popcount) to the query. First, so that sorting
    /// matches orders by (distance, id).
    pub distance: u32,
    /// The caller's id of the stored fingerprint.
    pub id: u64,
}

/// Errors raised by the Hamming indexes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The layout cannot guarantee every result within this radius.
    #[error("max_distance {max_distance} is not supported by a layout of {blocks} blocks: at most {} bits can be answered exactly; build the index with more blocks (or a multi-index layout)", .blocks.saturating_sub(1))]
    MaxDistanceUnsupported {
        /// The requested radius in bits.
        max_distance: u32,
        /// The number of blocks in the layout (the radius it answers is `blocks - 1`).
        blocks: u32,
    },
    /// The id is already stored and replacement was not asked for.
    #[error("id {id} is already indexed; remove it first or insert with replace")]
    DuplicateId {
        /// The id.
        id: u64,
    },
    /// A layout parameter is out of range.
    #[error("invalid index layout: {0}")]
    InvalidLayout(String),
    /// The index holds as many rows as its 32-bit row numbers can address.
    #[error("index is full at {rows} rows: split the collection across several indexes")]
    Full {
        /// The number of rows stored.
        rows: usize,
    },
    /// No layout within the memory budget can answer the radius exactly.
    #[error("no layout answers max_distance {max_distance} for {fingerprints} fingerprints within {budget_bytes} bytes: raise the memory budget or lower max_distance")]
    OverBudget {
        /// The requested radius in bits.
        max_distance: u32,
        /// The planned number of fingerprints.
        fingerprints: u64,
        /// The memory budget in bytes.
        budget_bytes: u64,
    },
}

/// What one query did: how many table lookups and candidates it took, and whether a
/// candidate cap cut any lookup short.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Table lookups (probes), not counting the scan of the insert buffer.
    pub probes: u64,
    /// Candidates read and verified by popcount, including the insert buffer.
    pub candidates: u64,
    /// Probes whose bucket or run was longer than the configured cap and was cut short.
    /// When this is non-zero the result may miss fingerprints within `max_distance`.
    pub capped_probes: u64,
}

impl QueryStats {
    /// Adds another query's counts to these.
    pub fn add(&mut self, other: QueryStats) {
        self.probes += other.probes;
        self.candidates += other.candidates;
        self.capped_probes += other.capped_probes;
    }

    /// Whether the result is guaranteed to hold every stored fingerprint within the radius
    /// (true unless the candidate cap was hit).
    pub fn is_complete(&self) -> bool {
        self.capped_probes == 0
    }
}

/// A snapshot of an index's shape, for monitoring skew and memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Stored (live) fingerprints.
    pub len: usize,
    /// Lookup tables (0 for the linear scan).
    pub tables: usize,
    /// The longest bucket or sorted run over all tables: with clustered fingerprints this,
    /// not the average, bounds the cost of an unlucky probe.
    pub largest_bucket: usize,
    /// Fingerprints waiting in the insert buffer (scanned linearly by every query).
    pub buffered: usize,
    /// Removed fingerprints still occupying table slots until the next merge or compaction.
    pub tombstones: usize,
    /// Probes cut short by the candidate cap since the index was built.
    pub capped_probes: u64,
    /// Approximate heap bytes used.
    pub memory_bytes: usize,
    /// A human description of the layout.
    pub layout: String,
}

/// The interface shared by every Hamming index.
///
/// Fingerprints are plain `u64`s; ids are the caller's `u64`s and are unique per index.
pub trait HammingIndex {
    /// Stores `fingerprint` under `id`.
    ///
    /// # Errors
    /// [`IndexError::DuplicateId`] when `id` is already stored, [`IndexError::Full`] when
    /// the index cannot address another row.
    fn insert(&mut self, id: u64, fingerprint: u64) -> Result<(), IndexError>;

    /// Stores `fingerprint` under `id`, replacing what `id` had; returns the old fingerprint.
    ///
    /// # Errors
    /// [`IndexError::Full`] when the index cannot address another row.
    fn replace(&mut self, id: u64, fingerprint: u64) -> Result<Option<u64>, IndexError>;

    /// Removes `id` and every entry it has in every table; returns its fingerprint.
    ///
    /// After this returns no query reports `id`. Table slots may linger as tombstones
    /// until the next merge; [`HammingIndex::compact`] purges them at once.
    fn remove(&mut self, id: u64) -> Option<u64>;

    /// The fingerprint stored under `id`.
    fn get(&self, id: u64) -> Option<u64>;

    /// Every stored `(id, distance)` with `distance <= max_distance`, sorted by (distance, id).
    ///
    /// # Errors
    /// [`IndexError::MaxDistanceUnsupported`] when the layout cannot answer `max_distance`
    /// exactly.
    fn query(&self, fingerprint: u64, max_distance: u32) -> Result<Vec<Match>, IndexError> {
        let mut out = Vec::new();
        self.query_into(fingerprint, max_distance, &mut out)?;
        Ok(out)
    }

    /// Like [`HammingIndex::query`], but clears and fills `out` (so a loop of queries
    /// allocates nothing) and returns what the query cost.
    ///
    /// # Errors
    /// [`IndexError::MaxDistanceUnsupported`] when the layout cannot answer `max_distance`
    /// exactly.
    fn query_into(
        &self,
        fingerprint: u64,
        max_distance: u32,
        out: &mut Vec<Match>,
    ) -> Result<QueryStats, IndexError> {
        self.query_nearest_into(fingerprint, max_distance, usize::MAX, out)
    }

    /// The first `limit` matches of [`HammingIndex::query`]'s answer (the nearest, by
    /// (distance, id)) into `out`, cleared first: what a caller that verifies only the
    /// nearest candidates asks. The table indexes select them without sorting the rest, so
    /// a query next to a large group of near copies (thousands of matches) costs the scan
    /// of that group, not a sort of it as well. Every query goes through here (`query` and
    /// `query_into` ask for all matches).
    ///
    /// # Errors
    /// [`IndexError::MaxDistanceUnsupported`] when the layout cannot answer `max_distance`
    /// exactly.
    fn query_nearest_into(
        &self,
        fingerprint: u64,
        max_distance: u32,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> Result<QueryStats, IndexError>;

    /// [`HammingIndex::query_nearest_into`] for many fingerprints at once: `out[i]` gets
    /// the answer for `fingerprints[i]` (`out` is resized to fit). Multi-index hashing
    /// answers a batch by one sorted sweep of each table instead of a cache miss per probe.
    ///
    /// # Errors
    /// [`IndexError::MaxDistanceUnsupported`] when the layout cannot answer `max_distance`
    /// exactly.
    fn query_nearest_batch(
        &self,
        fingerprints: &[u64],
        max_distance: u32,
        limit: usize,
        out: &mut Vec<Vec<Match>>,
    ) -> Result<QueryStats, IndexError> {
        nearest_one_by_one(self, fingerprints, max_distance, limit, out)
    }

    /// Answers many queries at once: clears `out` and fills it with `(query position,
    /// match)`, sorted by position and then (distance, id). Table indexes overlap the
    /// memory accesses of several queries, which is much faster than a loop of single
    /// queries on tables larger than the cache.
    ///
    /// # Errors
    /// [`IndexError::MaxDistanceUnsupported`] when the layout cannot answer `max_distance`
    /// exactly.
    fn query_batch(
        &self,
        fingerprints: &[u64],
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
    ) -> Result<QueryStats, IndexError> {
        batch_one_by_one(self, fingerprints, max_distance, out)
    }

    /// The largest `max_distance` this index answers exactly.
    fn max_supported_distance(&self) -> u32;

    /// The number of stored fingerprints.
    fn len(&self) -> usize;

    /// Whether nothing is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate heap bytes used.
    fn memory_bytes(&self) -> usize;

    /// Merges buffered inserts into the tables and drops every tombstone, so that removed
    /// fingerprints no longer occupy memory.
    fn compact(&mut self);

    /// Installs a buffer merge that finished in the background, without waiting for one
    /// that has not. Inserts do this themselves; a caller whose inserts stop while queries
    /// go on calls it now and then, so that queries stop scanning the merged buffer.
    fn settle(&mut self) {}

    /// A snapshot of the index's shape: largest bucket, tables, capped probes, memory.
    ///
    /// Finding the largest bucket walks every table: O(n) per table, for monitoring, not
    /// for a per-query path.
    fn stats(&self) -> IndexStats;
}

/// Implements every [`HammingIndex`] method as one call, `$reach!(self => method(args))`,
/// for the index types that hand their work on (`AutoIndex` to the index its plan chose,
/// the table indexes to their tables and layout): the signatures are listed here once,
/// not once more per type. `$reach` is the caller's macro that turns such a call into an
/// expression; the types named below must be in scope where this is used.
///
/// In the list, `[mut]` marks a method that takes `&mut self`. A method added to the trait
/// goes into the list as well, or those types silently fall back to its default.
macro_rules! delegate_hamming_index {
    ($reach:ident) => {
        $crate::index::delegate_hamming_index! { @methods $reach;
            fn insert[mut](id: u64, fingerprint: u64) -> Result<(), IndexError>;
            fn replace[mut](id: u64, fingerprint: u64) -> Result<Option<u64>, IndexError>;
            fn remove[mut](id: u64) -> Option<u64>;
            fn get[](id: u64) -> Option<u64>;
            fn query_nearest_into[](fingerprint: u64, max_distance: u32, limit: usize,
                out: &mut Vec<Match>) -> Result<QueryStats, IndexError>;
            fn query_nearest_batch[](fingerprints: &[u64], max_distance: u32, limit: usize,
                out: &mut Vec<Vec<Match>>) -> Result<QueryStats, IndexError>;
            fn query_batch[](fingerprints: &[u64], max_distance: u32,
                out: &mut Vec<(usize, Match)>) -> Result<QueryStats, IndexError>;
            fn max_supported_distance[]() -> u32;
            fn len[]() -> usize;
            fn memory_bytes[]() -> usize;
            fn compact[mut]();
            fn settle[mut]();
            fn stats[]() -> IndexStats;
        }
    };
    (@methods $reach:ident; $(
        fn $name:ident[$($mut:tt)?]($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;
    )*) => {
        $(
            fn $name(&$($mut)? self, $($arg: $ty),*) $(-> $ret)? {
                $reach!(self => $name($($arg),*))
            }
        )*
    };
}
pub(crate) use delegate_hamming_index;

/// [`HammingIndex::query_nearest_batch`] as a loop of single queries.
pub(crate) fn nearest_one_by_one<I: HammingIndex + ?Sized>(
    index: &I,
    fingerprints: &[u64],
    max_distance: u32,
    limit: usize,
    out: &mut Vec<Vec<Match>>,
) -> Result<QueryStats, IndexError> {
    out.resize_with(fingerprints.len(), Vec::new);
    out.truncate(fingerprints.len());
    let mut total = QueryStats::default();
    for (&fingerprint, found) in fingerprints.iter().zip(out.iter_mut()) {
        total.add(index.query_nearest_into(fingerprint, max_distance, limit, found)?);
    }
    Ok(total)
}

/// [`HammingIndex::query_batch`] as a loop of single queries.
pub(crate) fn batch_one_by_one<I: HammingIndex + ?Sized>(
    index: &I,
    fingerprints: &[u64],
    max_distance: u32,
    out: &mut Vec<(usize, Match)>,
) -> Result<QueryStats, IndexError> {
    out.clear();
    let mut total = QueryStats::default();
    let mut one = Vec::new();
    for (at, &fingerprint) in fingerprints.iter().enumerate() {
        total.add(index.query_into(fingerprint, max_distance, &mut one)?);
        out.extend(one.iter().map(|&m| (at, m)));
    }
    Ok(total)
}

/// Sorts results by (distance, id), the order every query promises, keeping the first
/// `limit`: those are selected first when there are more, so the rest are not sorted.
pub(crate) fn sort_matches(out: &mut Vec<Match>, limit: usize) {
    if out.len() > limit {
        if limit == 0 {
            out.clear();
            return;
        }
        out.select_nth_unstable(limit - 1);
        out.truncate(limit);
    }
    out.sort_unstable();
}
