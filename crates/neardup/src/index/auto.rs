//! `AutoIndex`: the index a [`plan`](super::plan) picks for an expected size and radius.

use super::plan::{choose_layout, LayoutKind, LayoutPlan, PlanRequest};
use super::{
    BandIndex, HammingIndex, IndexError, IndexStats, LinearIndex, Match, MihIndex, PermutedIndex,
    QueryStats,
};

#[derive(Debug, Clone)]
enum Inner {
    Linear(LinearIndex),
    Bands(BandIndex),
    Permuted(PermutedIndex),
    Mih(MihIndex),
}

/// Forwards a call to whichever index the plan chose.
macro_rules! each {
    ($self:expr, $index:ident => $call:expr) => {
        match $self {
            Inner::Linear($index) => $call,
            Inner::Bands($index) => $call,
            Inner::Permuted($index) => $call,
            Inner::Mih($index) => $call,
        }
    };
}

/// An index whose layout is chosen by [`choose_layout`] for an expected number of
/// fingerprints and a radius.
///
/// ```
/// use neardup::index::{AutoIndex, HammingIndex, Match};
/// let mut index = AutoIndex::for_size(1_000_000, 3)?;
/// index.insert(7, 0xABCD)?;
/// assert_eq!(index.query(0xABCD ^ 1, 3)?, vec![Match { distance: 1, id: 7 }]);
/// println!("{}", index.plan()); // the chosen layout and its expected costs
/// Ok::<(), neardup::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AutoIndex {
    inner: Inner,
    plan: LayoutPlan,
}

impl AutoIndex {
    /// The cheapest layout for `expected_len` fingerprints at `max_distance` bits.
    ///
    /// # Errors
    /// As [`choose_layout`] (never for an unlimited budget) and the index builders.
    pub fn for_size(expected_len: u64, max_distance: u32) -> Result<Self, IndexError> {
        Self::with_plan(choose_layout(&PlanRequest::new(
            expected_len,
            max_distance,
        ))?)
    }

    /// The index a plan describes.
    ///
    /// # Errors
    /// [`IndexError::InvalidLayout`] when the plan's layout cannot be built.
    pub fn with_plan(plan: LayoutPlan) -> Result<Self, IndexError> {
        let inner = match plan.kind {
            LayoutKind::Linear => Inner::Linear(LinearIndex::new()),
            LayoutKind::Bands { bands } => Inner::Bands(BandIndex::new(bands)?),
            LayoutKind::Permuted(layout) => Inner::Permuted(PermutedIndex::with_layout(layout)?),
            LayoutKind::Mih { substrings } => Inner::Mih(MihIndex::new(substrings)?),
        };
        Ok(AutoIndex { inner, plan })
    }

    /// The plan the layout came from.
    pub fn plan(&self) -> &LayoutPlan {
        &self.plan
    }

    /// Inserts many `(id, fingerprint)` pairs and merges them into the tables at once.
    ///
    /// # Errors
    /// [`IndexError::DuplicateId`] at the first id already present (the pairs before it
    /// stay inserted), [`IndexError::Full`] past 2^32 - 1 rows.
    pub fn extend<I: IntoIterator<Item = (u64, u64)>>(
        &mut self,
        items: I,
    ) -> Result<(), IndexError> {
        match &mut self.inner {
            Inner::Linear(index) => items
                .into_iter()
                .try_for_each(|(id, fp)| index.insert(id, fp)),
            Inner::Bands(index) => index.extend(items),
            Inner::Permuted(index) => index.extend(items),
            Inner::Mih(index) => index.extend(items),
        }
    }
}

impl HammingIndex for AutoIndex {
    fn insert(&mut self, id: u64, fingerprint: u64) -> Result<(), IndexError> {
        each!(&mut self.inner, index => index.insert(id, fingerprint))
    }

    fn replace(&mut self, id: u64, fingerprint: u64) -> Result<Option<u64>, IndexError> {
        each!(&mut self.inner, index => index.replace(id, fingerprint))
    }

    fn remove(&mut self, id: u64) -> Option<u64> {
        each!(&mut self.inner, index => index.remove(id))
    }

    fn get(&self, id: u64) -> Option<u64> {
        each!(&self.inner, index => index.get(id))
    }

    fn query_nearest_into(
        &self,
        fingerprint: u64,
        max_distance: u32,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> Result<QueryStats, IndexError> {
        each!(&self.inner, index => index.query_nearest_into(fingerprint, max_distance, limit, out))
    }

    fn query_nearest_batch(
        &self,
        fingerprints: &[u64],
        max_distance: u32,
        limit: usize,
        out: &mut Vec<Vec<Match>>,
    ) -> Result<QueryStats, IndexError> {
        each!(&self.inner, index => index.query_nearest_batch(fingerprints, max_distance, limit, out))
    }

    fn query_batch(
        &self,
        fingerprints: &[u64],
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
    ) -> Result<QueryStats, IndexError> {
        each!(&self.inner, index => index.query_batch(fingerprints, max_distance, out))
    }

    fn max_supported_distance(&self) -> u32 {
        each!(&self.inner, index => index.max_supported_distance())
    }

    fn len(&self) -> usize {
        each!(&self.inner, index => index.len())
    }

    fn memory_bytes(&self) -> usize {
        each!(&self.inner, index => index.memory_bytes())
    }

    fn compact(&mut self) {
        each!(&mut self.inner, index => index.compact())
    }

    fn settle(&mut self) {
        each!(&mut self.inner, index => index.settle())
    }

    fn stats(&self) -> IndexStats {
        each!(&self.inner, index => index.stats())
    }
}
