//! The batch loop: a [`Runner`] takes an input as chunks of items and takes each record
//! through every stage to the store, in one direction.
//!
//! ```text
//! chunks ─▶ [boilerplate pass] ─▶ analysis thread ─▶ decide + commit ─▶ Sink
//!             (optional, a        (parse, analyse     (input order; each   (rejects, outcomes
//!              first read)         on the pool,        batch commits while  once durable)
//!                                  two chunks ahead)   the next is decided)
//! ```
//!
//! A caller says what an input item is and how to make a [`Record`] of it (a [`Source`]:
//! lines of JSON for the command line, Python objects for the Python package) and where the
//! outcomes go (a [`Sink`]); reading, learning boilerplate, parallel analysis, committing
//! behind and the recovery from a write conflict are the runner's.

use std::collections::VecDeque;
use std::sync::{mpsc, Arc};

use rayon::prelude::*;

mod learn;
use learn::{
    analyse_sampled, learn, Deferred, FirstPasses, SampledTexts, ANALYSES_IN_FLIGHT,
    DEFERRED_BYTES, FIRST_PASS_BYTES,
};

use super::{text_hash, Analyzer, Deduper, FirstPass, Outcome, PreparedRecord, SeenTexts};
use crate::store::Store;
use crate::text::BoilerplateLearner;
use crate::{Error, Record, Result, Timestamp};

/// What a run reads, item by item: how an item becomes a record.
///
/// Items come to the runner in chunks (of a few thousand: a chunk is one committed batch),
/// and [`parse`](Self::parse) runs on the runner's analysis threads, so a source can hand
/// over raw lines and leave the decoding to them.
pub trait Source: Sync {
    /// One input item as read: a line, a document, an object.
    type Item: Send + Sync;
    /// What the caller keeps of a record beside it (its raw form for an output file, where
    /// it came from), handed back with the record's outcome.
    type Extra: Send;
    /// Why an item is not a record; handed to [`Sink::rejected`].
    type Reject: Send;

    /// The record an item holds, or why it holds none. Called in parallel.
    fn parse(&self, item: Self::Item) -> std::result::Result<(Record, Self::Extra), Self::Reject>;

    /// The item's host, found cheaply (without decoding the whole item where possible), for
    /// boilerplate learning; `None` for an item no host's boilerplate is learned from.
    fn host(&self, item: &Self::Item) -> Option<String>;

    /// About how many bytes the item holds, which bounds what boilerplate learning keeps.
    fn size(&self, item: &Self::Item) -> usize;

    /// The item as one that holds only its own bytes: boilerplate learning keeps some items
    /// for a while, and an item that refers into a larger buffer (a line of a mapped block)
    /// would keep all of it. The default keeps the item as it is.
    fn detach(&self, item: Self::Item) -> Self::Item {
        item
    }
}

/// Where a run's results go, chunk by chunk in input order, once the chunk's batch is
/// durable in the store.
pub trait Sink<S: Source + ?Sized> {
    /// The caller's error: what the sink's own writes fail with, and the library's errors.
    type Error: From<Error>;

    /// An item that is not a record.
    fn rejected(&mut self, reject: S::Reject) -> std::result::Result<(), Self::Error>;

    /// A record's outcome, with what its source kept beside it.
    fn decided(
        &mut self,
        record: &Record,
        extra: S::Extra,
        outcome: Outcome,
    ) -> std::result::Result<(), Self::Error>;

    /// Whether the run stops at this reject, and with what error (a strict run stops at
    /// the first). It stops before the reject's chunk is decided, once what was decided
    /// before is written. The default goes on.
    fn stops_at(&mut self, reject: &S::Reject) -> Option<Self::Error> {
        let _ = reject;
        None
    }

    /// The items written so far, after each chunk (for a progress bar).
    fn progress(&mut self, items: u64) {
        let _ = items;
    }
}

