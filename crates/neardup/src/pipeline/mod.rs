//! The deduplication pipeline: [`Deduper`] drives records through exact tier, SimHash
//! candidates, Jaccard verification and the merge, against a [`Store`].
//!
//! Analysis (normalising, shingling, fingerprinting) runs in parallel; probing, deciding and
//! inserting run in input order, so results are deterministic. Each call to
//! [`Deduper::process`] ends with one atomic [`Store::commit`].

mod decision;
mod reevaluate;
mod runner;
mod sets;
use sets::Set;

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

pub use decision::{
    Decision, Linkage, MergeRule, Rule, ShortText, DEFAULT_CHAIN_FLOOR, DEFAULT_CLUSTER_QUORUM,
    DEFAULT_LINKAGE, DEFAULT_MAX_DISTANCE, DEFAULT_MIN_CLUSTER_JACCARD, DEFAULT_MIN_JACCARD,
    DEFAULT_MIN_WORDS, DEFAULT_SHORT_TEXT,
};
pub use reevaluate::Change;
pub use runner::{BoilerplatePass, Runner, Sink, Source, Totals};

use crate::fingerprint::{Field, FingerprintBits, Scratch, SimHasher};
use crate::index::{AutoIndex, HammingIndex, IndexStats, Match};
use crate::record::{Record, Timestamp};
use crate::store::{
    Arrival, Batch, Features, HostBoilerplate, MergeLogEntry, NewRecord, Rejection, Store,
    StoredRecord,
};
use crate::text::Boilerplate;
use crate::text::TokenRule;
use crate::verify::{id_jaccard, Scores};
use crate::{Error, Result};

/// What the pipeline keeps in memory per record.
#[derive(Debug, Clone)]
struct Meta {
    id: Arc<str>,
    survivor: u64,
    first_seen: Timestamp,
    url: Option<Box<str>>,
    content_hash: u128,
    fingerprint: u128,
    retention_class: Option<Arc<str>>,
    features: Features,
    /// An upper bound on the record's Jaccard distance to its survivor, for complete linkage.
    bound: Bound,
}

/// An upper bound on a record's Jaccard distance (1 - Jaccard of the shingle sets) to the
/// survivor `of`; it says nothing once the record's survivor is another (an erasure, a
/// re-evaluation or a survivor displaced by an earlier record may change it).
///
/// Jaccard distance is a metric, so a record `x` whose distance to a survivor `s` is
/// `d(x, s)` is within `d(x, s) + b` of every member bound by `b`: complete linkage compares
/// `x` with a member only when that sum exceeds what the threshold allows. Near copies sit
/// a few hundredths from their survivor, so joining a cluster of thousands of them costs a
/// comparison or two, not one per member (it was quadratic in the cluster's size).
#[derive(Debug, Clone, Copy)]
struct Bound {
    of: u64,
    distance: f32,
}

impl Bound {
    const NONE: Bound = Bound {
        of: u64::MAX,
        distance: 1.0,
    };

    /// A bound of at least `distance` (rounded up to `f32`, so that it stays a bound).
    fn new(of: u64, distance: f64) -> Bound {
        let d = distance.clamp(0.0, 1.0) as f32;
        let distance = if f64::from(d) < distance {
            d.next_up()
        } else {
            d
        };
        Bound { of, distance }
    }
}

/// What a record must have with a cluster's members to join it: Jaccard at least `floor`
/// with every one, and at least `verify` with a `quorum` share of them (copies counted).
/// A quorum of 0 is complete linkage at `floor`; `verify` then plays no part.
#[derive(Debug, Clone, Copy)]
struct Link {
    floor: f64,
    verify: f64,
    quorum: f64,
}

impl Link {
    /// Single linkage: any verified match links (see [`Linkage::Single`]).
    const SINGLE: Link = Link {
        floor: 0.0,
        verify: 0.0,
        quorum: 0.0,
    };

    /// Whether every record links, so nothing need be measured.
    fn is_single(self) -> bool {
        self.floor <= 0.0 && self.quorum <= 0.0
    }

    /// The largest Jaccard distance to any member, and the largest that counts toward the
    /// quorum.
    fn distances(self) -> (f64, f64) {
        let floor = 1.0 - self.floor;
        if self.quorum > 0.0 {
            (floor, 1.0 - self.verify.max(self.floor))
        } else {
            (floor, floor)
        }
    }

    /// Of `total` members (copies counted), how many must verify.
    fn needed(self, total: usize) -> usize {
        // A hair under the product, so that 0.8 of 5 asks 4 despite rounding.
        ((self.quorum * total as f64) - 1e-9).ceil().max(0.0) as usize
    }
}

/// Tallies a record's links to a cluster's members as they are measured.
struct Tally {
    link: Link,
    /// Distances within which a member is at the floor, and verified.
    floor_d: f64,
    verify_d: f64,
    /// Members counted (copies included), and of them verified and not.
    total: usize,
    verified: usize,
    unverified: usize,
}

impl Tally {
    fn new(link: Link, total: usize) -> Tally {
        let (floor_d, verify_d) = link.distances();
        Tally {
            link,
            floor_d,
            verify_d,
            total,
            verified: 0,
            unverified: 0,
        }
    }

    /// Counts `copies` members at Jaccard distance `d`; false when the record can no longer
    /// link.
    fn add(&mut self, d: f64, copies: usize) -> bool {
        if d > self.floor_d {
            return false;
        }
        if d <= self.verify_d {
            self.verified += copies;
        } else {
            self.unverified += copies;
        }
        self.unverified + self.link.needed(self.total) <= self.total
    }

    /// Leaves out `copies` members that cannot be measured (their sets are gone).
    fn skip(&mut self, copies: usize) {
        self.total -= copies;
    }

    /// Whether members within `bound` of the record verify without measurement (a little
    /// less than the threshold, so that rounding in a sum of bounds never admits a pair
    /// below it).
    fn verifies(&self, bound: f64) -> bool {
        bound <= self.verify_d - 1e-9
    }

    /// Files a text (a member and its copies) within `bound` of the record: counted as
    /// verified when the bound shows it, else to be measured, in `soft` when it certainly
    /// reaches the floor (measured only while the quorum is short), in `hard` otherwise.
    fn file(
        &mut self,
        bound: f64,
        text: (u64, usize),
        soft: &mut Vec<(u64, usize)>,
        hard: &mut Vec<(u64, usize)>,
    ) {
        if self.verifies(bound) {
            self.verified += text.1;
        } else if bound <= self.floor_d - 1e-9 {
            soft.push(text);
        } else {
            hard.push(text);
        }
    }

    /// Whether enough members verified that the rest need only reach the floor.
    fn quorate(&self) -> bool {
        self.verified >= self.link.needed(self.total)
    }
}

/// What complete linkage found out about a record and a cluster.
#[derive(Debug, Default)]
struct Linked {
    /// Whether the record links to the cluster (see [`Link`]).
    linked: bool,
    /// An upper bound on the record's distance to the survivor.
    to_survivor: Option<f64>,
    /// Members' distances to the survivor measured on the way (exact), to keep.
    learned: Vec<(u64, f64)>,
    /// The record's exact distances to the members it was compared with, by handle.
    compared: Vec<(u64, f64)>,
}

/// What a decided record leaves for [`Deduper::fuse_clusters`]: its verified matches in
/// clusters other than the one it joined, best first, and the linkage it joined under.
struct Fusable {
    matches: Vec<(u64, Scores)>,
    link: Link,
    features: Features,
    rule: MergeRule,
}

/// The most member pairs [`Deduper::fuse_clusters`] compares for one record, over all the
/// clusters it tries to fuse: clusters that would need more (dozens of distinct texts
/// each) stay apart, so a record costs at most this many comparisons more.
const MAX_FUSE_PAIRS: usize = 2048;

/// A host's boilerplate as the pipeline uses it.
#[derive(Debug, Clone)]
struct HostState {
    stored: HostBoilerplate,
    set: Arc<Boilerplate>,
}

/// Whether sets of sizes `a` and `b` cannot reach Jaccard `min`: |A ∩ B| / |A ∪ B| is at most
/// min(|A|, |B|) / max(|A|, |B|).
fn cannot_reach(a: usize, b: usize, min: f64) -> bool {
    (a.min(b) as f64) < min * a.max(b) as f64
}

/// Verification failures logged per record (the nearest ones).
const MAX_LOGGED_REJECTIONS: usize = 8;

/// Candidates with their scores, by handle.
type Scored = Vec<(u64, Scores)>;

/// The maps over every stored record (a million entries and more, touched several times
/// per decision): foldhash, several times cheaper than SipHash for integer keys, and
/// seeded per process (ids come from users).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// Which Hamming index a record is searched in and stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexKind {
    Words,
    Chars,
}

/// A record's index hits among the records stored before its group, with the Jaccard
/// similarity of each (`None`: the candidate's set is gone).
struct Presearched {
    hits: Vec<Match>,
    known: Vec<(u64, Option<f64>)>,
}

/// Records searched in parallel before being decided one by one: large enough to keep
/// every thread busy, small enough that scanning the window's own records (each record is
/// compared with those decided before it in the window) stays negligible.
const PRESEARCH_WINDOW: usize = 1024;

/// Windows smaller than this are searched on the calling thread: a service's group commits
/// hold a few records to a few dozen, and handing those to the thread pool (waking its
/// threads on cores the request handlers share) made the insert tail no shorter (server-side
/// p99 at 5,000 inserts/s: 12-23 ms on the calling thread against 18-22 ms in the pool, the
/// same throughput).
const PARALLEL_PRESEARCH_MIN: usize = 64;

/// A record analysed by an [`Analyzer`], waiting for [`Deduper::process_prepared`] or
/// [`Deduper::query_prepared`].
#[derive(Debug)]
pub struct PreparedRecord {
    analysis: Analysed,
    /// The deduper's boilerplate generation the analysis saw.
    generation: u64,
}

/// What analysis made of a record.
#[derive(Debug)]
enum Analysed {
    /// Its analysis, or why it cannot be used.
    Done(Result<Prepared, String>),
    /// Not analysed: its text (this hash of its fields, [`text_hash`]) is that of a record
    /// before it in the run, whose analysis it takes when it is decided.
    SameText(u128),
}

impl PreparedRecord {
    /// Its fingerprint's value, unless the record cannot be used (or was not analysed:
    /// its text repeats an earlier record's, see [`Analyzer::prepare_run`]).
    pub fn fingerprint(&self) -> Option<u128> {
        self.done().map(|p| p.fingerprint)
    }

    /// Its word count, unless the record cannot be used (or was not analysed).
    pub fn tokens(&self) -> Option<usize> {
        self.done().map(|p| p.tokens)
    }

    /// Why the record cannot be used (no words to fingerprint, for one), if it cannot.
    pub fn rejection(&self) -> Option<&str> {
        match &self.analysis {
            Analysed::Done(Err(reason)) => Some(reason),
            _ => None,
        }
    }

    fn done(&self) -> Option<&Prepared> {
        match &self.analysis {
            Analysed::Done(Ok(p)) => Some(p),
            _ => None,
        }
    }
}

/// The texts of the records a run's [`Analyzer::prepare_run`] calls have analysed, so that
/// a record whose fields repeat an earlier record's byte for byte (a page crawled under two
/// URLs, an article syndicated verbatim: a fifth of the bench corpus) is not analysed again:
/// [`Deduper::process_prepared`] gives it the earlier record's analysis, which is what its
/// own would be. It remembers at most [`SeenTexts::CAPACITY`] texts, 16 bytes each.
#[derive(Debug, Default)]
pub struct SeenTexts {
    texts: FastSet<u128>,
}

impl SeenTexts {
    /// How many distinct texts are remembered; later ones are analysed whatever repeats.
    pub const CAPACITY: usize = 1 << 22;

    /// None seen yet.
    pub fn new() -> SeenTexts {
        SeenTexts::default()
    }
}

/// A record's analysis as far as it does not depend on boilerplate, made while boilerplate is
/// learned (see [`Analyzer::first_pass`]) and finished by [`Analyzer::prepare_run`] once it
/// is known, instead of analysing the record again.
#[derive(Debug, Clone)]
pub struct FirstPass {
    /// The record's [`text_hash`]: a record of other text is analysed afresh.
    text: u128,
    pre: crate::fingerprint::PreAnalysis,
}

impl FirstPass {
    /// The record's distinct shingles (boilerplate included), in no particular order: what
    /// boilerplate learning counts.
    pub fn shingles(&self) -> &Arc<[u64]> {
        self.pre.shingles()
    }

    /// About how many bytes of memory it holds.
    pub fn heap_bytes(&self) -> usize {
        self.pre.heap_bytes()
    }
}

/// A hash of what a record's analysis depends on: each field's weight and text, in order.
/// Records with equal hashes are analysed alike (under one profile and boilerplate), so a
/// caller may take one's analysis, or its distinct shingles, for the other's.
pub fn text_hash(record: &Record) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for f in &record.fields {
        h.update(&f.weight.to_le_bytes());
        h.update(&(f.text.len() as u64).to_le_bytes());
        h.update(f.text.as_bytes());
    }
    h.digest128()
}

