//! Verification sets kept in memory: the ones not committed yet, and a bounded cache of
//! committed ones read back from the store.
//!
//! Every candidate is verified by exact Jaccard against its stored shingle set. Reading a set
//! back costs a B-tree lookup and a multi-kilobyte blob (SQLite) or a round trip (Redis), and
//! the same sets are asked for again and again: a cluster's members are checked by every
//! record that joins it, and near duplicates tend to arrive close together in a crawl. On a
//! 1 GB corpus the reads were a tenth of a `neardup dedup` run before this cache.
//!
//! The semantic stage keeps its sentence embeddings the same way ([`Sets<f32>`]).

use std::sync::Arc;

use quick_cache::sync::Cache;

use super::FastMap;

/// A verification set: sorted distinct shingle ids.
pub(super) type Set = Arc<[u32]>;

/// A sentence embedding.
pub(super) type Embedding = Arc<[f32]>;

/// What a cached set is charged besides its ids (the entry, the `Arc`'s counts).
const ENTRY_OVERHEAD: u64 = 48;

#[derive(Debug, Clone, Copy, Default)]
struct SetWeight;

impl<T> quick_cache::Weighter<u64, Arc<[T]>> for SetWeight {
    fn weight(&self, _: &u64, set: &Arc<[T]>) -> u64 {
        std::mem::size_of_val::<[T]>(set) as u64 + ENTRY_OVERHEAD
    }
}

/// The sets the pipeline holds: `pending` until their batch commits, then in `cache` (when
/// it has room) until evicted or erased.
pub(super) struct Sets<T = u32> {
    pending: FastMap<u64, Arc<[T]>>,
    /// `None` when the store keeps its sets in memory itself.
    cache: Option<Cache<u64, Arc<[T]>, SetWeight>>,
}

impl<T> std::fmt::Debug for Sets<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sets")
            .field("pending", &self.pending.len())
            .field("cached", &self.cache.as_ref().map_or(0, |c| c.len()))
            .finish()
    }
}

impl<T: Send + Sync + 'static> Sets<T> {
    /// Sets with a cache of at most `cache_bytes` (none for 0).
    pub(super) fn new(cache_bytes: u64) -> Sets<T> {
        // quick_cache sizes its table from the expected count; sets average a few kilobytes.
        let cache = (cache_bytes > 0).then(|| {
            let items = (cache_bytes / 4096).clamp(16, 1 << 20) as usize;
            Cache::with_weighter(items, cache_bytes, SetWeight)
        });
        Sets {
            pending: FastMap::default(),
            cache,
        }
    }

    /// The set of a record of the batch being built.
    pub(super) fn add_pending(&mut self, handle: u64, set: Arc<[T]>) {
        self.pending.insert(handle, set);
    }

    /// The batch committed: its sets become cached ones.
    pub(super) fn committed(&mut self) {
        match &self.cache {
            Some(cache) => {
                for (h, set) in self.pending.drain() {
                    cache.insert(h, set);
                }
            }
            None => self.pending.clear(),
        }
    }

    /// The records below handle `bound` committed (a batch committed in the background
    /// while later records were decided): their sets become cached ones.
    pub(super) fn committed_before(&mut self, bound: u64) {
        let done = self.pending.extract_if(|&h, _| h < bound);
        match &self.cache {
            Some(cache) => {
                for (h, set) in done {
                    cache.insert(h, set);
                }
            }
            None => done.for_each(drop),
        }
    }

    /// Forgets a record's set (erasure): nothing of it stays in memory.
    pub(super) fn remove(&mut self, handle: u64) {
        self.pending.remove(&handle);
        if let Some(cache) = &self.cache {
            cache.remove(&handle);
        }
    }

    /// The set of `handle` if it is in memory.
    pub(super) fn get(&self, handle: u64) -> Option<Arc<[T]>> {
        self.pending
            .get(&handle)
            .cloned()
            .or_else(|| self.cache.as_ref()?.get(&handle))
    }

    /// Keeps a set read from the store for the next time it is asked for.
    /// The entries of `handles`, in order: those held (pending or cached), the rest from
    /// one call of `fetch` (one round trip for a remote store), cached.
    ///
    /// # Errors
    /// `fetch`'s.
    pub(super) fn get_or_fetch(
        &self,
        handles: &[u64],
        fetch: impl FnOnce(&[u64]) -> crate::Result<Vec<Option<Vec<T>>>>,
    ) -> crate::Result<Vec<Option<Arc<[T]>>>> {
        let mut found: Vec<Option<Arc<[T]>>> = handles.iter().map(|&h| self.get(h)).collect();
        let missing: Vec<u64> = handles
            .iter()
            .zip(&found)
            .filter(|(_, s)| s.is_none())
            .map(|(&h, _)| h)
            .collect();
        if missing.is_empty() {
            return Ok(found);
        }
        let mut fetched = fetch(&missing)?.into_iter();
        for (&h, slot) in handles.iter().zip(&mut found) {
            if slot.is_none() {
                *slot = fetched.next().flatten().map(|set| {
                    let set = Arc::<[T]>::from(set);
                    self.fetched(h, &set);
                    set
                });
            }
        }
        Ok(found)
    }

    pub(super) fn fetched(&self, handle: u64, set: &Arc<[T]>) {
        if let Some(cache) = &self.cache {
            cache.insert(handle, set.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(n: u32) -> Set {
        (0..n).collect::<Vec<u32>>().into()
    }

    #[test]
    fn pending_sets_move_to_the_cache_on_commit_and_go_on_erasure() {
        let mut sets = Sets::new(1 << 20);
        sets.add_pending(1, set(10));
        assert_eq!(sets.get(1).as_deref(), Some(&set(10)[..]));
        sets.committed();
        assert!(sets.pending.is_empty());
        assert_eq!(sets.get(1).as_deref(), Some(&set(10)[..]));
        sets.remove(1);
        assert_eq!(sets.get(1), None);
        sets.fetched(2, &set(3));
        assert_eq!(sets.get(2).as_deref(), Some(&set(3)[..]));
    }

    #[test]
    fn sets_below_a_committed_bound_move_to_the_cache_and_later_ones_stay_pending() {
        let mut sets = Sets::new(1 << 20);
        for h in 1..=6 {
            sets.add_pending(h, set(h as u32));
        }
        sets.committed_before(4);
        let mut pending: Vec<u64> = sets.pending.keys().copied().collect();
        pending.sort_unstable();
        assert_eq!(pending, [4, 5, 6]);
        for h in 1..=6 {
            assert_eq!(sets.get(h).as_deref(), Some(&set(h as u32)[..]), "{h}");
        }
        let mut uncached = Sets::new(0);
        uncached.add_pending(1, set(1));
        uncached.add_pending(2, set(2));
        uncached.committed_before(2);
        assert_eq!(uncached.get(1), None);
        assert!(uncached.get(2).is_some());
    }

    #[test]
    fn without_a_cache_only_pending_sets_are_held() {
        let mut sets = Sets::new(0);
        sets.add_pending(1, set(10));
        sets.committed();
        assert_eq!(sets.get(1), None);
        sets.fetched(2, &set(3));
        assert_eq!(sets.get(2), None);
    }

    #[test]
    fn the_cache_stays_within_its_budget() {
        let budget = 64 * 1024;
        let sets = Sets::new(budget);
        for h in 0..1000 {
            sets.fetched(h, &set(1000));
        }
        let cache = sets.cache.as_ref().expect("a cache");
        assert!(cache.weight() <= budget, "{} > {budget}", cache.weight());
        assert!(cache.len() >= 2, "the cache keeps what fits");
    }
}
