//! The single writer: one thread owns every change to the store, so that two near
//! duplicates posted at the same moment are decided one after the other (the second is
//! merged into the first), and so that many requests share one durable commit.
//!
//! Group commit: the thread takes whatever insert requests are queued (up to
//! `max_group` records) and hands them to one [`Deduper::process`] call, which is one SQLite
//! transaction with one fsync; each request is answered only after that call returns, so
//! an acknowledged write survives `kill -9`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use neardup::pipeline::{Analyzer, PreparedRecord};
use neardup::{Deduper, Record, Store, Timestamp};
use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;

use super::api::Answer;
use super::metrics::Metrics;

/// How often an idle writer installs finished index merges (and checks the window).
const SETTLE_TICK: Duration = Duration::from_millis(250);

/// The shared pipeline: readers take the read lock, the writer thread the write lock.
pub type Shared = Arc<RwLock<Deduper<Box<dyn Store>>>>;

/// A copy of the pipeline's analysis state, so that records are analysed before any lock
/// is taken; replaced when the pipeline's boilerplate changes (records analysed with an
/// old copy are analysed again under the lock, so a stale copy costs time, never answers).
#[derive(Clone)]
pub struct Analysis(Arc<Mutex<Arc<Analyzer>>>);

impl Analysis {
    pub fn new(d: &Deduper<Box<dyn Store>>) -> Analysis {
        Analysis(Arc::new(Mutex::new(Arc::new(d.analyzer()))))
    }

    /// The current copy.
    pub fn get(&self) -> Arc<Analyzer> {
        self.0.lock().clone()
    }

    /// Takes a new copy if the current one is older than the pipeline's boilerplate.
    pub fn refresh(&self, d: &Deduper<Box<dyn Store>>) {
        let mut current = self.0.lock();
        if current.generation() != d.analyzer_generation() {
            *current = Arc::new(d.analyzer());
        }
    }
}

/// A change for the writer thread.
pub enum Job {
    /// Insert records (analysed by the handler); the answer comes back per record, in
    /// order.
    Insert {
        records: Vec<Record>,
        prepared: Vec<PreparedRecord>,
        reply: oneshot::Sender<Result<Vec<Answer>, String>>,
    },
    /// Erase one record; answers whether it was stored.
    Erase {
        id: String,
        reply: oneshot::Sender<Result<bool, String>>,
    },
}

/// What the writer shares with the handlers.
pub struct WriterState {
    /// Set when a commit failed: the pipeline refuses further writes.
    pub failed: AtomicBool,
    pub failure: parking_lot::Mutex<Option<String>>,
    /// Records stored, for /healthz without taking the lock.
    pub records: AtomicUsize,
}

/// How the writer runs.
pub struct WriterConfig {
    /// Records per group commit, at most (a larger single request still goes whole).
    pub max_group: usize,
    /// The sliding window, if any.
    pub window: Option<Duration>,
    /// Answers remembered for retried requests.
    pub remember: usize,
}

/// Answers given to recent inserts, by id: a retried request (same id, same text) gets the
/// answer its first attempt got.
struct Recent {
    by_id: HashMap<String, Answer>,
    order: VecDeque<String>,
    cap: usize,
}

impl Recent {
    fn insert(&mut self, a: &Answer) {
        if self.cap == 0 || self.by_id.contains_key(&a.id) {
            return;
        }
        if self.order.len() >= self.cap {
            if let Some(old) = self.order.pop_front() {
                self.by_id.remove(&old);
            }
        }
        self.order.push_back(a.id.clone());
        self.by_id.insert(a.id.clone(), a.clone());
    }

    fn forget(&mut self, id: &str) {
        // The id stays in `order` until it ages out; harmless.
        self.by_id.remove(id);
    }
}

