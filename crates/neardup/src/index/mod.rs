//! Hamming-space indexes: every stored fingerprint within `max_distance` bits of a query.
//!
//! (Owned by the index work: see issue "index". This file fixes the interface the rest of
//! the crate programs against.)

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
        /// The number of blocks in the layout.
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
}

/// The interface shared by every Hamming index.
pub trait HammingIndex {
    /// Stores `fingerprint` under `id`.
    ///
    /// # Errors
    /// [`IndexError::DuplicateId`] when `id` is already stored.
    fn insert(&mut self, id: u64, fingerprint: u64) -> Result<(), IndexError>;
    /// Stores `fingerprint` under `id`, replacing what `id` had; returns the old fingerprint.
    fn replace(&mut self, id: u64, fingerprint: u64) -> Option<u64>;
    /// Removes `id` and every entry it has in every table; returns its fingerprint.
    fn remove(&mut self, id: u64) -> Option<u64>;
    /// The fingerprint stored under `id`.
    fn get(&self, id: u64) -> Option<u64>;
    /// Every stored `(id, distance)` with `distance <= max_distance`, sorted by (distance, id).
    ///
    /// # Errors
    /// [`IndexError::MaxDistanceUnsupported`] when the layout cannot answer `max_distance`
    /// exactly.
    fn query(&self, fingerprint: u64, max_distance: u32) -> Result<Vec<Match>, IndexError>;
    /// The number of stored fingerprints.
    fn len(&self) -> usize;
    /// Whether nothing is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Approximate heap bytes used.
    fn memory_bytes(&self) -> usize;
}
