//! `AutoIndex`: the index a [`plan`](super::plan) picks for an expected size and radius.

use super::plan::{choose_layout, LayoutKind, LayoutPlan, PlanRequest};
use super::{
    delegate_hamming_index, BandIndex, HammingIndex, IndexError, IndexStats, LinearIndex, Match,
    MihIndex, PermutedIndex, QueryStats,
};

#[derive(Debug, Clone)]
enum Inner {
    Linear(LinearIndex),
    Bands(BandIndex),
    Permuted(PermutedIndex),
    Mih(MihIndex),
}

/// Makes one [`HammingIndex`] call on whichever index the plan chose (the `$reach` of
/// [`delegate_hamming_index!`]).
macro_rules! each {
    ($auto:ident => $name:ident($($arg:ident),*)) => {
        {
            let AutoIndex { inner, .. } = $auto;
            match inner {
                Inner::Linear(index) => index.$name($($arg),*),
                Inner::Bands(index) => index.$name($($arg),*),
                Inner::Permuted(index) => index.$name($($arg),*),
                Inner::Mih(index) => index.$name($($arg),*),
            }
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
    delegate_hamming_index!(each);
}