/// The writer thread's body; returns when every sender is dropped and the queue is empty.
pub fn run(
    deduper: Shared,
    analysis: Analysis,
    jobs: Receiver<Job>,
    config: WriterConfig,
    state: Arc<WriterState>,
    metrics: Arc<Metrics>,
) {
    let mut w = Writer {
        deduper,
        analysis,
        state,
        metrics,
        recent: Recent {
            by_id: HashMap::new(),
            order: VecDeque::new(),
            cap: config.remember,
        },
        window: config.window,
        evicted_at: None,
        evict_now: true,
    };
    // The window is enforced to within this tick even when nothing is written, and index
    // merges that finished in the background are installed (queries then stop scanning
    // their buffers).
    let tick = config.window.map_or(SETTLE_TICK, |w| {
        (w / 100).clamp(Duration::from_millis(50), SETTLE_TICK)
    });
    w.maybe_evict(tick);
    loop {
        let first = match jobs.recv_timeout(tick) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                w.maybe_evict(tick);
                w.deduper.write().settle_index();
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let size = |j: &Job| match j {
            Job::Insert { records, .. } => records.len(),
            Job::Erase { .. } => 1,
        };
        let mut queued = size(&first);
        let mut batch = vec![first];
        while queued < config.max_group {
            match jobs.try_recv() {
                Ok(job) => {
                    queued += size(&job);
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        w.maybe_evict(tick);
        // Inserts in a row go into one commit; an erase is applied in its place in the order.
        let mut group = Vec::new();
        for job in batch {
            match job {
                Job::Insert {
                    records,
                    prepared,
                    reply,
                } => group.push((records, prepared, reply)),
                Job::Erase { id, reply } => {
                    w.insert(std::mem::take(&mut group));
                    let _ = reply.send(w.erase(&id));
                }
            }
        }
        w.insert(group);
    }
}

type InsertReply = oneshot::Sender<Result<Vec<Answer>, String>>;

/// One insert request's records, their analyses and where its answer goes.
type InsertJob = (Vec<Record>, Vec<PreparedRecord>, InsertReply);

struct Writer {
    deduper: Shared,
    analysis: Analysis,
    state: Arc<WriterState>,
    metrics: Arc<Metrics>,
    recent: Recent,
    window: Option<Duration>,
    evicted_at: Option<Instant>,
    /// A record older than the window was inserted: evict before the next commit.
    evict_now: bool,
}

impl Writer {
    fn cutoff(&self) -> Option<Timestamp> {
        let w = self.window?;
        Some(Timestamp(Timestamp::now().0 - w.as_millis() as i64))
    }

    fn maybe_evict(&mut self, tick: Duration) {
        let Some(cutoff) = self.cutoff() else {
            return;
        };
        if !self.evict_now && self.evicted_at.is_some_and(|t| t.elapsed() < tick) {
            return;
        }
        match self.deduper.write().evict_from_index_before(cutoff) {
            Ok(n) => self.metrics.evicted(n as u64),
            Err(e) => {
                self.fail(&e);
            }
        }
        self.evicted_at = Some(Instant::now());
        self.evict_now = false;
    }

    fn fail(&self, e: &neardup::Error) -> String {
        let message = format!("store write failed: {e}");
        self.state.failed.store(true, Ordering::SeqCst);
        *self.state.failure.lock() = Some(message.clone());
        message
    }

    fn insert(&mut self, group: Vec<InsertJob>) {
        if group.is_empty() {
            return;
        }
        let total = group.iter().map(|(r, _, _)| r.len()).sum();
        let mut records = Vec::with_capacity(total);
        let mut prepared = Vec::with_capacity(total);
        let mut sizes = Vec::with_capacity(group.len());
        let mut replies = Vec::with_capacity(group.len());
        for (r, p, reply) in group {
            sizes.push(r.len());
            records.extend(r);
            prepared.extend(p);
            replies.push(reply);
        }
        let started = Instant::now();
        let now = Timestamp::now();
        // The handlers analysed the records (the costly part) before any lock, so readers
        // wait only for the decisions and the commit.
        let result = {
            let mut d = self.deduper.write();
            let result = d.process_prepared(&records, prepared, now);
            self.analysis.refresh(&d);
            result
        };
        match result {
            Err(e) => {
                let message = self.fail(&e);
                for reply in replies {
                    let _ = reply.send(Err(message.clone()));
                }
            }
            Ok(outcomes) => {
                self.metrics.committed(records.len(), started.elapsed());
                if let Some(cutoff) = self.cutoff() {
                    if records.iter().any(|r| r.first_seen.unwrap_or(now) < cutoff) {
                        self.evict_now = true;
                    }
                }
                let mut outcomes = outcomes.into_iter();
                for (n, reply) in sizes.into_iter().zip(replies) {
                    let answers: Vec<Answer> = outcomes
                        .by_ref()
                        .take(n)
                        .map(|o| {
                            let recent = &self.recent;
                            let a = Answer::from_outcome(&o, |id| recent.by_id.get(id).cloned());
                            self.metrics.inserted(a.decision, a.already_stored);
                            if !a.already_stored && a.decision != "rejected" {
                                self.recent.insert(&a);
                                self.state.records.fetch_add(1, Ordering::Relaxed);
                            }
                            a
                        })
                        .collect();
                    let _ = reply.send(Ok(answers));
                }
            }
        }
    }

    fn erase(&mut self, id: &str) -> Result<bool, String> {
        let result = {
            let mut d = self.deduper.write();
            d.erase(&[id])
        };
        match result {
            Ok(erased) => {
                self.recent.forget(id);
                self.metrics.erased(erased.len() as u64);
                self.state
                    .records
                    .fetch_sub(erased.len(), Ordering::Relaxed);
                Ok(!erased.is_empty())
            }
            Err(e) => Err(self.fail(&e)),
        }
    }
}
