//! Boilerplate exclusion: shingles that are site furniture (navigation, footers, disclaimers).
//!
//! A shingle found on a large share of one host's pages votes identically in every page of
//! that host and makes unrelated pages look alike (seed 000). The set is learned per host by
//! the pipeline; here it is only a set of shingle hashes to leave out.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// Shingle hashes are already uniformly distributed, so the set needs no second hash.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; fold anything else defensively.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A set of shingle hashes keyed without rehashing.
pub(crate) type ShingleSet = HashSet<u64, BuildHasherDefault<IdentityHasher>>;

/// Shingles to exclude before fingerprinting and before Jaccard verification.
#[derive(Debug, Clone, Default)]
pub struct Boilerplate {
    shingles: ShingleSet,
}

impl Boilerplate {
    /// An empty set: nothing is excluded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the set from shingle hashes (as returned by
    /// [`SimHasher::shingle_set`](crate::SimHasher::shingle_set)).
    pub fn from_hashes(hashes: impl IntoIterator<Item = u64>) -> Self {
        Boilerplate {
            shingles: hashes.into_iter().collect(),
        }
    }

    /// Whether `shingle` is boilerplate.
    #[inline]
    pub fn contains(&self, shingle: u64) -> bool {
        self.shingles.contains(&shingle)
    }

    /// The number of boilerplate shingles.
    pub fn len(&self) -> usize {
        self.shingles.len()
    }

    /// Whether nothing is excluded.
    pub fn is_empty(&self) -> bool {
        self.shingles.is_empty()
    }

    /// Iterates over the excluded shingle hashes, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.shingles.iter().copied()
    }

    /// Removes the boilerplate shingles from `shingles`, keeping the order of the rest.
    pub fn retain_content(&self, shingles: &mut Vec<u64>) {
        if !self.shingles.is_empty() {
            shingles.retain(|h| !self.shingles.contains(h));
        }
    }
}