/// Analysis apart from the deduper, so it can run on other threads and outside any lock
/// around the deduper: see [`Deduper::analyzer`].
#[derive(Debug, Clone)]
pub struct Analyzer {
    hasher: SimHasher,
    short: Option<(SimHasher, usize)>,
    furniture: Arc<Boilerplate>,
    generation: u64,
}

impl Analyzer {
    fn as_ref(&self) -> AnalyzerRef<'_> {
        AnalyzerRef {
            hasher: &self.hasher,
            short: self.short.as_ref().map(|(h, w)| (h, *w)),
            furniture: &self.furniture,
            generation: self.generation,
        }
    }

    /// Analyses records in parallel (normalise, shingle, fingerprint, content hash).
    pub fn prepare(&self, records: &[Record]) -> Vec<PreparedRecord> {
        self.as_ref().prepare(records)
    }

    /// Analyses one record on this thread.
    pub fn prepare_one(&self, record: &Record, scratch: &mut Scratch) -> PreparedRecord {
        self.as_ref().prepare_one(record, scratch)
    }

    /// The half of `record`'s analysis that boilerplate does not change, for
    /// [`prepare_run`](Self::prepare_run) to finish; `None` where the profile or the record
    /// needs the whole analysis then (weighted fields, a profile other than the default
    /// kind of vote, a record short enough for the short-text rule, no words).
    pub fn first_pass(&self, record: &Record) -> Option<FirstPass> {
        let fields = fields_of(record);
        let pre = with_scratch(|scratch| self.hasher.pre_analyze(&fields, scratch))?;
        let pre = pre.ok()?;
        if self
            .short
            .as_ref()
            .is_some_and(|&(_, min_words)| pre.token_count() < min_words)
        {
            return None;
        }
        Some(FirstPass {
            text: text_hash(record),
            pre,
        })
    }

    /// [`prepare`](Self::prepare) for one batch of a run whose batches are all analysed
    /// here, in order, and processed by [`Deduper::process_prepared`] in the same order: a
    /// record whose fields repeat those of a record before it in the run (`seen`) is not
    /// analysed; it gets that record's analysis when it is decided (or its own then, when
    /// that record was not stored). A record with its [`first_pass`](Self::first_pass) in
    /// `first` (one entry per record, or none at all) has that analysis finished.
    pub fn prepare_run(
        &self,
        records: &[Record],
        seen: &mut SeenTexts,
        mut first_passes: Vec<Option<FirstPass>>,
    ) -> Vec<PreparedRecord> {
        assert!(
            first_passes.is_empty() || first_passes.len() == records.len(),
            "one entry per record"
        );
        first_passes.resize_with(records.len(), || None);
        let hashes: Vec<u128> = records.par_iter().map(text_hash).collect();
        // In input order: the first record of a text is analysed and remembered; a later
        // one takes its analysis, unless its own is at hand.
        let first: Vec<Option<bool>> = hashes
            .iter()
            .map(|h| {
                if seen.texts.contains(h) {
                    None
                } else if seen.texts.len() < SeenTexts::CAPACITY {
                    seen.texts.insert(*h);
                    Some(true)
                } else {
                    Some(false)
                }
            })
            .collect();
        let this = self.as_ref();
        records
            .par_iter()
            .zip(hashes.par_iter().zip(first.par_iter()))
            .zip(first_passes.par_iter())
            .map(|((r, (&h, &first)), first_pass)| match first {
                None => PreparedRecord {
                    analysis: Analysed::SameText(h),
                    generation: this.generation,
                },
                Some(remembered) => {
                    let mut p = match first_pass.as_ref().filter(|f| f.text == h) {
                        Some(f) => PreparedRecord {
                            analysis: Analysed::Done(with_scratch(|scratch| {
                                prepare_finished(this.hasher, this.furniture, r, f, scratch)
                            })),
                            generation: this.generation,
                        },
                        None => this.prepare_kept(r),
                    };
                    if let (true, Analysed::Done(Ok(p))) = (remembered, &mut p.analysis) {
                        p.text = Some(h);
                    }
                    p
                }
            })
            .collect()
    }

    /// The deduper's boilerplate generation this copy was taken at: when
    /// [`Deduper::analyzer_generation`] has moved on, take a new copy (records analysed
    /// by this one are analysed again when they are processed).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// A boilerplate generation no deduper of this process has had: generations come from one
/// counter, so an analysis made by one deduper (say, one opened over the same store before
/// it) is never taken for current by another whose boilerplate may differ.
fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

thread_local! {
    /// Each thread's analysis buffers, kept from record to record.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Runs one record's analysis `f` with this thread's scratch, then frees what a text of
/// megabytes grew in it.
fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> T) -> T {
    SCRATCH.with_borrow_mut(|scratch| {
        let out = f(scratch);
        scratch.release_large();
        out
    })
}

/// Borrowed analysis state, shared by [`Analyzer`] and [`Deduper::process`].
struct AnalyzerRef<'a> {
    hasher: &'a SimHasher,
    short: Option<(&'a SimHasher, usize)>,
    furniture: &'a Boilerplate,
    generation: u64,
}

impl AnalyzerRef<'_> {
    fn prepare(&self, records: &[Record]) -> Vec<PreparedRecord> {
        // One scratch per thread for good: rayon's `map_init` makes a fresh one for every
        // piece it splits the records into (about ten per call), and each grew its buffers
        // again from nothing. What a record of megabytes grew is freed after it.
        records.par_iter().map(|r| self.prepare_kept(r)).collect()
    }

    /// [`prepare_one`](Self::prepare_one) with this thread's scratch.
    fn prepare_kept(&self, record: &Record) -> PreparedRecord {
        with_scratch(|scratch| self.prepare_one(record, scratch))
    }

    fn prepare_one(&self, record: &Record, scratch: &mut Scratch) -> PreparedRecord {
        PreparedRecord {
            analysis: Analysed::Done(prepare(
                self.hasher,
                self.short,
                self.furniture,
                record,
                scratch,
            )),
            generation: self.generation,
        }
    }
}

/// One record after analysis, before the decision.
#[derive(Debug)]
struct Prepared {
    /// The record's host ([`Record::effective_host`]: a URL parse, done once, here).
    host: Option<String>,
    features: Features,
    language: Option<&'static str>,
    shingle_count: usize,
    boilerplate_removed: usize,
    fingerprint: u128,
    content_hash: u128,
    shingles: Set,
    tokens: usize,
    /// Its [`text_hash`], when [`Analyzer::prepare_run`] remembered it: the deduper then
    /// keeps its analysis for later records of the same text.
    text: Option<u128>,
}

/// What the deduper keeps of a record it stored, for later records of its text
/// ([`Analysed::SameText`]); the rest is in its `Meta` and its stored set.
#[derive(Debug, Clone, Copy)]
struct TextEntry {
    handle: u64,
    /// The boilerplate generation its analysis was made under.
    generation: u64,
    tokens: usize,
    shingle_count: usize,
    boilerplate_removed: usize,
    language: Option<&'static str>,
}

/// The outcome of one record of a [`Deduper::process`] call.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The record's id.
    pub id: String,
    /// What happened to it.
    pub decision: Decision,
    /// Its fingerprint, hex (absent for rejects).
    pub fingerprint: Option<String>,
    /// Merge-log entries this record caused (its own merge, or the displaced survivor's),
    /// then those of the clusters it fused (see [`fused`](Self::fused)).
    pub merges: Vec<MergeLogEntry>,
    /// How many other clusters this record bridged and fused with its own: the survivor of
    /// each fused cluster is merged (the last `fused` entries of `merges`).
    pub fused: usize,
    /// Shingle occurrences fingerprinted (after boilerplate removal).
    pub shingles: usize,
    /// Shingle occurrences removed as its host's boilerplate.
    pub boilerplate_removed: usize,
    /// Its language (ISO 639-3), when the profile detects languages.
    pub language: Option<String>,
    /// Its host ([`Record::effective_host`]), for per-host reports.
    pub host: Option<String>,
    /// Every stored record it verified against (the exact copy it matched, or each SimHash
    /// candidate that passed verification), whether or not it joined that record's
    /// cluster; empty unless [`Deduper::collect_pairs`] asked for them.
    pub pairs: Vec<VerifiedPair>,
}

/// A pair that passed verification: the arriving record and `other`, stored.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedPair {
    /// The stored record's id.
    pub other: String,
    /// Exact copy, or SimHash candidate verified by Jaccard.
    pub rule: MergeRule,
    /// Both scores.
    pub scores: Scores,
}

/// One stored record as the pipeline sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView {
    /// Its id.
    pub id: String,
    /// Its fingerprint, hex.
    pub fingerprint: String,
    /// Its cluster's survivor.
    pub survivor: String,
    /// When it was first seen.
    pub first_seen: Timestamp,
    /// Its source URL.
    pub url: Option<String>,
    /// Its retention class.
    pub retention_class: Option<String>,
    /// Whether the Hamming index holds it (not too short, not evicted by a window, not an
    /// exact copy of a record it holds).
    pub indexed: bool,
}

/// Per-cluster view for outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    /// The survivor's id.
    pub survivor: String,
    /// Every member's id (survivor first, then by first-seen and id).
    pub members: Vec<String>,
    /// Every member's source URL, in the same order, without repeats.
    pub source_urls: Vec<String>,
    /// The earliest first-seen time in the cluster.
    pub first_seen: Timestamp,
}

/// Two members of one cluster and the Jaccard similarity of their verification sets (see
/// [`Deduper::sample_cluster_pairs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterPair {
    /// One member's id.
    pub a: String,
    /// The other's.
    pub b: String,
    /// Their Jaccard similarity.
    pub jaccard: f64,
}

/// Sampled pairs of a cluster, weakest first, and the threshold its members were verified
/// at (see [`Deduper::sample_cluster_pairs`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterSample {
    /// The pairs, weakest first.
    pub pairs: Vec<ClusterPair>,
    /// The Jaccard threshold of the cluster's features: `min_jaccard` for word shingles,
    /// the short-text rule's for character n-grams.
    pub min_jaccard: f64,
}

/// Counters for reports and monitoring.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DedupStats {
    /// Records stored.
    pub records: usize,
    /// Clusters (survivors).
    pub clusters: usize,
    /// The largest cluster: thousands usually mean an empty identity field or an extraction
    /// failure, not real duplication (seed 000).
    pub largest_cluster: usize,
    /// The survivor of the largest cluster.
    pub largest_cluster_survivor: Option<String>,
    /// The Hamming index's shape (largest bucket, memory).
    pub index: IndexStats,
}

/// Builds a [`Deduper`].
#[derive(Debug, Clone)]
pub struct DeduperBuilder {
    hasher: SimHasher,
    rule: Rule,
    expected_records: u64,
    set_cache_bytes: u64,
}

/// How much memory the verification sets read back from a store may keep by default.
pub const DEFAULT_SET_CACHE_BYTES: u64 = 256 << 20;

impl DeduperBuilder {
    /// The fingerprint profile.
    pub fn hasher(mut self, hasher: SimHasher) -> Self {
        self.hasher = hasher;
        self
    }