/// How the boilerplate pass learns: see [`BoilerplateLearner`].
#[derive(Debug, Clone, Copy)]
pub struct BoilerplatePass {
    /// A shingle on more than this share of a host's pages is boilerplate.
    pub max_share: f64,
    /// Only hosts with at least this many pages in the input learn boilerplate.
    pub min_pages: u64,
    /// ... from shingles on at least this many of its sampled pages.
    pub min_count: u64,
    /// Pages sampled per host.
    pub sample_pages: u64,
}

impl Default for BoilerplatePass {
    fn default() -> Self {
        BoilerplatePass {
            max_share: 0.05,
            min_pages: 20,
            min_count: crate::text::DEFAULT_MIN_COUNT,
            sample_pages: 1000,
        }
    }
}

/// What a run read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// Items read (records and rejects).
    pub items: u64,
    /// The bytes of the records' text fields.
    pub text_bytes: u64,
}

/// Runs batches of input through a [`Deduper`]: a [`Source`] says what an input item is,
/// a [`Sink`] takes the outcomes; [`learn_boilerplate`](Self::learn_boilerplate) is the
/// optional first pass, [`run`](Self::run) the batch loop.
///
/// ```
/// use neardup::pipeline::{Runner, Sink, Source};
/// use neardup::{Decision, Deduper, Outcome, Record};
///
/// struct Texts;
/// impl Source for Texts {
///     type Item = (String, String);
///     type Extra = ();
///     type Reject = String;
///     fn parse(&self, (id, text): (String, String)) -> Result<(Record, ()), String> {
///         if text.is_empty() { return Err(format!("{id}: no text")) }
///         Ok((Record::new(id, text), ()))
///     }
///     fn host(&self, _: &(String, String)) -> Option<String> { None }
///     fn size(&self, (id, text): &(String, String)) -> usize { id.len() + text.len() }
/// }
///
/// #[derive(Default)]
/// struct Merged(Vec<String>);
/// impl Sink<Texts> for Merged {
///     type Error = neardup::Error;
///     fn rejected(&mut self, _: String) -> neardup::Result<()> { Ok(()) }
///     fn decided(&mut self, r: &Record, _: (), o: Outcome) -> neardup::Result<()> {
///         if matches!(o.decision, Decision::Merged { .. }) { self.0.push(r.id.clone()) }
///         Ok(())
///     }
/// }
///
/// let text = "the quick brown fox jumps over the lazy dog near the river bank today";
/// let chunk = vec![("a".to_string(), text.to_string()), ("b".to_string(), text.to_string())];
/// let mut deduper = Deduper::builder().open(neardup::store::MemoryStore::new())?;
/// let mut merged = Merged::default();
/// let totals = Runner::new(&mut deduper)
///     .run(&Texts, vec![chunk], &mut merged, |_| Err(neardup::Error::Conflict))?;
/// assert_eq!(totals.items, 2);
/// assert_eq!(merged.0, ["b"]);
/// # Ok::<(), neardup::Error>(())
/// ```
pub struct Runner<'d, St: Store> {
    deduper: &'d mut Deduper<St>,
    /// The analysis pool: the caller's, or one of its own made when first needed.
    pool: Option<Arc<rayon::ThreadPool>>,
    now: Timestamp,
    /// The records the input holds, as far as known: the store grows for them, again after
    /// a conflict.
    expected: u64,
    /// The boilerplate pass's analyses for the main pass.
    first_passes: FirstPasses,
}

impl<St: Store> std::fmt::Debug for Runner<'_, St> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("now", &self.now)
            .field("expected", &self.expected)
            .finish_non_exhaustive()
    }
}

/// One chunk of input, parsed and analysed, waiting for its decisions.
struct Chunk<S: Source> {
    records: Vec<Record>,
    extras: Vec<S::Extra>,
    prepared: Vec<PreparedRecord>,
    rejects: Vec<S::Reject>,
    items: u64,
    text_bytes: u64,
}

/// A chunk decided, whose outputs wait until its batch is durable.
struct Decided<S: Source> {
    chunk: Chunk<S>,
    outcomes: Vec<Outcome>,
}

