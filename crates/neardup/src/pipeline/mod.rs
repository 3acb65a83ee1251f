//! The deduplication pipeline: [`Deduper`] drives records through exact tier, SimHash
//! candidates, Jaccard verification and the merge, against a [`Store`].
//!
//! Analysis (normalising, shingling, fingerprinting) runs in parallel; probing, deciding and
//! inserting run in input order, so results are deterministic. Each call to
//! [`Deduper::process`] ends with one atomic [`Store::commit`].
//!
//! One module per stage, in the order a record goes through them; each adds its own
//! `impl Deduper` block over the state defined here:
//! - `builder`: [`DeduperBuilder`] opens a deduper over a store (profile check, index rebuilt);
//! - `analyze`: [`Analyzer`] and [`PreparedRecord`], analysis apart from the deduper;
//! - `boilerplate`: per-host boilerplate learned, and the furniture analysis leaves out;
//! - `records`: what the deduper keeps in memory of each stored record;
//! - `candidates`: index probes, presearch, verification, index sizing, [`Deduper::query`];
//! - `cluster`: complete linkage against a cluster's members, and fusing clusters;
//! - `decide`: the decision of each record, in input order, and its [`Outcome`];
//! - `commit`: the store's lock, other processes' commits, commits behind;
//! - `lifecycle`: erasure, expiry, and the sliding window's eviction;
//! - `views`: read-only views of records and clusters, and [`DedupStats`];
//! - `semantic`: the semantic stage's embeddings and its match, for records no Jaccard
//!   match took in;
//! - `decision` (the [`Rule`]), `reevaluate`, `runner` (the batch loop) and `sets` (the
//!   verification sets' and embeddings' cache).

mod analyze;
mod boilerplate;
mod builder;
mod candidates;
mod cluster;
mod commit;
mod decide;
mod decision;
mod lifecycle;
mod records;
mod reevaluate;
mod runner;
mod semantic;
mod sets;
mod views;

use std::collections::HashMap;
use std::sync::Arc;

pub use analyze::{text_hash, Analyzer, FirstPass, PreparedRecord, SeenTexts};
pub use builder::{DeduperBuilder, DEFAULT_SET_CACHE_BYTES};
pub use decide::{Outcome, VerifiedPair};
pub use decision::default_min_jaccard;
pub use decision::{
    Decision, Linkage, MergeRule, Rule, ShortText, DEFAULT_CHAIN_FLOOR, DEFAULT_CLUSTER_QUORUM,
    DEFAULT_CODE_MIN_JACCARD, DEFAULT_LINKAGE, DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_DISTANCE,
    DEFAULT_MIN_CLUSTER_JACCARD, DEFAULT_MIN_JACCARD, DEFAULT_MIN_WORDS, DEFAULT_SHORT_TEXT,
};
pub use reevaluate::Change;
pub use runner::{BoilerplatePass, Runner, Sink, Source, Totals};
pub use views::{ClusterPair, ClusterSample, ClusterView, DedupStats, RecordView};

use analyze::TextEntry;
use boilerplate::HostState;
use candidates::IndexKind;
use records::Meta;

use crate::fingerprint::SimHasher;
use crate::index::AutoIndex;
use crate::record::Timestamp;
use crate::store::Store;
use crate::text::Boilerplate;
// What the tests (`use super::*`) take from here besides.
#[cfg(test)]
use {
    crate::{record::Record, Error},
    decide::PRESEARCH_WINDOW,
};

/// The maps over every stored record (a million entries and more, touched several times
/// per decision): foldhash, several times cheaper than SipHash for integer keys, and
/// seeded per process (ids come from users).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// The near-duplicate pipeline over a store.
pub struct Deduper<S: Store> {
    /// Whether outcomes list every verified pair ([`Outcome::pairs`]).
    collect_pairs: bool,
    hasher: SimHasher,
    /// Character n-gram hasher for short records, in short-text mode.
    short_hasher: Option<SimHasher>,
    rule: Rule,
    store: S,
    index: AutoIndex,
    /// Fingerprints of short records (character n-grams), in short-text mode.
    short_index: AutoIndex,
    short_planned_for: u64,
    index_planned_for: u64,
    meta: FastMap<u64, Meta>,
    by_id: FastMap<Arc<str>, u64>,
    by_content: FastMap<u128, u64>,
    /// Text hash -> the record stored by this deduper whose analysis later records of the
    /// same text take ([`Analysed::SameText`](analyze::Analysed::SameText)). Emptied by any
    /// erasure.
    by_text: FastMap<u128, TextEntry>,
    /// Survivor handle -> member handles (survivor included).
    members: FastMap<u64, Vec<u64>>,
    /// Survivor handle -> an upper bound on the Jaccard distance of every member with the
    /// survivor's features to the survivor (see [`Bound`](cluster::Bound)), where one is
    /// known: complete linkage then accepts a record within the threshold of the whole
    /// cluster at once.
    /// Whatever changes a cluster's members otherwise drops its entry.
    radius: FastMap<u64, f32>,
    hosts: HashMap<String, HostState>,
    /// Every host's boilerplate together, what analysis leaves out of every record: see
    /// [`furnish`](Self::furnish).
    furniture: Arc<Boilerplate>,
    /// Bumped whenever `hosts` changes, so analyses made with older boilerplate are redone.
    generation: u64,
    next_handle: u64,
    /// Verification sets not committed yet, and recently used ones.
    sets: sets::Sets,
    /// The semantic stage's model, when [`Rule::semantic`] is on.
    embedder: Option<Arc<dyn crate::semantic::Embed>>,
    /// Sentence embeddings not committed yet, and recently used ones (semantic stage).
    embeddings: sets::Sets<f32>,
    /// Records indexed so far in the window being decided: (handle, index), and their
    /// indexed bits apart, for the index's vectorised scan (the default target has no
    /// `popcnt`: a scalar loop over the window was 3% of a run's instructions).
    group: Vec<(u64, IndexKind)>,
    group_fps: Vec<u64>,
    /// (first seen, handle) of records not yet evicted by a sliding window; only once
    /// [`evict_from_index_before`](Self::evict_from_index_before) is used.
    window_queue: Option<std::collections::BTreeSet<(Timestamp, u64)>>,
    poisoned: bool,
    /// A batch handed to the store by [`process_prepared_behind`](Self::process_prepared_behind)
    /// whose commit is not confirmed yet: the handles below this are in it or before it.
    behind: Option<u64>,
}

impl<S: Store> std::fmt::Debug for Deduper<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deduper")
            .field("rule", &self.rule)
            .field("records", &self.meta.len())
            .finish()
    }
}

#[cfg(test)]
mod tests;