    /// The decision thresholds.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rule = rule;
        self
    }

    /// How many records the index should be laid out for (beyond those stored).
    pub fn expected_records(mut self, n: u64) -> Self {
        self.expected_records = n;
        self
    }

    /// How many bytes of verification sets read back from the store are kept in memory for
    /// the next candidate that needs them (default [`DEFAULT_SET_CACHE_BYTES`]; 0 for none).
    /// Unused with a store that keeps its sets in memory itself.
    pub fn set_cache_bytes(mut self, bytes: u64) -> Self {
        self.set_cache_bytes = bytes;
        self
    }

    /// Opens the pipeline over `store`: checks the profile and rebuilds the index.
    ///
    /// # Errors
    /// [`Error::ConfigMismatch`] when the store holds fingerprints of another profile;
    /// [`Error::InvalidConfig`] for bad thresholds; store failures.
    pub fn open<S: Store>(self, mut store: S) -> Result<Deduper<S>> {
        self.rule.validate()?;
        let short_hasher = match self.rule.short_text {
            ShortText::ExactOnly => None,
            ShortText::CharNgrams { width, .. } => Some(
                SimHasher::builder()
                    .tokens(TokenRule::Characters)
                    .shingle_width(width)
                    .bits(self.hasher.profile().bits())
                    .build()?,
            ),
        };
        let profiles = [
            ("profile", Some(self.hasher.profile())),
            (
                "short_profile",
                short_hasher.as_ref().map(SimHasher::profile),
            ),
        ];
        for (key, profile) in profiles {
            let current = profile.map_or_else(|| "exact-only".to_owned(), |p| p.to_string());
            match store.meta(key)? {
                Some(stored) if stored != current && !profile.is_some_and(|p| p.reads(&stored)) => {
                    return Err(Error::ConfigMismatch { stored, current })
                }
                Some(_) => {}
                None => store.set_meta(key, &current)?,
            }
        }
        let mut stored = Vec::new();
        store.load(&mut |r| stored.push(r))?;
        let expected = self.expected_records.max(stored.len() as u64).max(1024);
        let short_radius = match self.rule.short_text {
            ShortText::CharNgrams { max_distance, .. } => max_distance,
            ShortText::ExactOnly => 0,
        };
        let store_sets_in_memory = store.sets_in_memory();
        let mut d = Deduper {
            collect_pairs: false,
            hasher: self.hasher,
            short_hasher,
            rule: self.rule,
            store,
            index_planned_for: expected,
            index: AutoIndex::for_size(expected, self.rule.max_distance)?,
            short_index: AutoIndex::for_size(1024, short_radius)?,
            short_planned_for: 1024,
            meta: FastMap::with_capacity_and_hasher(stored.len(), Default::default()),
            by_id: FastMap::with_capacity_and_hasher(stored.len(), Default::default()),
            by_content: FastMap::with_capacity_and_hasher(stored.len(), Default::default()),
            by_text: FastMap::default(),
            members: FastMap::default(),
            radius: FastMap::default(),
            hosts: HashMap::new(),
            furniture: Arc::default(),
            generation: next_generation(),
            next_handle: 1,
            sets: sets::Sets::new(if store_sets_in_memory {
                0
            } else {
                self.set_cache_bytes
            }),
            group: Vec::new(),
            group_fps: Vec::new(),
            window_queue: None,
            poisoned: false,
            behind: None,
        };
        let (mut words, mut chars) = (Vec::new(), Vec::new());
        for r in stored {
            d.next_handle = d.next_handle.max(r.handle + 1);
            d.remember(&r);
            if !d.indexes(r.handle, r.content_hash) {
                continue;
            }
            match r.features {
                Features::Words => words.push((r.handle, r.fingerprint as u64)),
                Features::Chars => chars.push((r.handle, r.fingerprint as u64)),
                Features::ExactOnly => {}
            }
        }
        if chars.len() > 1024 {
            d.short_planned_for = chars.len() as u64 * 2;
            d.short_index = AutoIndex::for_size(d.short_planned_for, short_radius)?;
        }
        d.index.extend(words)?;
        d.short_index.extend(chars)?;
        for (host, b) in d.store.boilerplate()? {
            let set = Arc::new(Boilerplate::from_hashes(b.shingles.iter().copied()));
            d.hosts.insert(host, HostState { stored: b, set });
        }
        d.furnish();
        Ok(d)
    }
}

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
    /// same text take ([`Analysed::SameText`]). Emptied by any erasure.
    by_text: FastMap<u128, TextEntry>,
    /// Survivor handle -> member handles (survivor included).
    members: FastMap<u64, Vec<u64>>,
    /// Survivor handle -> an upper bound on the Jaccard distance of every member with the
    /// survivor's features to the survivor (see [`Bound`]), where one is known: complete
    /// linkage then accepts a record within the threshold of the whole cluster at once.
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

impl Deduper<crate::store::MemoryStore> {
    /// A builder with the default profile and rule.
    pub fn builder() -> DeduperBuilder {
        DeduperBuilder {
            hasher: SimHasher::builder()
                .build()
                .expect("the default profile is valid"),
            rule: Rule::default(),
            expected_records: 0,
            set_cache_bytes: DEFAULT_SET_CACHE_BYTES,
        }
    }
}

impl<S: Store> Deduper<S> {
    /// The rule in force.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The fingerprint profile.
    pub fn hasher(&self) -> &SimHasher {
        &self.hasher
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Sets a store meta value of the caller's own (a key not used by neardup itself, such
    /// as `cli.defaults`), once every batch handed to the store is committed.
    ///
    /// # Errors
    /// A failed commit still in flight; store failures.
    pub fn set_store_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.wait_committed()?;
        self.store.set_meta(key, value)
    }

    /// Whether the stored record `h` of content hash `content` is the one its text is
    /// indexed under: the record the exact tier finds for that text (the first stored).
    /// Its exact copies stay out of the Hamming index: they are in its cluster, with its
    /// fingerprint and set (analysed under the same boilerplate), so a record near them is
    /// near it, and they only crowded its buckets and every candidate list it was on (a
    /// quarter of the 1 GB bench corpus's records are exact copies).
    fn indexes(&self, h: u64, content: u128) -> bool {
        self.by_content.get(&content) == Some(&h)
    }

    /// Puts the stored record `h` in the Hamming index of its features (if any); answers
    /// which.
    fn index_record(&mut self, h: u64) -> Result<Option<IndexKind>> {
        let m = &self.meta[&h];
        let fingerprint = m.fingerprint as u64;
        Ok(match m.features {
            Features::Words => {
                self.index.insert(h, fingerprint)?;
                Some(IndexKind::Words)
            }
            Features::Chars => {
                self.short_index.insert(h, fingerprint)?;
                Some(IndexKind::Chars)
            }
            Features::ExactOnly => None,
        })
    }

    /// Whether a sliding window has taken the stored record `h` out of the index and the
    /// exact tier (see [`evict_from_index_before`](Self::evict_from_index_before)).
    fn evicted(&self, h: u64) -> bool {
        self.window_queue
            .as_ref()
            .is_some_and(|q| !q.contains(&(self.meta[&h].first_seen, h)))
    }

    /// After the record of content hash `content` that the exact tier found for that text
    /// left it (erased or evicted), hands the text to another record of it among `members`
    /// not evicted, and indexes that one.
    fn hand_over_text(&mut self, content: u128, members: &[u64]) -> Result<()> {
        let other = self.copies_among(content, members).next();
        if let Some(other) = other {
            self.by_content.insert(content, other);
            self.index_record(other)?;
        }
        Ok(())
    }