/// How a chunk's batch is committed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Commit {
    /// Under the store's lock, after catching up with other processes' commits; durable
    /// when the decision returns ([`Deduper::process_prepared`]).
    Now,
    /// Handed to the store, which commits it while the next chunk is decided
    /// ([`Deduper::process_prepared_behind`]): durable once the next chunk's decision (or
    /// the last wait) returns, refused if another process wrote meanwhile.
    Behind,
}

impl<'d, St: Store> Runner<'d, St> {
    /// A runner over `deduper`. Unless [`analysis_pool`](Self::analysis_pool) gives one, it
    /// analyses on a pool of its own (one thread per core), started when first needed.
    pub fn new(deduper: &'d mut Deduper<St>) -> Self {
        Runner {
            deduper,
            pool: None,
            now: Timestamp::now(),
            expected: 0,
            first_passes: FirstPasses::default(),
        }
    }

    /// The analysis pool, started now if the runner has none yet.
    fn pool(&mut self) -> Result<Arc<rayon::ThreadPool>> {
        if self.pool.is_none() {
            let pool = rayon::ThreadPoolBuilder::new()
                .thread_name(|i| format!("neardup-analysis-{i}"))
                .build()?;
            self.pool = Some(Arc::new(pool));
        }
        Ok(self.pool.clone().expect("set above"))
    }

    setters! {
        /// Analyses on `pool` instead. Analysis needs a pool of its own: the deduper's index
        /// merges use rayon's global pool, and a job queued on a pool busy with a chunk's
        /// analysis would wait for all of it.
        analysis_pool(pool: Arc<rayon::ThreadPool>) => Some;

        /// The time the run's records are first seen at, when they carry none (default: when
        /// the runner was made).
        now(now: Timestamp);

        /// About how many records the input holds (the deduper was opened for them, see
        /// [`DeduperBuilder::expected_records`](super::DeduperBuilder::expected_records)): a
        /// deduper opened anew after a conflict grows for them.
        /// [`learn_boilerplate`](Self::learn_boilerplate) counts them.
        expected_records(expected: u64);
    }

    /// The deduper the run decides with (after a conflict, the one opened anew).
    pub fn deduper(&self) -> &Deduper<St> {
        self.deduper
    }

    /// Learns each host's boilerplate from a first read of the input, and keeps the sampled
    /// pages' analyses (as memory allows) for [`run`](Self::run) to finish rather than
    /// analyse again. `progress` gets the items read so far after each chunk. Returns how
    /// many items the input holds; the store grows for that many records.
    ///
    /// `chunks` must be the input [`run`](Self::run) reads next, in the same order.
    ///
    /// # Errors
    /// The store's, saving what was learned.
    pub fn learn_boilerplate<S: Source>(
        &mut self,
        source: &S,
        chunks: impl IntoIterator<Item = Vec<S::Item>>,
        pass: &BoilerplatePass,
        mut progress: impl FnMut(u64),
    ) -> Result<u64> {
        let hasher = self.deduper.hasher().clone();
        let analyzer = self.deduper.analyzer();
        let mut first_passes = FirstPasses::default();
        let mut learner =
            BoilerplateLearner::new(pass.max_share, pass.min_pages, pass.sample_pages)
                .with_min_count(pass.min_count);
        // Hosts come from a light look at each item; only the pages a host still samples are
        // parsed whole and shingled, in parallel, and the learner counts each host's pages in
        // parallel too.
        let mut deferred = Deferred::default();
        let texts = SampledTexts::default();
        let (analyzer, hasher, texts) = (&analyzer, &hasher, &texts);
        let pool = self.pool()?;
        let pool = &*pool;
        let items = pool.in_place_scope(|pool_scope| {
            let mut in_flight = VecDeque::new();
            let mut seen = 0u64;
            for chunk in chunks {
                let base = seen;
                seen += chunk.len() as u64;
                let hosts: Vec<Option<String>> =
                    pool.install(|| chunk.par_iter().map(|item| source.host(item)).collect());
                let mut sampled = Vec::new();
                for ((seq, item), host) in (base..).zip(chunk).zip(hosts) {
                    let Some(host) = host else { continue };
                    if !learner.begin_page(&host) {
                        continue;
                    }
                    if learner.pages(&host) < pass.min_pages {
                        deferred.defer(source, host, seq, item);
                    } else {
                        deferred.take(source, &host, &mut sampled);
                        sampled.push((seq, item, host));
                    }
                }
                if deferred.bytes > DEFERRED_BYTES {
                    deferred.take_all(&mut sampled);
                }
                // Each sampled page's boilerplate-free analysis, for the main pass to finish
                // (while memory allows: the count lags by the chunks in flight), or just its
                // shingles. Chunks are analysed while the next ones are read and sampled, a
                // few at a time: one page of megabytes keeps a thread busy long after the
                // rest of its chunk, and the next chunk's pages fill the other.
                let keep = first_passes.bytes < FIRST_PASS_BYTES;
                let (tx, done) = mpsc::sync_channel(1);
                pool_scope.spawn(move |_| {
                    let _ = tx.send(analyse_sampled(
                        source, sampled, keep, analyzer, hasher, texts,
                    ));
                });
                in_flight.push_back(done);
                while in_flight.len() > ANALYSES_IN_FLIGHT {
                    learn(in_flight.pop_front(), pool, &mut learner, &mut first_passes);
                }
                progress(seen);
            }
            while !in_flight.is_empty() {
                learn(in_flight.pop_front(), pool, &mut learner, &mut first_passes);
            }
            seen
        });
        first_passes.sort();
        self.first_passes = first_passes;
        self.deduper.learn_boilerplate(learner.finish())?;
        // Now the input's size is known, not guessed.
        self.expected = items;
        self.deduper.reserve(items)?;
        Ok(items)
    }

    /// Deduplicates the input: each chunk is parsed and analysed on the analysis pool (up
    /// to two chunks ahead), decided in input order and committed while the next chunk is
    /// decided; its rejects and outcomes go to `sink` once its batch is durable.
    ///
    /// Should another process write to the store meanwhile ([`Error::Conflict`]), the
    /// chunks whose batches were not written are decided again, under the store's lock, by
    /// the deduper `reopen` opens anew over the store (it is told how many records that
    /// is), and so is every chunk after them.
    ///
    /// # Errors
    /// The store's and the sink's, `reopen`'s, and the error of a reject the sink
    /// [stops at](Sink::stops_at). What was written to the sink before is durable.
    pub fn run<S, K>(
        &mut self,
        source: &S,
        chunks: impl IntoIterator<Item = Vec<S::Item>, IntoIter: Send>,
        sink: &mut K,
        mut reopen: impl FnMut(usize) -> std::result::Result<Deduper<St>, K::Error>,
    ) -> std::result::Result<Totals, K::Error>
    where
        S: Source,
        K: Sink<S>,
    {
        let analyzer = self.deduper.analyzer();
        let first_passes = std::mem::take(&mut self.first_passes);
        let pool = self.pool()?;
        let pool = &*pool;
        let mut totals = Totals::default();
        // Two stages at once, linked by a bounded channel: a thread parses and analyses
        // each chunk on the pool; this thread decides and commits the chunks in input
        // order. Analysis may run up to two chunks ahead, so neither stage waits for the
        // other chunk by chunk.
        let (analysed_tx, analysed_rx) = mpsc::sync_channel::<Chunk<S>>(2);
        let analyzer = &analyzer;
        let chunks = chunks.into_iter();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                // Records whose text repeats an earlier one's are not analysed again, nor
                // are those the boilerplate pass analysed.
                let mut seen = SeenTexts::new();
                let mut first_passes = first_passes;
                let mut next = 0u64;
                for items in chunks {
                    let base = next;
                    next += items.len() as u64;
                    let chunk = pool.install(|| {
                        analyse(source, items, base, analyzer, &mut seen, &mut first_passes)
                    });
                    if analysed_tx.send(chunk).is_err() {
                        break; // the deciding stage stopped on an error
                    }
                }
            });
            let mut decider = Decider {
                deduper: &mut *self.deduper,
                pool,
                now: self.now,
                expected: self.expected,
                analyzer_generation: analyzer.generation(),
                totals: &mut totals,
            };
            decider.decide_all(analysed_rx, sink, &mut reopen)
        })?;
        Ok(totals)
    }
}