    /// The records of content hash `content` among `members` (a cluster's, which holds
    /// every record of a text) that no sliding window has taken out.
    fn copies_among<'a>(
        &'a self,
        content: u128,
        members: &'a [u64],
    ) -> impl Iterator<Item = u64> + 'a {
        members
            .iter()
            .copied()
            .filter(move |&m| self.meta[&m].content_hash == content && !self.evicted(m))
    }

    fn remember(&mut self, r: &StoredRecord) {
        let id: Arc<str> = Arc::from(r.id.as_str());
        self.meta.insert(
            r.handle,
            Meta {
                id: id.clone(),
                survivor: r.survivor,
                first_seen: r.first_seen,
                url: r.url.as_deref().map(Box::from),
                content_hash: r.content_hash,
                fingerprint: r.fingerprint,
                retention_class: r.retention_class.as_deref().map(Arc::from),
                features: r.features,
                bound: Bound::NONE,
            },
        );
        self.by_id.insert(id, r.handle);
        self.by_content.entry(r.content_hash).or_insert(r.handle);
        let members = self.members.entry(r.survivor).or_default();
        members.push(r.handle);
        // A cluster of one is within 0 of its survivor; any other addition (a member, or a
        // survivor loaded after its members) leaves the radius unknown.
        if members.len() == 1 && r.survivor == r.handle {
            self.radius.insert(r.handle, 0.0);
        } else {
            self.radius.remove(&r.survivor);
        }
        if let Some(queue) = &mut self.window_queue {
            queue.insert((r.first_seen, r.handle));
        }
    }

    /// The boilerplate set of a host, if one was learned.
    pub fn boilerplate_of(&self, host: &str) -> Option<&Boilerplate> {
        self.hosts.get(host).map(|h| h.set.as_ref())
    }

    /// Every host with learned boilerplate: (host, pages, shingles).
    pub fn boilerplate_hosts(&self) -> Vec<(String, u64, usize)> {
        let mut v: Vec<_> = self
            .hosts
            .iter()
            .map(|(h, s)| (h.clone(), s.stored.pages, s.stored.shingles.len()))
            .collect();
        v.sort();
        v
    }

    /// Adds newly learned boilerplate: for each host, the union with what the store holds,
    /// committed at once.
    ///
    /// # Errors
    /// Store failures.
    pub fn learn_boilerplate(&mut self, learned: Vec<(String, u64, Vec<u64>)>) -> Result<()> {
        self.exclusive(|d, batch| {
            d.learn_boilerplate_into(learned, batch);
            Ok(())
        })
    }

    fn learn_boilerplate_into(&mut self, learned: Vec<(String, u64, Vec<u64>)>, batch: &mut Batch) {
        for (host, pages, shingles) in learned {
            let mut merged = HostBoilerplate { pages, shingles };
            if let Some(old) = self.hosts.get(&host) {
                merged.pages += old.stored.pages;
                merged.shingles.extend_from_slice(&old.stored.shingles);
                merged.shingles.sort_unstable();
                merged.shingles.dedup();
            }
            let set = Arc::new(Boilerplate::from_hashes(merged.shingles.iter().copied()));
            batch.boilerplate.push((host.clone(), merged.clone()));
            self.hosts.insert(
                host,
                HostState {
                    stored: merged,
                    set,
                },
            );
            self.generation = next_generation();
        }
        self.furnish();
    }

    /// Rebuilds the furniture, the union of every host's boilerplate, which
    /// analysis leaves out of every record wherever it was found.
    ///
    /// Boilerplate is learned per host (a shingle on more than a share of the host's pages)
    /// but left out everywhere: what a host repeats on page after page (its template, and
    /// text that travels with its documents, such as a licence paragraph or a man page's
    /// standard sections) then weighs the same in a copy of a page on a mirror, a
    /// republisher or a smaller host that learned nothing. Left out per host, a page and its
    /// copy elsewhere differed by all of the first host's furniture: on the 1 GB bench
    /// corpus, edited copies on smaller hosts sat 15-24 bits from their originals (0-3 before
    /// boilerplate removal) and were not found, and the end-to-end recall was 0.932; left out
    /// everywhere, 0.964 at precision 0.990.
    fn furnish(&mut self) {
        self.furniture = Arc::new(Boilerplate::from_hashes(
            self.hosts.values().flat_map(|h| h.set.iter()),
        ));
    }

    /// Runs one decide-and-commit cycle with exclusive access to the store: the store's lock
    /// is taken, changes other processes committed are applied first, `f` decides into a
    /// batch, and the batch is committed before the lock is released. Stores written by one
    /// process make the lock and the sync no-ops.
    fn exclusive<T>(&mut self, f: impl FnOnce(&mut Self, &mut Batch) -> Result<T>) -> Result<T> {
        self.check()?;
        self.wait_committed()?;
        self.store.lock()?;
        let result = self.sync_remote().and_then(|()| {
            let mut batch = Batch::default();
            let out = f(self, &mut batch)?;
            self.commit(batch)?;
            Ok(out)
        });
        if result.is_err() {
            // Memory may hold decisions the store does not: refuse further work.
            self.poisoned = true;
        }
        let unlocked = self.store.unlock();
        let out = result?;
        unlocked?;
        Ok(out)
    }

    /// Applies batches committed by other processes since this one last synchronised.
    fn sync_remote(&mut self) -> Result<()> {
        let mut remote = Vec::new();
        self.store.sync(&mut |b| remote.push(b))?;
        for batch in remote {
            self.apply_remote(batch)?;
        }
        Ok(())
    }

    /// Brings memory up to date with a batch another process committed. Idempotent.
    fn apply_remote(&mut self, batch: Batch) -> Result<()> {
        for n in &batch.records {
            let r = &n.record;
            if self.meta.contains_key(&r.handle) {
                continue;
            }
            self.next_handle = self.next_handle.max(r.handle + 1);
            self.remember(r);
            if self.indexes(r.handle, r.content_hash) {
                self.index_record(r.handle)?;
            }
        }
        for &h in &batch.erase {
            self.forget(h, &mut Batch::default())?;
        }
        for &(h, survivor) in &batch.survivor_updates {
            self.set_survivor(h, survivor);
        }
        if !batch.boilerplate.is_empty() {
            for (host, b) in batch.boilerplate {
                let set = Arc::new(Boilerplate::from_hashes(b.shingles.iter().copied()));
                self.hosts.insert(host, HostState { stored: b, set });
                self.generation = next_generation();
            }
            self.furnish();
        }
        Ok(())
    }

    /// Moves record `h` into the cluster of `survivor`.
    fn set_survivor(&mut self, h: u64, survivor: u64) {
        let Some(m) = self.meta.get_mut(&h) else {
            return;
        };
        let old = std::mem::replace(&mut m.survivor, survivor);
        self.radius.remove(&old);
        self.radius.remove(&survivor);
        if let Some(v) = self.members.get_mut(&old) {
            v.retain(|&x| x != h);
            if v.is_empty() {
                self.members.remove(&old);
            }
        }
        let v = self.members.entry(survivor).or_default();
        if !v.contains(&h) {
            v.push(h);
        }
    }

    fn check(&self) -> Result<()> {
        if self.poisoned {
            Err(Error::Poisoned)
        } else {
            Ok(())
        }
    }

    fn commit(&mut self, batch: Batch) -> Result<()> {
        match self.store.commit(&batch) {
            Ok(()) => {
                self.sets.committed();
                Ok(())
            }
            Err(e) => {
                self.poisoned = true;
                Err(e)
            }
        }
    }

    fn prepare(&self, record: &Record, scratch: &mut Scratch) -> Result<Prepared, String> {
        let short = self.short_hasher.as_ref().map(|h| (h, self.rule.min_words));
        prepare(&self.hasher, short, &self.furniture, record, scratch)
    }

    fn fingerprint_hex(&self, value: u128) -> String {
        match self.hasher.profile().bits() {
            FingerprintBits::Bits64 => format!("{:016x}", value as u64),
            FingerprintBits::Bits128 => format!("{value:032x}"),
        }
    }

    /// The verification sets of `handles`, in order: those in memory (uncommitted or
    /// cached), the rest read from the store in one batch (one round trip for a remote
    /// store) and cached.
    fn shingle_sets(&self, handles: &[u64]) -> Result<Vec<Option<sets::Set>>> {
        let mut found: Vec<Option<sets::Set>> = handles.iter().map(|&h| self.sets.get(h)).collect();
        let missing: Vec<u64> = handles
            .iter()
            .zip(&found)
            .filter(|(_, s)| s.is_none())
            .map(|(&h, _)| h)
            .collect();
        if missing.is_empty() {
            return Ok(found);
        }
        let mut fetched = self.store.shingles_many(&missing)?.into_iter();
        for (&h, slot) in handles.iter().zip(&mut found) {
            if slot.is_none() {
                *slot = fetched.next().flatten().map(|set| {
                    let set = sets::Set::from(set);
                    self.sets.fetched(h, &set);
                    set
                });
            }
        }
        Ok(found)
    }

    /// The index a record's candidates come from, with its radius and Jaccard threshold.
    fn search_rule(&self, features: Features) -> (IndexKind, u32, f64) {
        match (features, self.rule.short_text) {
            (
                Features::Chars,
                ShortText::CharNgrams {
                    max_distance,
                    min_jaccard,
                    ..
                },
            ) => (IndexKind::Chars, max_distance, min_jaccard),
            _ => (
                IndexKind::Words,
                self.rule.max_distance,
                self.rule.min_jaccard,
            ),
        }
    }

    /// The index records of `kind` are searched in and stored in.
    fn index_of(&self, kind: IndexKind) -> &AutoIndex {
        match kind {
            IndexKind::Words => &self.index,
            IndexKind::Chars => &self.short_index,
        }
    }

    /// Index hits of an analysed record, nearest first (by the indexed bits, then handle),
    /// at most `max_candidates`.
    fn index_hits(&self, prepared: &Prepared) -> Result<Vec<Match>> {
        let (kind, max_distance, _) = self.search_rule(prepared.features);
        let index = self.index_of(kind);
        // The answer is gathered in a buffer of the thread's, which keeps its capacity:
        // next to a large group of near copies it holds thousands of matches before the
        // nearest are selected, and a fresh one each time would be fresh memory each time.
        thread_local! {
            static ANSWER: std::cell::RefCell<Vec<Match>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        ANSWER.with_borrow_mut(|answer| {
            index.query_nearest_into(
                prepared.fingerprint as u64,
                max_distance,
                self.rule.max_candidates,
                answer,
            )?;
            Ok(answer.clone())
        })
    }

    /// Verified near-duplicates of an analysed record among stored ones, best first:
    /// highest Jaccard, then smallest distance, then oldest handle. Failing candidates are
    /// returned apart, with their scores.
    fn verify_candidates(&self, prepared: &Prepared) -> Result<(Scored, Scored)> {
        let hits = self.index_hits(prepared)?;
        self.verify_hits(prepared, &hits, &[])
    }

    /// [`verify_candidates`](Self::verify_candidates) for given index hits; `known` holds
    /// Jaccard similarities computed already (by [`presearch`](Self::presearch); `None`
    /// for a candidate whose set is gone).
    fn verify_hits(
        &self,
        prepared: &Prepared,
        hits: &[Match],
        known: &[(u64, Option<f64>)],
    ) -> Result<(Scored, Scored)> {
        let (_, max_distance, min_jaccard) = self.search_rule(prepared.features);
        let candidates: Vec<(u64, u32)> = hits
            .iter()
            .filter_map(|m| {
                let meta = self.meta.get(&m.id)?;
                let distance = (meta.fingerprint ^ prepared.fingerprint).count_ones();
                // 128-bit profiles: the index saw only the low half.
                (distance <= max_distance && meta.features == prepared.features)
                    .then_some((m.id, distance))
            })
            .collect();
        let known_of = |h: u64| known.iter().find(|&&(k, _)| k == h).map(|&(_, j)| j);
        let unknown: Vec<u64> = candidates
            .iter()
            .map(|&(h, _)| h)
            .filter(|&h| known_of(h).is_none())
            .collect();
        let mut sets = self.shingle_sets(&unknown)?.into_iter();
        let (mut ok, mut failed) = (Vec::new(), Vec::new());
        for (id, distance) in candidates {
            let theirs = match known_of(id) {
                Some(j) => j.map(Ok),
                None => sets.next().flatten().map(Err),
            };
            let Some(theirs) = theirs else {
                continue;
            };
            let jaccard = match theirs {
                Ok(j) => j,
                Err(set) => {
                    // Once enough failures are logged, sets too different in size to pass
                    // are not compared at all.
                    if failed.len() >= MAX_LOGGED_REJECTIONS
                        && cannot_reach(prepared.shingles.len(), set.len(), min_jaccard)
                    {
                        continue;
                    }
                    id_jaccard(&prepared.shingles, &set)
                }
            };
            let scores = Scores { distance, jaccard };
            if scores.jaccard >= min_jaccard {
                ok.push((id, scores));
            } else {
                failed.push((id, scores));
            }
        }
        ok.sort_by(|a, b| {
            b.1.jaccard
                .total_cmp(&a.1.jaccard)
                .then(a.1.distance.cmp(&b.1.distance))
                .then(a.0.cmp(&b.0))
        });
        Ok((ok, failed))
    }

    /// A record's candidates among the records stored before its group (its index `hits`),
    /// with their Jaccard similarities: the costly half of a decision (index probes,
    /// reading and comparing shingle sets), which reads only state the group's own
    /// decisions do not change, so the records of a group are searched in parallel before
    /// they are decided one by one (see [`presearch_window`](Self::presearch_window)).
    fn presearch(&self, prepared: &Prepared, hits: Vec<Match>) -> Result<Presearched> {
        let handles: Vec<u64> = hits.iter().map(|m| m.id).collect();
        let known = handles
            .iter()
            .zip(self.shingle_sets(&handles)?)
            .map(|(&h, set)| (h, set.map(|set| id_jaccard(&prepared.shingles, &set))))
            .collect();
        Ok(Presearched { hits, known })
    }

    /// The presearches of a window's records that need one, in parallel. Each index is
    /// asked in batches, one per thread ([`HammingIndex::query_nearest_batch`]: a batch
    /// sweeps each table once, where one query after another took a cache miss per probe);
    /// then each record's hits are verified.
    fn presearch_window(
        &self,
        records: &[Record],
        prepared: &[Analysed],
    ) -> Result<Vec<Option<Presearched>>> {
        let mut found: Vec<Option<Presearched>> = (0..records.len()).map(|_| None).collect();
        for kind in [IndexKind::Words, IndexKind::Chars] {
            let wanted: Vec<(usize, &Prepared)> = records
                .iter()
                .zip(prepared)
                .enumerate()
                .filter_map(|(i, (record, p))| match p {
                    Analysed::Done(Ok(p))
                        if self.search_rule(p.features).0 == kind
                            && self.needs_search(record, p) =>
                    {
                        Some((i, p))
                    }
                    _ => None,
                })
                .collect();
            let Some(&(_, first)) = wanted.first() else {
                continue;
            };
            let (_, max_distance, _) = self.search_rule(first.features);
            let index = self.index_of(kind);
            let per_thread = wanted.len().div_ceil(rayon::current_num_threads());
            let hits: Vec<Vec<Vec<Match>>> = wanted
                .par_chunks(per_thread.max(1))
                .map(|chunk| {
                    let fps: Vec<u64> = chunk.iter().map(|(_, p)| p.fingerprint as u64).collect();
                    let mut hits = Vec::new();
                    index.query_nearest_batch(
                        &fps,
                        max_distance,
                        self.rule.max_candidates,
                        &mut hits,
                    )?;
                    Ok(hits)
                })
                .collect::<Result<_>>()?;
            let hits: Vec<Vec<Match>> = hits.into_iter().flatten().collect();
            let searched: Vec<(usize, Presearched)> = wanted
                .into_par_iter()
                .zip(hits)
                .map(|((i, p), hits)| Ok((i, self.presearch(p, hits)?)))
                .collect::<Result<_>>()?;
            for (i, searched) in searched {
                found[i] = Some(searched);
            }
        }
        Ok(found)
    }

    /// Completes a presearch with the records decided earlier in the same group: their
    /// index hits are found by a scan of the group (a few thousand fingerprints at most),
    /// merged in the index's order and cut at `max_candidates` as the index would.
    fn complete_presearch(&self, prepared: &Prepared, mut hits: Vec<Match>) -> Vec<Match> {
        let (kind, max_distance, _) = self.search_rule(prepared.features);
        let q = prepared.fingerprint as u64;
        let before = hits.len();
        crate::index::linear::scan(&self.group_fps, q, max_distance, |at, distance| {
            let (id, k) = self.group[at];
            if k == kind {
                hits.push(Match { distance, id });
            }
        });
        if hits.len() > before {
            hits.sort_unstable();
            hits.truncate(self.rule.max_candidates);
        }
        hits
    }

    /// Whether the analysed record links to the cluster of `survivor` (see [`Link`]).
    /// Members with the same text are measured once and counted with their copies; members
    /// in `scored` (the record's verified candidates, usually most of the cluster) are not
    /// compared again, nor are members whose [`Bound`] to the survivor settles them. A
    /// member with no bound yet is measured against the survivor first (it is then bound for
    /// every later record). Members whose bound shows only that they reach the floor are
    /// measured only while the quorum is short.
    fn links_to_all(
        &self,
        p: &Prepared,
        survivor: u64,
        link: Link,
        scored: &[(u64, Scores)],
    ) -> Result<Linked> {
        debug_assert!(
            scored.is_sorted_by_key(|&(h, _)| h),
            "scores sorted by handle"
        );
        let mut linkage = Linked::default();
        let scored_distance = |m: u64| -> Option<f64> {
            let at = scored.binary_search_by_key(&m, |&(h, _)| h).ok()?;
            Some(1.0 - scored[at].1.jaccard)
        };
        let Some(members) = self.members.get(&survivor) else {
            linkage.linked = true;
            return Ok(linkage);
        };
        if link.is_single() {
            // Nothing to measure: the verified match links (no bound on the survivor
            // unless verification measured it).
            linkage.linked = true;
            linkage.to_survivor = scored_distance(survivor);
            return Ok(linkage);
        }

        // The cluster's texts with the record's features, the survivor's first, with the
        // number of members carrying each.
        let with_survivor = self.meta[&survivor].features == p.features;
        let texts = self.texts_of(
            std::iter::once(survivor).filter(|_| with_survivor).chain(
                members
                    .iter()
                    .copied()
                    .filter(|&m| m != survivor && self.meta[&m].features == p.features),
            ),
        );
        let mut tally = Tally::new(link, texts.iter().map(|&(_, n)| n).sum());
        let mut rest = &texts[..];

        // The record's distance to the survivor, the pivot of every bound.
        if with_survivor {
            let d_ps = match scored_distance(survivor) {
                Some(d) => Some(d),
                None => self.distance_to(&p.shingles, survivor)?,
            };
            linkage.to_survivor = d_ps;
            if d_ps.is_none() {
                tally.skip(texts[0].1);
            }
            if let Some(d_ps) = d_ps {
                if !tally.add(d_ps, texts[0].1) {
                    return Ok(linkage);
                }
                // The whole cluster settled through the survivor.
                if let Some(&r) = self.radius.get(&survivor) {
                    if tally.verifies(d_ps + f64::from(r)) {
                        linkage.linked = true;
                        return Ok(linkage);
                    }
                }
            }
            rest = &texts[1..];
        }

        // Members to measure, and members known to reach the floor that count toward the
        // quorum only once measured.
        let mut hard: Vec<(u64, usize)> = Vec::new();
        let mut soft: Vec<(u64, usize)> = Vec::new();
        let mut unbound = Vec::new();
        for &(m, n) in rest {
            if let Some(d) = scored_distance(m) {
                if !tally.add(d, n) {
                    return Ok(linkage);
                }
                linkage.compared.push((m, d));
                continue;
            }
            let meta = &self.meta[&m];
            match linkage.to_survivor {
                Some(d_ps) if meta.bound.of == survivor => {
                    tally.file(
                        d_ps + f64::from(meta.bound.distance),
                        (m, n),
                        &mut soft,
                        &mut hard,
                    );
                }
                Some(_) => unbound.push((m, n)),
                None => hard.push((m, n)),
            }
        }
        // Unbound members: measured against the survivor first.
        if let (Some(d_ps), false) = (linkage.to_survivor, unbound.is_empty()) {
            let handles: Vec<u64> = unbound.iter().map(|&(m, _)| m).collect();
            match &self.shingle_sets(&[survivor])?[0] {
                Some(pivot) => {
                    for (&(m, n), theirs) in unbound.iter().zip(self.shingle_sets(&handles)?) {
                        let Some(theirs) = theirs else {
                            hard.push((m, n));
                            continue;
                        };
                        let d = 1.0 - id_jaccard(pivot, &theirs);
                        linkage.learned.push((m, d));
                        tally.file(d_ps + d, (m, n), &mut soft, &mut hard);
                    }
                }
                None => hard.extend(unbound),
            }
        }
        // Members that must be measured, then as many of the others as the quorum needs (a
        // few sets at a time: most often the first ones settle it).
        let floor = link.floor;
        let chunks = std::iter::once((&hard[..], true))
            .filter(|(group, _)| !group.is_empty())
            .chain(soft.chunks(8).map(|c| (c, false)));
        for (group, all) in chunks {
            if !all && tally.quorate() {
                break;
            }
            let handles: Vec<u64> = group.iter().map(|&(m, _)| m).collect();
            for (&(m, n), theirs) in group.iter().zip(self.shingle_sets(&handles)?) {
                let Some(theirs) = theirs else {
                    tally.skip(n);
                    continue;
                };
                if cannot_reach(p.shingles.len(), theirs.len(), floor) {
                    return Ok(linkage);
                }
                let d = 1.0 - id_jaccard(&p.shingles, &theirs);
                if !tally.add(d, n) {
                    return Ok(linkage);
                }
                linkage.compared.push((m, d));
            }
        }
        linkage.compared.sort_unstable_by_key(|&(m, _)| m);
        linkage.linked = tally.quorate();
        Ok(linkage)
    }

    /// Fuses with the cluster of the record `id` just joined each cluster it also verified
    /// against (`fusable`, best match first) whose members all link to all of its own (same
    /// features, Jaccard at least the linkage threshold): the record bridges them, and
    /// every pair of the fused cluster still verifies, as complete linkage promises. Without
    /// this a record joins only its best match's cluster and its pairs with the other stay
    /// apart (on the quality bench, a third of the pairs missed). The earlier first seen
    /// survivor survives; the other's entry in the merge log names the bridging match.
    fn fuse_clusters(
        &mut self,
        id: &str,
        fusable: Fusable,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Vec<MergeLogEntry>> {
        let handle = self.by_id[id];
        let mut entries = Vec::new();
        let mut budget = MAX_FUSE_PAIRS;
        for (h, scores) in fusable.matches {
            let (Some(ours), Some(theirs)) = (self.meta.get(&handle), self.meta.get(&h)) else {
                continue;
            };
            let (a, b) = (ours.survivor, theirs.survivor);
            if a == b || !self.clusters_link(a, b, fusable.features, fusable.link, &mut budget)? {
                continue;
            }
            // The earlier first seen survives (ties: the smaller id); the other is merged,
            // matched by the record of the surviving cluster the bridge runs through.
            let (ma, mb) = (&self.meta[&a], &self.meta[&b]);
            let (winner, loser, matched) = if (ma.first_seen, &*ma.id) <= (mb.first_seen, &*mb.id) {
                (a, b, handle)
            } else {
                (b, a, h)
            };
            let entry = MergeLogEntry {
                kept: self.meta[&winner].id.to_string(),
                merged: self.meta[&loser].id.to_string(),
                merged_fingerprint: self.fingerprint_hex(self.meta[&loser].fingerprint),
                rule: fusable.rule.as_str().into(),
                distance: scores.distance,
                jaccard: scores.jaccard,
                matched: self.meta[&matched].id.to_string(),
                source_urls: self.own_urls(loser),
                at: now.to_rfc3339(),
            };
            let moved = self.members.remove(&loser).unwrap_or_default();
            for &m in &moved {
                self.meta.get_mut(&m).expect("member is stored").survivor = winner;
                batch.survivor_updates.push((m, winner));
            }
            self.members.entry(winner).or_default().extend(moved);
            self.radius.remove(&winner);
            self.radius.remove(&loser);
            batch.merges.push(entry.clone());
            entries.push(entry);
        }
        Ok(entries)
    }

    /// Whether clusters `a` and `b` (all of `features`) link as one (see [`Link`]): every
    /// member of one at the floor with every member of the other, and the quorum of those
    /// pairs (copies counted) verified, within `budget` comparisons, which it spends (members
    /// of one text are compared once).
    fn clusters_link(
        &self,
        a: u64,
        b: u64,
        features: Features,
        link: Link,
        budget: &mut usize,
    ) -> Result<bool> {
        if link.is_single() {
            // Connected components: a verified pair across links the clusters. (Of the same
            // features only: a short record's character n-gram cluster and a long one's
            // word cluster stay apart as they are decided apart.)
            let same = |survivor: u64| {
                let members = self.members.get(&survivor).map_or(&[][..], Vec::as_slice);
                members.iter().all(|m| self.meta[m].features == features)
            };
            return Ok(same(a) && same(b));
        }
        let texts = |survivor: u64| -> Option<Vec<(u64, usize)>> {
            let members = self.members.get(&survivor).map_or(&[][..], Vec::as_slice);
            members
                .iter()
                .all(|m| self.meta[m].features == features)
                .then(|| self.texts_of(members.iter().copied()))
        };
        let (Some(ta), Some(tb)) = (texts(a), texts(b)) else {
            return Ok(false);
        };
        if ta.is_empty() || tb.is_empty() || ta.len() * tb.len() > *budget {
            return Ok(false);
        }
        let handles = |t: &[(u64, usize)]| t.iter().map(|&(m, _)| m).collect::<Vec<_>>();
        let (sa, sb) = (
            self.shingle_sets(&handles(&ta))?,
            self.shingle_sets(&handles(&tb))?,
        );
        let copies = |t: &[(u64, usize)]| t.iter().map(|&(_, n)| n).sum::<usize>();
        let mut tally = Tally::new(link, copies(&ta) * copies(&tb));
        for (x, &(_, nx)) in sa.iter().zip(&ta) {
            let Some(x) = x else { return Ok(false) };
            for (y, &(_, ny)) in sb.iter().zip(&tb) {
                let Some(y) = y else { return Ok(false) };
                *budget -= 1;
                if cannot_reach(x.len(), y.len(), link.floor)
                    || !tally.add(1.0 - id_jaccard(x, y), nx * ny)
                {
                    return Ok(false);
                }
            }
        }
        Ok(tally.quorate())
    }

    /// The distinct texts of `members`, each as its first member and how many carry it.
    fn texts_of(&self, members: impl Iterator<Item = u64>) -> Vec<(u64, usize)> {
        let mut at: FastMap<u128, usize> = Default::default();
        let mut texts: Vec<(u64, usize)> = Vec::new();
        for m in members {
            let i = *at.entry(self.meta[&m].content_hash).or_insert_with(|| {
                texts.push((m, 0));
                texts.len() - 1
            });
            texts[i].1 += 1;
        }
        texts
    }

    /// Keeps the members' distances to `survivor` that complete linkage measured.
    fn learn_bounds(&mut self, survivor: u64, learned: &[(u64, f64)]) {
        for &(m, d) in learned {
            if let Some(meta) = self.meta.get_mut(&m) {
                if meta.survivor == survivor {
                    meta.bound = Bound::new(survivor, d);
                }
            }
        }
    }

    /// The distance of an exact copy of `h` to `h`'s survivor: measured, since the same
    /// text on another host loses other boilerplate and may have another shingle set.
    fn exact_copy_distance(&self, p: &Prepared, h: u64) -> Result<Option<f64>> {
        let survivor = self.meta[&h].survivor;
        if self.meta[&survivor].features != p.features {
            return Ok(None);
        }
        self.distance_to(&p.shingles, survivor)
    }

    /// The Jaccard distance of `shingles` to the stored record `h`, when its set is found.
    fn distance_to(&self, shingles: &[u32], h: u64) -> Result<Option<f64>> {
        Ok(self.shingle_sets(&[h])?[0]
            .as_ref()
            .map(|theirs| 1.0 - id_jaccard(shingles, theirs)))
    }

    /// A bound on a member's distance to its survivor, when one holds.
    fn bound_to_survivor(&self, m: u64) -> Option<f64> {
        let meta = &self.meta[&m];
        if meta.survivor == m {
            Some(0.0)
        } else if meta.bound.of == meta.survivor {
            Some(f64::from(meta.bound.distance))
        } else {
            None
        }
    }

    /// Near-duplicates of `record` among stored records, without inserting it: (id, scores)
    /// best first, exact duplicates first of all with distance 0 and Jaccard 1.
    ///
    /// # Errors
    /// A record with no words; index and store failures.
    pub fn query(&self, record: &Record) -> Result<Vec<(String, Scores)>> {
        let prepared = self
            .analyzer_ref()
            .prepare_one(record, &mut Scratch::default());
        self.query_prepared(record, prepared)
    }

    /// [`query`](Self::query) for a record analysed already (by an [`Analyzer`], outside
    /// whatever lock guards this deduper).
    ///
    /// # Errors
    /// As [`query`](Self::query).
    pub fn query_prepared(
        &self,
        record: &Record,
        prepared: PreparedRecord,
    ) -> Result<Vec<(String, Scores)>> {
        let analysed = self.current(record, prepared);
        let prepared = self
            .settle(record, analysed)?
            .map_err(|reason| Error::InvalidConfig {
                field: "text",
                value: record.id.clone(),
                reason,
            })?;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        if let Some(&h) = self.by_content.get(&prepared.content_hash) {
            // Every stored record with this text is in one cluster.
            let survivor = self.meta[&h].survivor;
            for &m in &self.members[&survivor] {
                if self.meta[&m].content_hash == prepared.content_hash && seen.insert(m) {
                    let distance = (self.meta[&m].fingerprint ^ prepared.fingerprint).count_ones();
                    out.push((
                        m,
                        Scores {
                            distance,
                            jaccard: 1.0,
                        },
                    ));
                }
            }
        }
        if prepared.tokens >= self.rule.min_words || prepared.features == Features::Chars {
            let mut hits = self.index_hits(&prepared)?;
            // Exact copies are not indexed (see `indexes`): each hit's are candidates too.
            let copies: Vec<Match> = hits
                .iter()
                .flat_map(|m| {
                    let meta = &self.meta[&m.id];
                    let members = self
                        .members
                        .get(&meta.survivor)
                        .map_or(&[][..], Vec::as_slice);
                    self.copies_among(meta.content_hash, members)
                        .filter(move |&c| c != m.id)
                        .map(|c| Match {
                            distance: (self.meta[&c].fingerprint ^ prepared.fingerprint)
                                .count_ones(),
                            id: c,
                        })
                })
                .collect();
            hits.extend(copies);
            let (ok, _) = self.verify_hits(&prepared, &hits, &[])?;
            out.extend(ok.into_iter().filter(|(h, _)| seen.insert(*h)));
        }
        Ok(out
            .into_iter()
            .map(|(h, s)| (self.meta[&h].id.to_string(), s))
            .collect())
    }

    /// Deduplicates a batch of records against the store and each other, in order, and
    /// commits the result atomically.
    ///
    /// A record whose id is already stored with the same text is reported as
    /// [`Decision::AlreadyStored`] (so an interrupted run can simply be run again); with
    /// different text it is rejected.
    ///
    /// # Errors
    /// Store and index failures. After a failed commit the deduper refuses further work
    /// ([`Error::Poisoned`]): reopen the store to continue from its last committed state.
    pub fn process(&mut self, records: &[Record], now: Timestamp) -> Result<Vec<Outcome>> {
        self.check()?;
        let prepared = self.analyzer_ref().prepare(records);
        self.process_prepared(records, prepared, now)
    }

    /// An owned copy of what analysis needs (profile, short-text hasher, boilerplate), so a
    /// caller can analyse the next batch on other threads while this deduper decides the
    /// current one. Boilerplate learned later is not in the copy: take a new one then.
    pub fn analyzer(&self) -> Analyzer {
        Analyzer {
            hasher: self.hasher.clone(),
            short: self.short_hasher.clone().map(|h| (h, self.rule.min_words)),
            furniture: self.furniture.clone(),
            generation: self.generation,
        }
    }

    /// Whether each [`Outcome`] lists every pair that passed verification
    /// ([`Outcome::pairs`]), for users who want pairs rather than clusters. Off by default:
    /// the ids cost an allocation each.
    pub fn collect_pairs(&mut self, on: bool) {
        self.collect_pairs = on;
    }

    /// The boilerplate generation: it moves whenever a host's boilerplate changes (learned
    /// here or committed by another process), which makes older [`Analyzer`] copies stale.
    pub fn analyzer_generation(&self) -> u64 {
        self.generation
    }

    /// Whether [`process_prepared_behind`](Self::process_prepared_behind) decides on what
    /// this deduper holds and commits behind; if not, it is
    /// [`process_prepared`](Self::process_prepared), which first catches up with other
    /// processes' commits (and so may find their boilerplate).
    pub fn commits_behind(&self) -> bool {
        self.store.commits_behind()
    }

    fn analyzer_ref(&self) -> AnalyzerRef<'_> {
        AnalyzerRef {
            hasher: &self.hasher,
            short: self.short_hasher.as_ref().map(|h| (h, self.rule.min_words)),
            furniture: &self.furniture,
            generation: self.generation,
        }
    }

    /// The analysis of `record` as this deduper makes it now: `prepared` itself, unless it
    /// was made with boilerplate that has changed since.
    fn current(&self, record: &Record, prepared: PreparedRecord) -> Analysed {
        if prepared.generation == self.generation {
            prepared.analysis
        } else {
            Analysed::Done(self.prepare(record, &mut Scratch::default()))
        }
    }

    /// The analysis a record of `text` would get, taken from the record of that text this
    /// deduper stored under the current boilerplate, when there is one.
    fn same_text(&self, record: &Record, text: u128) -> Result<Option<Prepared>> {
        let Some((e, meta)) = self.text_entry(text) else {
            return Ok(None);
        };
        let shingles = match meta.features {
            Features::ExactOnly => Set::default(),
            _ => match self.shingle_sets(&[e.handle])?.pop().flatten() {
                Some(set) => set,
                None => return Ok(None),
            },
        };
        Ok(Some(Prepared {
            host: record.effective_host(),
            features: meta.features,
            language: e.language,
            shingle_count: e.shingle_count,
            boilerplate_removed: e.boilerplate_removed,
            fingerprint: meta.fingerprint,
            content_hash: meta.content_hash,
            shingles,
            tokens: e.tokens,
            text: None,
        }))
    }

    /// The stored record of `text` analysed under the current boilerplate, if there is one.
    fn text_entry(&self, text: u128) -> Option<(&TextEntry, &Meta)> {
        let e = self.by_text.get(&text)?;
        let meta = self.meta.get(&e.handle)?;
        (e.generation == self.generation).then_some((e, meta))
    }

    /// A record's analysis, made now if it was left to the record of its text and that one
    /// cannot give it.
    fn settle(&self, record: &Record, analysed: Analysed) -> Result<Result<Prepared, String>> {
        match analysed {
            Analysed::Done(p) => Ok(p),
            Analysed::SameText(text) => Ok(match self.same_text(record, text)? {
                Some(p) => Ok(p),
                None => with_scratch(|scratch| self.prepare(record, scratch)),
            }),
        }
    }

    /// Decides and commits records analysed by [`Analyzer::prepare`] (of this deduper's
    /// profile), exactly as [`process`](Self::process) would.
    ///
    /// # Errors
    /// As [`process`](Self::process).
    ///
    /// # Panics
    /// When `prepared` does not have one entry per record.
    pub fn process_prepared(
        &mut self,
        records: &[Record],
        prepared: Vec<PreparedRecord>,
        now: Timestamp,
    ) -> Result<Vec<Outcome>> {
        assert_eq!(records.len(), prepared.len(), "one analysis per record");
        self.check()?;
        self.exclusive(|d, batch| {
            // After the sync: boilerplate another process committed may have changed.
            let prepared: Vec<Analysed> = records
                .iter()
                .zip(prepared)
                .map(|(r, p)| d.current(r, p))
                .collect();
            d.grow_index_for(records.len())?;
            d.decide_all(records, prepared, now, batch)
        })
    }

    /// [`process_prepared`](Self::process_prepared) with the commit behind: the batch is
    /// decided, the batch of the call before is waited for, and this one is handed to the
    /// store, which commits it while the caller prepares and decides the next one (with
    /// SQLite, on a thread of its own; with other stores, before this returns). The
    /// outcomes answered are durable once the next call (or
    /// [`wait_committed`](Self::wait_committed)) returns: write them out then, not before.
    ///
    /// The batch is decided without the store's lock, on what this deduper holds; the
    /// store commits it only if no other process wrote meanwhile. If one did,
    /// [`Error::Conflict`]: nothing of the batch was written, this deduper refuses further
    /// work ([`Error::Poisoned`]), and the records of the batches not yet confirmed are to
    /// be processed again by a deduper opened anew over the store.
    ///
    /// # Errors
    /// As [`process_prepared`](Self::process_prepared) (for this batch or the one before),
    /// and [`Error::Conflict`].
    ///
    /// # Panics
    /// When `prepared` does not have one entry per record.
    pub fn process_prepared_behind(
        &mut self,
        records: &[Record],
        prepared: Vec<PreparedRecord>,
        now: Timestamp,
    ) -> Result<Vec<Outcome>> {
        if !self.store.commits_behind() {
            return self.process_prepared(records, prepared, now);
        }
        assert_eq!(records.len(), prepared.len(), "one analysis per record");
        self.check()?;
        let mut batch = Batch::default();
        let decided = (|| {
            let prepared: Vec<Analysed> = records
                .iter()
                .zip(prepared)
                .map(|(r, p)| self.current(r, p))
                .collect();
            self.grow_index_for(records.len())?;
            self.decide_all(records, prepared, now, &mut batch)
        })();
        let outcomes = match decided {
            Ok(outcomes) => outcomes,
            Err(e) => {
                self.poisoned = true;
                return Err(e);
            }
        };
        self.wait_committed()?;
        if let Err(e) = self.store.commit_behind(batch) {
            self.poisoned = true;
            return Err(e);
        }
        self.behind = Some(self.next_handle);
        Ok(outcomes)
    }

    /// Waits until the batch [`process_prepared_behind`](Self::process_prepared_behind)
    /// handed to the store last is committed; nothing to wait for is no error.
    ///
    /// # Errors
    /// That batch's, as [`process_prepared_behind`](Self::process_prepared_behind)
    /// describes; this deduper then refuses further work.
    pub fn wait_committed(&mut self) -> Result<()> {
        let Some(bound) = self.behind.take() else {
            return Ok(());
        };
        match self.store.wait_behind() {
            Ok(()) => {
                self.sets.committed_before(bound);
                Ok(())
            }
            Err(e) => {
                self.poisoned = true;
                Err(e)
            }
        }
    }

    fn decide_all(
        &mut self,
        records: &[Record],
        prepared: Vec<Analysed>,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Vec<Outcome>> {
        let mut outcomes = Vec::with_capacity(records.len());
        let mut prepared = prepared.into_iter();
        for window in records.chunks(PRESEARCH_WINDOW) {
            let window_prepared: Vec<Analysed> = prepared.by_ref().take(window.len()).collect();
            self.decide_window(window, window_prepared, now, batch, &mut outcomes)?;
        }
        Ok(outcomes)
    }

    /// Decides a window of records in order. Their searches among the records stored
    /// before the window run first, in parallel ([`presearch`](Self::presearch)); each
    /// decision then adds the records decided before it in the window
    /// ([`complete_presearch`](Self::complete_presearch)), so the outcome is exactly that
    /// of deciding one record after the other.
    fn decide_window(
        &mut self,
        records: &[Record],
        mut prepared: Vec<Analysed>,
        now: Timestamp,
        batch: &mut Batch,
        outcomes: &mut Vec<Outcome>,
    ) -> Result<()> {
        // Records left to an earlier record of their text: that record is stored (its
        // analysis is taken when the record is decided), or it is earlier in this window
        // (decided first), or neither (its text is analysed now, in parallel).
        let mut in_window: FastSet<u128> = FastSet::default();
        let mut unresolved = Vec::new();
        for (i, p) in prepared.iter().enumerate() {
            match p {
                Analysed::Done(Ok(Prepared { text: Some(t), .. })) => {
                    in_window.insert(*t);
                }
                Analysed::SameText(t)
                    if !in_window.contains(t) && self.text_entry(*t).is_none() =>
                {
                    unresolved.push(i);
                }
                _ => {}
            }
        }
        if !unresolved.is_empty() {
            let this = &*self;
            let analysed: Vec<(usize, Result<Prepared, String>)> = unresolved
                .into_par_iter()
                .map(|i| {
                    (
                        i,
                        with_scratch(|scratch| this.prepare(&records[i], scratch)),
                    )
                })
                .collect();
            for (i, p) in analysed {
                prepared[i] = Analysed::Done(p);
            }
        }
        let found: Vec<Option<Presearched>> = if records.len() >= PARALLEL_PRESEARCH_MIN {
            self.presearch_window(records, &prepared)?
        } else {
            Vec::new()
        };
        let mut found = found.into_iter();
        self.group.clear();
        self.group_fps.clear();
        for (record, prepared) in records.iter().zip(prepared) {
            let found = found.next().flatten();
            let outcome = match self.settle(record, prepared)? {
                Err(reason) => Outcome {
                    id: record.id.clone(),
                    decision: Decision::Rejected { reason },
                    fingerprint: None,
                    merges: Vec::new(),
                    fused: 0,
                    shingles: 0,
                    boilerplate_removed: 0,
                    language: None,
                    host: record.effective_host(),
                    pairs: Vec::new(),
                },
                Ok(p) => self.decide(record, p, found, now, batch)?,
            };
            outcomes.push(outcome);
        }
        self.group.clear();
        self.group_fps.clear();
        Ok(())
    }

    /// How a record is stored: SimHash over words, over characters (short text), or exact
    /// tier only.
    fn features_of(&self, p: &Prepared) -> Features {
        match (p.tokens < self.rule.min_words, p.features) {
            (false, _) => Features::Words,
            (true, Features::Chars) => Features::Chars,
            (true, _) => Features::ExactOnly,
        }
    }

    /// Whether deciding `record` will search the index (as far as the state before its
    /// group tells: a decision that turns out not to need the search ignores it).
    fn needs_search(&self, record: &Record, p: &Prepared) -> bool {
        !self.by_id.contains_key(record.id.as_str())
            && !self.by_content.contains_key(&p.content_hash)
            && self.features_of(p) != Features::ExactOnly
    }

    /// Rebuilds the index with a larger layout when the store outgrows the plan.
    fn grow_index_for(&mut self, incoming: usize) -> Result<()> {
        let need = (self.index.len() + incoming) as u64;
        if need > self.index_planned_for.saturating_mul(4) {
            self.index_planned_for = need.saturating_mul(2);
            self.index = self.rebuilt(
                &self.index,
                Features::Words,
                self.index_planned_for,
                self.rule.max_distance,
            )?;
        }
        if let ShortText::CharNgrams { max_distance, .. } = self.rule.short_text {
            let need = (self.short_index.len() + incoming) as u64;
            if need > self.short_planned_for.saturating_mul(4) {
                self.short_planned_for = need.saturating_mul(2);
                self.short_index = self.rebuilt(
                    &self.short_index,
                    Features::Chars,
                    self.short_planned_for,
                    max_distance,
                )?;
            }
        }
        Ok(())
    }

    /// Makes room for `incoming` more records at once, when the caller knows how many are
    /// coming (`neardup dedup` counts its input in the boilerplate pass): the maps that hold
    /// every record are sized for them, and the index is laid out again for the store's size
    /// after them where the builder's [`expected_records`](DeduperBuilder::expected_records),
    /// a guess, was off by more than half. A map grown one doubling at a time copies every
    /// entry again at each step, into memory touched for the first time.
    ///
    /// # Errors
    /// [`Error::Index`] if the index cannot be laid out.
    pub fn reserve(&mut self, incoming: u64) -> Result<()> {
        let n = usize::try_from(incoming).unwrap_or(usize::MAX);
        self.meta.reserve(n);
        self.by_id.reserve(n);
        self.by_content.reserve(n);
        self.by_text.reserve(n);
        let need = (self.index.len() as u64 + incoming).max(1024);
        if need > self.index_planned_for.saturating_mul(2)
            || need.saturating_mul(2) < self.index_planned_for
        {
            self.index_planned_for = need;
            self.index =
                self.rebuilt(&self.index, Features::Words, need, self.rule.max_distance)?;
        }
        Ok(())
    }

    /// A new index laid out for `planned` fingerprints holding what `old` holds (records
    /// evicted by a sliding window stay out).
    fn rebuilt(
        &self,
        old: &AutoIndex,
        features: Features,
        planned: u64,
        max_distance: u32,
    ) -> Result<AutoIndex> {
        let mut index = AutoIndex::for_size(planned, max_distance)?;
        index.extend(
            self.meta
                .iter()
                .filter(|(&h, m)| m.features == features && old.get(h).is_some())
                .map(|(&h, m)| (h, m.fingerprint as u64)),
        )?;
        Ok(index)
    }

    /// The source URL of one record, as a merge-log entry lists it: what the merge of that
    /// record brings to its new cluster. (Its cluster's other members, if it had any, have
    /// entries of their own, so the log names every URL of a cluster once, where a list of
    /// the whole cluster per entry would grow with the square of its size.)
    fn own_urls(&self, handle: u64) -> Vec<String> {
        self.meta[&handle]
            .url
            .as_deref()
            .map(|u| vec![u.to_owned()])
            .unwrap_or_default()
    }

    /// Each distinct URL of a cluster once, in member order (survivor first).
    fn cluster_urls(&self, survivor: u64) -> Vec<String> {
        let mut seen: FastSet<&str> = FastSet::default();
        self.ordered_members(survivor)
            .into_iter()
            .filter_map(|h| self.meta[&h].url.as_deref())
            .filter(|u| seen.insert(u))
            .map(str::to_owned)
            .collect()
    }

    /// Members of a cluster: survivor first, then by (first seen, id).
    fn ordered_members(&self, survivor: u64) -> Vec<u64> {
        let mut m: Vec<u64> = self.members.get(&survivor).cloned().unwrap_or_default();
        m.sort_by(|a, b| {
            let (ma, mb) = (&self.meta[a], &self.meta[b]);
            (*a != survivor)
                .cmp(&(*b != survivor))
                .then(ma.first_seen.cmp(&mb.first_seen))
                .then(ma.id.cmp(&mb.id))
        });
        m
    }

    /// Decides one record ([`decide_record`](Self::decide_record)), then fuses with its
    /// cluster the other clusters it verified against where complete linkage holds across
    /// both ([`fuse_clusters`](Self::fuse_clusters)).
    fn decide(
        &mut self,
        record: &Record,
        p: Prepared,
        found: Option<Presearched>,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Outcome> {
        let mut fusable = None;
        let mut outcome = self.decide_record(record, p, found, now, batch, &mut fusable)?;
        let Some(fusable) = fusable.filter(|f: &Fusable| !f.matches.is_empty()) else {
            return Ok(outcome);
        };
        let rule = fusable.rule;
        let entries = self.fuse_clusters(&record.id, fusable, now, batch)?;
        let Some(last) = entries.last() else {
            return Ok(outcome);
        };
        // The record's cluster may have another survivor now: the outcome says which.
        let handle = self.by_id[record.id.as_str()];
        let survivor = self.meta[&handle].survivor;
        let survivor_id = self.meta[&survivor].id.to_string();
        match &mut outcome.decision {
            Decision::Merged { survivor: s, .. } => *s = survivor_id,
            Decision::Kept { .. } if survivor != handle => {
                outcome.decision = Decision::Merged {
                    survivor: survivor_id,
                    matched: last.matched.clone(),
                    rule,
                    scores: Scores {
                        distance: last.distance,
                        jaccard: last.jaccard,
                    },
                };
            }
            _ => {}
        }
        outcome.fused = entries.len();
        outcome.merges.extend(entries);
        Ok(outcome)
    }

    /// Decides one record; leaves in `fusable` the verified matches in clusters it did not
    /// try to join (it joined one before them).
    fn decide_record(
        &mut self,
        record: &Record,
        mut p: Prepared,
        found: Option<Presearched>,
        now: Timestamp,
        batch: &mut Batch,
        fusable: &mut Option<Fusable>,
    ) -> Result<Outcome> {
        let fingerprint = self.fingerprint_hex(p.fingerprint);
        let (shingles, boilerplate_removed) = (p.shingle_count, p.boilerplate_removed);
        let language = p.language.map(str::to_owned);
        let host = p.host.take();
        if let Some(&h) = self.by_id.get(record.id.as_str()) {
            let meta = &self.meta[&h];
            let decision = if meta.content_hash == p.content_hash {
                Decision::AlreadyStored {
                    survivor: self.meta[&meta.survivor].id.to_string(),
                }
            } else {
                Decision::Rejected {
                    reason: format!(
                        "duplicate id with different text: {:?} is already stored with another text (ids must be unique; the stored record is kept as it is)",
                        record.id
                    ),
                }
            };
            return Ok(Outcome {
                id: record.id.clone(),
                decision,
                fingerprint: Some(fingerprint),
                merges: Vec::new(),
                fused: 0,
                shingles,
                boilerplate_removed,
                language,
                host,
                pairs: Vec::new(),
            });
        }
        let first_seen = record.first_seen.unwrap_or(now);
        let too_short = p.tokens < self.rule.min_words;
        let features = self.features_of(&p);
        let near_rule = if features == Features::Chars {
            MergeRule::CharsJaccard
        } else {
            MergeRule::SimhashJaccard
        };

        // The exact tier, then SimHash candidates with verification.
        let mut matched: Option<(u64, MergeRule, Scores)> = None;
        let mut linkage: Option<Linked> = None;
        let mut pairs: Vec<VerifiedPair> = Vec::new();
        if let Some(&h) = self.by_content.get(&p.content_hash) {
            let distance = (self.meta[&h].fingerprint ^ p.fingerprint).count_ones();
            let scores = Scores {
                distance,
                jaccard: 1.0,
            };
            matched = Some((h, MergeRule::Exact, scores));
            if self.collect_pairs {
                pairs.push(VerifiedPair {
                    other: self.meta[&h].id.to_string(),
                    rule: MergeRule::Exact,
                    scores,
                });
            }
        } else if features != Features::ExactOnly {
            let (ok, failed) = match found {
                Some(Presearched { hits, known }) => {
                    let hits = self.complete_presearch(&p, hits);
                    self.verify_hits(&p, &hits, &known)?
                }
                None => self.verify_candidates(&p)?,
            };
            if self.collect_pairs {
                pairs.extend(ok.iter().map(|&(h, scores)| VerifiedPair {
                    other: self.meta[&h].id.to_string(),
                    rule: near_rule,
                    scores,
                }));
            }
            for (h, s) in failed.iter().take(MAX_LOGGED_REJECTIONS) {
                batch.rejections.push(Rejection {
                    record: record.id.clone(),
                    candidate: self.meta[h].id.to_string(),
                    distance: s.distance,
                    jaccard: s.jaccard,
                });
            }
            // Complete linkage: the record joins the cluster of its best verified match
            // only if it verifies against every member, so no pair inside a cluster falls
            // below the threshold through chaining (A~B and B~C but not A~C). Otherwise the
            // next candidate's cluster is tried.
            let link = match (features, self.rule.short_text) {
                _ if self.rule.linkage == Linkage::Single => Link {
                    floor: self.rule.chain_floor,
                    ..Link::SINGLE
                },
                (Features::Chars, ShortText::CharNgrams { min_jaccard, .. }) => Link {
                    floor: min_jaccard,
                    verify: min_jaccard,
                    quorum: 0.0,
                },
                _ => Link {
                    floor: self.rule.min_cluster_jaccard,
                    verify: self.rule.min_jaccard,
                    quorum: self.rule.cluster_quorum,
                },
            };
            let mut scored: Scored = ok.iter().chain(&failed).copied().collect();
            scored.sort_unstable_by_key(|&(h, _)| h);
            let mut tried: FastSet<u64> = Default::default();
            for (i, &(h, s)) in ok.iter().enumerate() {
                let survivor = self.meta[&h].survivor;
                if !tried.insert(survivor) {
                    continue;
                }
                let l = self.links_to_all(&p, survivor, link, &scored)?;
                self.learn_bounds(survivor, &l.learned);
                if l.linked {
                    matched = Some((h, near_rule, s));
                    linkage = Some(l);
                    // Matches in clusters not tried: candidates to fuse with the one joined.
                    *fusable = Some(Fusable {
                        matches: ok[i + 1..]
                            .iter()
                            .filter(|(h, _)| !tried.contains(&self.meta[h].survivor))
                            .copied()
                            .collect(),
                        link,
                        features,
                        rule: near_rule,
                    });
                    break;
                }
            }
        }
        // The record's distance to its new survivor, bounded: measured by complete linkage,
        // or for an exact copy, that of the record it copies.
        let to_survivor = match (&matched, &linkage) {
            (Some((h, MergeRule::Exact, _)), _) => self.exact_copy_distance(&p, *h)?,
            (Some(_), Some(l)) => l.to_survivor,
            _ => None,
        };

        let handle = self.next_handle;
        self.next_handle += 1;
        let arrival = match (&matched, too_short) {
            (Some((_, MergeRule::Exact, _)), _) => Arrival::Exact,
            (Some(_), _) => Arrival::Near,
            (None, true) => Arrival::TooShort,
            (None, false) => Arrival::New,
        };
        let indexed = features != Features::ExactOnly;
        let survivor = matched.map_or(handle, |(h, _, _)| self.meta[&h].survivor);
        let stored = StoredRecord {
            handle,
            id: record.id.clone(),
            fingerprint: p.fingerprint,
            content_hash: p.content_hash,
            url: record.url.clone(),
            host: host.clone(),
            first_seen,
            retention_class: record.retention_class.clone(),
            survivor,
            arrival,
            tokens: p.tokens.min(u32::MAX as usize) as u32,
            language: p.language.map(str::to_owned),
            features,
        };
        // `remember` drops the cluster's radius; a bounded newcomer with the survivor's
        // features widens it instead.
        let radius = self.radius.get(&survivor).copied();
        self.remember(&stored);
        if let Some(text) = p.text {
            self.by_text.entry(text).or_insert(TextEntry {
                handle,
                generation: self.generation,
                tokens: p.tokens,
                shingle_count: p.shingle_count,
                boilerplate_removed: p.boilerplate_removed,
                language: p.language,
            });
        }
        if let (Some(d), true) = (to_survivor, survivor != handle) {
            let bound = Bound::new(survivor, d);
            self.meta.get_mut(&handle).expect("just stored").bound = bound;
            if let Some(r) = radius {
                if self.meta[&survivor].features == features {
                    self.radius.insert(survivor, r.max(bound.distance));
                }
            }
        }
        let kind = if self.indexes(handle, p.content_hash) {
            self.index_record(handle)?
        } else {
            None
        };
        if let Some(kind) = kind {
            // Later records of the window find this one by a scan, not in their presearch.
            self.group.push((handle, kind));
            self.group_fps.push(p.fingerprint as u64);
        }
        if indexed {
            self.sets.add_pending(handle, p.shingles.clone());
        }
        batch.records.push(NewRecord {
            record: stored,
            shingles: if indexed { p.shingles } else { Set::default() },
        });

        let Some((matched_handle, rule, scores)) = matched else {
            return Ok(Outcome {
                id: record.id.clone(),
                decision: Decision::Kept {
                    too_short,
                    displaced: None,
                    joined: None,
                },
                fingerprint: Some(fingerprint),
                merges: Vec::new(),
                fused: 0,
                shingles,
                boilerplate_removed,
                language,
                host,
                pairs: std::mem::take(&mut pairs),
            });
        };
        let matched_id = self.meta[&matched_handle].id.to_string();
        let at = now.to_rfc3339();
        // The survivor is the earliest first seen; ties go to the smallest id.
        let old = &self.meta[&survivor];
        let displaces = (first_seen, record.id.as_str()) < (old.first_seen, &*old.id);
        if displaces {
            let old_id = old.id.to_string();
            let old_fp = self.fingerprint_hex(old.fingerprint);
            let old_urls = self.own_urls(survivor);
            let mut moved = self.members.remove(&survivor).unwrap_or_default();
            moved.retain(|&h| h != handle);
            // Bounds to the new survivor: a member's distance to it is at most its distance
            // to the old survivor plus the old survivor's to it, or what linkage measured.
            let compared = linkage.as_ref().map_or(&[][..], |l| &l.compared[..]);
            self.radius.remove(&survivor);
            let mut radius = Some(0.0f32);
            for &m in &moved {
                let measured = compared
                    .binary_search_by_key(&m, |&(h, _)| h)
                    .ok()
                    .map(|at| compared[at].1);
                let through = to_survivor
                    .zip(self.bound_to_survivor(m))
                    .map(|(a, b)| a + b);
                let bound = match (measured, through) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let meta = self.meta.get_mut(&m).expect("member is stored");
                meta.survivor = handle;
                meta.bound = bound.map_or(Bound::NONE, |d| Bound::new(handle, d));
                if meta.features == features {
                    radius = bound.and(radius).map(|r| r.max(meta.bound.distance));
                }
                batch.survivor_updates.push((m, handle));
            }
            self.meta.get_mut(&handle).expect("just stored").survivor = handle;
            if let Some(n) = batch.records.last_mut() {
                n.record.survivor = handle;
            }
            moved.push(handle);
            self.members.insert(handle, moved);
            match radius {
                Some(r) => self.radius.insert(handle, r),
                None => self.radius.remove(&handle),
            };
            let entry = MergeLogEntry {
                kept: record.id.clone(),
                merged: old_id.clone(),
                merged_fingerprint: old_fp,
                rule: rule.as_str().into(),
                distance: scores.distance,
                jaccard: scores.jaccard,
                matched: matched_id,
                source_urls: old_urls,
                at,
            };
            batch.merges.push(entry.clone());
            return Ok(Outcome {
                id: record.id.clone(),
                decision: Decision::Kept {
                    too_short,
                    displaced: Some(old_id),
                    joined: Some((rule, scores, entry.matched.clone())),
                },
                fingerprint: Some(fingerprint),
                merges: vec![entry],
                fused: 0,
                shingles,
                boilerplate_removed,
                language,
                host,
                pairs: std::mem::take(&mut pairs),
            });
        }
        // `remember` already added the record to its survivor's members.
        let survivor_id = self.meta[&survivor].id.to_string();
        let entry = MergeLogEntry {
            kept: survivor_id.clone(),
            merged: record.id.clone(),
            merged_fingerprint: fingerprint.clone(),
            rule: rule.as_str().into(),
            distance: scores.distance,
            jaccard: scores.jaccard,
            matched: matched_id.clone(),
            source_urls: record.url.iter().cloned().collect(),
            at,
        };
        batch.merges.push(entry.clone());
        Ok(Outcome {
            id: record.id.clone(),
            decision: Decision::Merged {
                survivor: survivor_id,
                matched: matched_id,
                rule,
                scores,
            },
            fingerprint: Some(fingerprint),
            merges: vec![entry],
            fused: 0,
            shingles,
            boilerplate_removed,
            language,
            host,
            pairs,
        })
    }

    /// The cluster of a stored record.
    pub fn cluster_of(&self, id: &str) -> Option<ClusterView> {
        let h = *self.by_id.get(id)?;
        let survivor = self.meta[&h].survivor;
        let members = self.ordered_members(survivor);
        Some(ClusterView {
            survivor: self.meta[&survivor].id.to_string(),
            first_seen: members
                .iter()
                .map(|m| self.meta[m].first_seen)
                .min()
                .unwrap_or(self.meta[&survivor].first_seen),
            source_urls: self.cluster_urls(survivor),
            members: members
                .iter()
                .map(|m| self.meta[m].id.to_string())
                .collect(),
        })
    }

    /// A sample of the pairs inside the cluster of `id`, weakest first: up to `texts` of its
    /// distinct texts (spread evenly over its members, survivor first) and every pair among
    /// them, measured exactly. A cluster is only as sound as its weakest pairs: under single
    /// linkage a chain can hold pairs far under the verification threshold, and a cluster
    /// whose pairs mostly fall under it is usually a template or an extraction failure, not
    /// duplication. Answers the pairs with the threshold the cluster was verified at.
    /// Members of other features than the survivor's (short records'
    /// character n-grams) and members whose sets are gone are left out. Empty for an id not
    /// stored or a cluster of one text.
    ///
    /// # Errors
    /// Store failures reading the sets.
    pub fn sample_cluster_pairs(&self, id: &str, texts: usize) -> Result<ClusterSample> {
        let Some(&h) = self.by_id.get(id) else {
            return Ok(ClusterSample::default());
        };
        let survivor = self.meta[&h].survivor;
        let features = self.meta[&survivor].features;
        let min_jaccard = match (features, self.rule.short_text) {
            (Features::Chars, ShortText::CharNgrams { min_jaccard, .. }) => min_jaccard,
            (Features::ExactOnly, _) => return Ok(ClusterSample::default()),
            _ => self.rule.min_jaccard,
        };
        let mut members = self.ordered_members(survivor);
        if members.is_empty() {
            members.push(survivor);
        }
        let distinct = self.texts_of(
            members
                .into_iter()
                .filter(|m| self.meta[m].features == features),
        );
        // All of them, or `texts` spread from the first to the last.
        let n = distinct.len();
        let picked: Vec<u64> = if n <= texts {
            distinct.iter().map(|&(m, _)| m).collect()
        } else {
            let k = texts.max(2);
            (0..k).map(|i| distinct[i * (n - 1) / (k - 1)].0).collect()
        };
        let sets = self.shingle_sets(&picked)?;
        let mut pairs = Vec::new();
        for (i, (a, sa)) in picked.iter().zip(&sets).enumerate() {
            let Some(sa) = sa else { continue };
            for (b, sb) in picked[i + 1..].iter().zip(&sets[i + 1..]) {
                let Some(sb) = sb else { continue };
                pairs.push(ClusterPair {
                    a: self.meta[a].id.to_string(),
                    b: self.meta[b].id.to_string(),
                    jaccard: id_jaccard(sa, sb),
                });
            }
        }
        pairs.sort_by(|x, y| x.jaccard.total_cmp(&y.jaccard));
        Ok(ClusterSample { pairs, min_jaccard })
    }

    /// The survivor of a stored record's cluster (the record itself when it survives) and
    /// the cluster's size, without listing the members.
    pub fn survivor_of(&self, id: &str) -> Option<(&str, usize)> {
        let h = *self.by_id.get(id)?;
        let survivor = self.meta[&h].survivor;
        let size = self.members.get(&survivor).map_or(1, Vec::len);
        Some((&self.meta[&survivor].id, size))
    }

    /// What the pipeline knows of a stored record.
    pub fn record(&self, id: &str) -> Option<RecordView> {
        let h = *self.by_id.get(id)?;
        let m = &self.meta[&h];
        Some(RecordView {
            id: m.id.to_string(),
            fingerprint: self.fingerprint_hex(m.fingerprint),
            survivor: self.meta[&m.survivor].id.to_string(),
            first_seen: m.first_seen,
            url: m.url.as_deref().map(str::to_owned),
            retention_class: m.retention_class.as_deref().map(str::to_owned),
            indexed: match m.features {
                Features::Words => self.index.get(h).is_some(),
                Features::Chars => self.short_index.get(h).is_some(),
                Features::ExactOnly => false,
            },
        })
    }

    /// Installs index buffer merges that finished in the background (see
    /// [`HammingIndex::settle`]); for a long-running process whose inserts paused.
    pub fn settle_index(&mut self) {
        self.index.settle();
        self.short_index.settle();
    }

    /// Takes records first seen before `before` out of the Hamming index and the exact tier
    /// (a sliding window: newer records are compared only with recent ones); they stay in the
    /// store and in their clusters. Returns how many were taken out.
    ///
    /// # Errors
    /// Index failures (none expected) when an evicted record's text is handed to a copy of
    /// it still in the window.
    pub fn evict_from_index_before(&mut self, before: Timestamp) -> Result<usize> {
        // Records by first-seen time, built on the first call and kept up to date by
        // `remember`, so each call takes only what fell out of the window since the last
        // one instead of scanning every record.
        if self.window_queue.is_none() {
            let queue = self.meta.iter().map(|(&h, m)| (m.first_seen, h)).collect();
            self.window_queue = Some(queue);
        }
        let mut n = 0;
        while let Some(queue) = self.window_queue.as_mut() {
            match queue.first() {
                Some(&(first_seen, _)) if first_seen < before => {}
                _ => break,
            }
            let (_, h) = queue.pop_first().expect("not empty");
            let Some(m) = self.meta.get(&h) else {
                continue; // erased or expired since
            };
            let (content, survivor) = (m.content_hash, m.survivor);
            let mut hit = self.index.remove(h).is_some() || self.short_index.remove(h).is_some();
            if self.by_content.get(&content) == Some(&h) {
                self.by_content.remove(&content);
                hit = true;
                // Its exact copies were out of the index with it: one still in the window
                // takes the text.
                let members = self.members.get(&survivor).cloned().unwrap_or_default();
                self.hand_over_text(content, &members)?;
            }
            n += usize::from(hit);
        }
        Ok(n)
    }

    /// The number of stored records.
    pub fn len(&self) -> usize {
        self.meta.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.meta.is_empty()
    }

    /// Whether `id` is stored.
    pub fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Counters for the report and `/metrics`.
    pub fn stats(&self) -> DedupStats {
        let largest = self
            .members
            .iter()
            .max_by_key(|(s, m)| (m.len(), std::cmp::Reverse(**s)));
        DedupStats {
            records: self.meta.len(),
            clusters: self.members.len(),
            largest_cluster: largest.map_or(0, |(_, m)| m.len()),
            largest_cluster_survivor: largest.map(|(s, _)| self.meta[s].id.to_string()),
            index: self.index.stats(),
        }
    }

    /// Erases records (seed 000's erasure request): each record, its fingerprint, its index
    /// entries and its shingles go; merge-log rows about it go and its id is blanked where
    /// another row names it. When a survivor is erased, the earliest remaining member of its
    /// cluster becomes the survivor. Returns the ids that were stored.
    ///
    /// # Errors
    /// Store failures.
    pub fn erase(&mut self, ids: &[&str]) -> Result<Vec<String>> {
        self.exclusive(|d, batch| {
            let mut erased = Vec::new();
            for id in ids {
                let Some(&h) = d.by_id.get(*id) else {
                    continue;
                };
                d.forget(h, batch)?;
                erased.push((*id).to_owned());
            }
            Ok(erased)
        })
    }

    /// Erases every record of retention class `class` first seen before `before`.
    ///
    /// # Errors
    /// Store failures.
    pub fn expire(&mut self, class: &str, before: Timestamp) -> Result<Vec<String>> {
        let mut ids: Vec<(u64, String)> = self
            .meta
            .iter()
            .filter(|(_, m)| m.retention_class.as_deref() == Some(class) && m.first_seen < before)
            .map(|(&h, m)| (h, m.id.to_string()))
            .collect();
        ids.sort();
        let refs: Vec<&str> = ids.iter().map(|(_, s)| s.as_str()).collect();
        self.erase(&refs)
    }

    fn forget(&mut self, h: u64, batch: &mut Batch) -> Result<()> {
        if !self.meta.contains_key(&h) {
            return Ok(());
        }
        let evicted = self.evicted(h);
        let meta = self.meta.remove(&h).expect("just found");
        // Nothing of an erased text stays, its hash included (the map is only a shortcut).
        self.by_text.clear();
        self.by_id.remove(&meta.id);
        match meta.features {
            Features::Words => {
                self.index.remove(h);
            }
            Features::Chars => {
                self.short_index.remove(h);
            }
            Features::ExactOnly => {}
        }
        self.sets.remove(h);
        let mut members = self.members.remove(&meta.survivor).unwrap_or_default();
        members.retain(|&m| m != h);
        self.radius.remove(&meta.survivor);
        self.radius.remove(&h);
        if self.by_content.get(&meta.content_hash) == Some(&h) {
            self.by_content.remove(&meta.content_hash);
            // Exact duplicates always share a cluster: hand the text to one of them (the
            // window took them out with this one).
            if !evicted {
                self.hand_over_text(meta.content_hash, &members)?;
            }
        }
        if !members.is_empty() {
            let survivor = if meta.survivor == h {
                let next = *members
                    .iter()
                    .min_by(|a, b| {
                        let (ma, mb) = (&self.meta[a], &self.meta[b]);
                        ma.first_seen.cmp(&mb.first_seen).then(ma.id.cmp(&mb.id))
                    })
                    .expect("members is not empty");
                for &m in &members {
                    self.meta.get_mut(&m).expect("member is stored").survivor = next;
                    batch.survivor_updates.push((m, next));
                }
                self.radius.remove(&next);
                next
            } else {
                meta.survivor
            };
            self.members.insert(survivor, members);
        }
        batch.erase.push(h);
        Ok(())
    }

    /// Every cluster whose survivor is one of `ids` (or every cluster, for `None`), in
    /// survivor handle order.
    pub fn clusters(&self) -> Vec<ClusterView> {
        let mut survivors: Vec<u64> = self.members.keys().copied().collect();
        survivors.sort_unstable();
        survivors
            .into_iter()
            .filter_map(|s| self.cluster_of(&self.meta[&s].id))
            .collect()
    }

    /// The stored fingerprint (hex) of a record.
    pub fn fingerprint_of(&self, id: &str) -> Option<String> {
        let h = self.by_id.get(id)?;
        Some(self.fingerprint_hex(self.meta[h].fingerprint))
    }
}

/// Analyses one record (in parallel with others): fingerprint, content hash, verification set.
/// The fields of `record` as analysis weighs them.
fn fields_of(record: &Record) -> Vec<Field<'_>> {
    record
        .fields
        .iter()
        .map(|f| Field::weighted(&f.text, f.weight.max(1)))
        .collect()
}

/// [`prepare`] of a record whose boilerplate-free half was made by [`Analyzer::first_pass`]:
/// the same analysis.
fn prepare_finished(
    hasher: &SimHasher,
    furniture: &Boilerplate,
    record: &Record,
    first: &FirstPass,
    scratch: &mut Scratch,
) -> Result<Prepared, String> {
    let analysis = without_furniture_if_empty(furniture, |b| {
        hasher.finish_analysis(&first.pre, b, scratch)
    })?;
    Ok(Prepared::of_words(analysis, record.effective_host()))
}

/// `analyse` with the furniture, or without it when the furniture is all there is: a page
/// that is nothing but its site's template is fingerprinted whole (it is then too short or
/// an exact duplicate of the template).
fn without_furniture_if_empty(
    furniture: &Boilerplate,
    mut analyse: impl FnMut(Option<&Boilerplate>) -> Result<crate::fingerprint::Analysis<Arc<[u32]>>>,
) -> Result<crate::fingerprint::Analysis<Arc<[u32]>>, String> {
    let boilerplate = (!furniture.is_empty()).then_some(furniture);
    match analyse(boilerplate) {
        Ok(a) => Ok(a),
        Err(Error::EmptyFeatureBag { .. }) if boilerplate.is_some() => {
            analyse(None).map_err(|_| "no words to fingerprint".to_owned())
        }
        Err(Error::EmptyFeatureBag { .. }) => Err("no words to fingerprint".into()),
        Err(e) => Err(e.to_string()),
    }
}

impl Prepared {
    /// A record analysed over its words.
    fn of_words(
        analysis: crate::fingerprint::Analysis<Arc<[u32]>>,
        host: Option<String>,
    ) -> Prepared {
        Prepared {
            host,
            features: Features::Words,
            language: analysis.language.as_ref().map(|l| l.code),
            shingle_count: analysis.shingle_count,
            boilerplate_removed: analysis.boilerplate_removed,
            fingerprint: analysis.fingerprint.value(),
            content_hash: analysis.content_hash.0,
            shingles: analysis.shingles,
            tokens: analysis.token_count,
            text: None,
        }
    }
}

fn prepare(
    hasher: &SimHasher,
    short: Option<(&SimHasher, usize)>,
    furniture: &Boilerplate,
    record: &Record,
    scratch: &mut Scratch,
) -> Result<Prepared, String> {
    let fields = fields_of(record);
    let analysis =
        without_furniture_if_empty(furniture, |b| hasher.analyze_ids(&fields, b, scratch))?;
    let mut prepared = Prepared::of_words(analysis, record.effective_host());
    if let Some((short_hasher, min_words)) = short {
        if prepared.tokens < min_words {
            // Short text: the verification set and fingerprint come from character n-grams;
            // the exact tier keeps the word-level content hash.
            let chars = short_hasher
                .analyze_ids(&fields, None, scratch)
                .map_err(|e| e.to_string())?;
            prepared.features = Features::Chars;
            prepared.fingerprint = chars.fingerprint.value();
            prepared.shingles = chars.shingles;
            prepared.shingle_count = chars.shingle_count;
        }
    }
    Ok(prepared)
}

#[cfg(test)]
mod tests;