/// The deciding stage of [`Runner::run`].
struct Decider<'a, St: Store> {
    deduper: &'a mut Deduper<St>,
    pool: &'a rayon::ThreadPool,
    now: Timestamp,
    expected: u64,
    /// The generation of the analysis thread's analyzer.
    analyzer_generation: u64,
    totals: &'a mut Totals,
}

impl<St: Store> Decider<'_, St> {
    /// Each chunk is decided while the batch of the one before commits; the outputs of a
    /// chunk are written once its batch is durable, which the next chunk's decision (or the
    /// last wait) confirms. The first chunk commits at once, under the store's lock after
    /// catching up with other processes (a run of one chunk gains nothing from committing
    /// behind, and a short run on a store that a long one is filling would be refused);
    /// after a conflict, so does every chunk left.
    fn decide_all<S: Source, K: Sink<S>>(
        &mut self,
        analysed: mpsc::Receiver<Chunk<S>>,
        sink: &mut K,
        reopen: &mut impl FnMut(usize) -> std::result::Result<Deduper<St>, K::Error>,
    ) -> std::result::Result<(), K::Error> {
        let mut unconfirmed: Option<Decided<S>> = None;
        let mut commit = Commit::Now;
        let mut conflicted = false;
        for mut chunk in analysed {
            if self.analyzer_generation != self.deduper.analyzer_generation() {
                // Boilerplate changed (found in another process's commit), or a deduper
                // opened anew after a conflict: analyses made with the old one are made
                // again, in parallel here rather than one by one in the decisions.
                self.prepare_again(&mut chunk);
            }
            if let Some(stop) = chunk.rejects.first().and_then(|r| sink.stops_at(r)) {
                // What was decided before is written out first, as a run that stops on an
                // error leaves it.
                self.deduper.wait_committed()?;
                if let Some(before) = unconfirmed.take() {
                    self.write(before, sink)?;
                }
                return Err(stop);
            }
            match self.decide(&mut chunk, commit) {
                Ok(outcomes) => {
                    let d = Decided { chunk, outcomes };
                    match commit {
                        Commit::Now => self.write(d, sink)?,
                        Commit::Behind => {
                            if let Some(before) = unconfirmed.replace(d) {
                                self.write(before, sink)?;
                            }
                        }
                    }
                }
                Err(Error::Conflict) => {
                    let mut redo: Vec<Chunk<S>> =
                        unconfirmed.take().into_iter().map(|d| d.chunk).collect();
                    redo.push(chunk);
                    self.redo_after_conflict(redo, sink, reopen)?;
                    conflicted = true;
                    commit = Commit::Now;
                }
                Err(e) => return Err(e.into()),
            }
            if !conflicted {
                commit = Commit::Behind;
            }
            sink.progress(self.totals.items);
        }
        match self.deduper.wait_committed() {
            Ok(()) => {
                if let Some(last) = unconfirmed.take() {
                    self.write(last, sink)?;
                }
                Ok(())
            }
            Err(Error::Conflict) => {
                let redo = unconfirmed.take().into_iter().map(|d| d.chunk).collect();
                self.redo_after_conflict(redo, sink, reopen)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Analyses a chunk's records again, with the deduper's current analyzer.
    fn prepare_again<S: Source>(&self, chunk: &mut Chunk<S>) {
        let analyzer = self.deduper.analyzer();
        chunk.prepared = self.pool.install(|| analyzer.prepare(&chunk.records));
    }

    /// Decides a chunk's records (its analyses are taken) and commits their batch as
    /// `commit` says.
    fn decide<S: Source>(&mut self, chunk: &mut Chunk<S>, commit: Commit) -> Result<Vec<Outcome>> {
        if chunk.records.is_empty() {
            // Nothing to decide; what the caller takes this call to confirm must be, though.
            self.deduper.wait_committed()?;
            return Ok(Vec::new());
        }
        let prepared = std::mem::take(&mut chunk.prepared);
        match commit {
            Commit::Now => self
                .deduper
                .process_prepared(&chunk.records, prepared, self.now),
            Commit::Behind => {
                self.deduper
                    .process_prepared_behind(&chunk.records, prepared, self.now)
            }
        }
    }

    /// Hands a chunk's rejects and its records' outcomes to the sink (once its batch is
    /// durable).
    fn write<S: Source, K: Sink<S>>(
        &mut self,
        d: Decided<S>,
        sink: &mut K,
    ) -> std::result::Result<(), K::Error> {
        let Decided { chunk, outcomes } = d;
        self.totals.items += chunk.items;
        self.totals.text_bytes += chunk.text_bytes;
        for reject in chunk.rejects {
            sink.rejected(reject)?;
        }
        for ((record, extra), outcome) in chunk.records.iter().zip(chunk.extras).zip(outcomes) {
            sink.decided(record, extra, outcome)?;
        }
        Ok(())
    }

    /// After [`Error::Conflict`] (another process wrote to the store while a batch was
    /// decided): a deduper opened anew, so that memory holds what the store holds now,
    /// decides the chunks whose batches were not written (`unconfirmed`, oldest first)
    /// again, under the store's lock.
    fn redo_after_conflict<S: Source, K: Sink<S>>(
        &mut self,
        unconfirmed: Vec<Chunk<S>>,
        sink: &mut K,
        reopen: &mut impl FnMut(usize) -> std::result::Result<Deduper<St>, K::Error>,
    ) -> std::result::Result<(), K::Error> {
        let records = unconfirmed.iter().map(|c| c.records.len()).sum();
        *self.deduper = reopen(records)?;
        self.deduper.reserve(self.expected)?;
        for mut chunk in unconfirmed {
            self.prepare_again(&mut chunk);
            let outcomes = self.decide(&mut chunk, Commit::Now)?;
            self.write(Decided { chunk, outcomes }, sink)?;
        }
        Ok(())
    }
}

/// Parses and analyses one chunk (in parallel), finishing the boilerplate pass's analyses
/// of its records where there are some.
fn analyse<S: Source>(
    source: &S,
    items: Vec<S::Item>,
    base: u64,
    analyzer: &Analyzer,
    seen: &mut SeenTexts,
    first_passes: &mut FirstPasses,
) -> Chunk<S> {
    let count = items.len() as u64;
    let firsts: Vec<Option<FirstPass>> = (base..base + count)
        .map(|seq| first_passes.take(seq))
        .collect();
    let parsed: Vec<_> = items
        .into_par_iter()
        .zip(firsts)
        .map(|(item, first)| (source.parse(item), first))
        .collect();
    let mut chunk = Chunk {
        records: Vec::with_capacity(parsed.len()),
        extras: Vec::with_capacity(parsed.len()),
        prepared: Vec::new(),
        rejects: Vec::new(),
        items: count,
        text_bytes: 0,
    };
    let mut first = Vec::with_capacity(parsed.len());
    for (p, first_pass) in parsed {
        match p {
            Ok((record, extra)) => {
                chunk.text_bytes += record
                    .fields
                    .iter()
                    .map(|f| f.text.len() as u64)
                    .sum::<u64>();
                first.push(first_pass);
                chunk.records.push(record);
                chunk.extras.push(extra);
            }
            Err(reject) => chunk.rejects.push(reject),
        }
    }
    chunk.prepared = analyzer.prepare_run(&chunk.records, seen, first);
    chunk
}

#[cfg(test)]
mod tests;
