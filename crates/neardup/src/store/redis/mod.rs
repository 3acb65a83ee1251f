//! The Redis store (feature `redis`): one shared store for many `neardup` processes on many
//! machines, on a single Redis server or a Redis Cluster.
//!
//! # URLs
//!
//! `redis://[user:pass@]host:port/db?prefix=news` for one server, and
//! `redis+cluster://[user:pass@]host:port,host:port/?prefix=news` for a cluster (any of its
//! masters; the rest are discovered). `rediss://` is recognised but needs a build with TLS,
//! which this one lacks. Query options: `prefix` (default `neardup`: one prefix per
//! dataset), `bands` (seed 000's band sets written for other tools: 0, 2, 4 (default), 8 or
//! 16), `lock_ttl_ms` (30000), `lock_timeout_ms` (60000), `timeout_ms` (30000: connect and
//! reply), `retries` (6).
//!
//! # Layout
//!
//! Keys under the hash tag `{P}` share one cluster slot, so one Lua script can change them
//! atomically: `{P}:meta` (hash), `{P}:lock` (string), `{P}:wake` (list: a token the
//! lock's release pushes for a waiting process), `{P}:log` (stream: the change log), `{P}:rec`
//! (hash: handle -> `token fingerprint features json-record`), `{P}:surv` (hash:
//! handle -> survivor, after a survivor change), `{P}:merges` and `{P}:rejections` (lists of
//! JSON rows, `""` where a row was erased), `{P}:bp` (hash: host -> boilerplate), `{P}:labels`
//! (hash: JSON `[a, b]` -> JSON label) and `{P}:gc`
//! (list: derived keys an erasure still has to clean on a cluster). Derived data is spread
//! over slots: `P:s:<handle>:<token>` (compact shingle ids, little-endian u32s) and seed
//! 000's band sets `P:b:<band>:<value>` (`P:c:…` for short-text records) with members
//! `<handle>:<fingerprint hex>`, so a tool querying Redis directly needs no second round
//! trip per candidate.
//!
//! # Consistency
//!
//! Each process keeps the index in memory (one round trip per batch instead of one per band
//! per record). [`lock`](Store::lock) takes `{P}:lock` with `SET NX PX` and, in the same
//! script, reads the change log past this process's position; [`commit`](Store::commit) is
//! one script that refuses the batch if the log moved since (a lock that expired under a
//! stalled process), then writes records, survivor changes, merge log, rejections,
//! boilerplate and erasures and appends the change to the log. Shingle blobs and band
//! members are written before that script (under a key no other commit can use), so a
//! committed record always has them. A commit whose reply was lost is recognised by its
//! token in the log, never blindly retried.

mod commit;
mod config;
mod conn;
mod layout;
mod lock;
mod read;
mod scripts;
mod sync;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use self::config::Config;
use self::conn::Conn;
use self::layout::{Keys, LAYOUT_VERSION};
use super::{Batch, HostBoilerplate, Label, MergeLogEntry, Rejection, Store, StoredRecord};
use crate::{Error, Result};

/// Counters of the store's traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedisStats {
    /// Requests sent and answered (a pipeline or a script counts once).
    pub round_trips: u64,
    /// Shingle sets read from Redis (cache misses).
    pub shingle_reads: u64,
    /// Commits refused because another process had committed under a lock this one had lost.
    pub stale_commits: u64,
    /// Times the store lock was taken.
    pub locks: u64,
    /// Time spent waiting for the store lock (other processes held it).
    pub lock_wait: Duration,
    /// Time the store lock was held: catching up, deciding and committing.
    pub lock_held: Duration,
    /// Time spent catching up with the change log (reading and parsing other processes'
    /// commits), in or out of the lock.
    pub sync_time: Duration,
    /// Time spent reading verification sets from Redis.
    pub read_time: Duration,
    /// Time spent committing (the request and its reply).
    pub commit_time: Duration,
}

/// The Redis store. See the [module documentation](self) for URLs and the layout.
pub struct RedisStore {
    cfg: Config,
    keys: Keys,
    conn: Mutex<Option<Conn>>,
    /// Idle connections for reads made from several threads at once (see `read`).
    readers: Mutex<Vec<Conn>>,
    /// The last change-log id this process has applied (`""`: none).
    seen: Mutex<String>,
    /// Commit token of each known record: part of its shingle key.
    tokens: Mutex<HashMap<u64, u64>>,
    cache: Mutex<HashMap<u64, Arc<Vec<u32>>>>,
    /// The lock's token while this process holds it.
    lock_token: Option<String>,
    /// Log entries read together with the lock, for the `sync` that follows.
    prefetched: Vec<(String, Batch)>,
    /// Whether the prefetch stopped at its chunk size (more may follow).
    prefetch_full: bool,
    /// When this process took the lock it holds.
    locked_at: Option<Instant>,
    round_trips: AtomicU64,
    shingle_reads: AtomicU64,
    stale_commits: AtomicU64,
    locks: AtomicU64,
    lock_wait: Timer,
    lock_held: Timer,
    sync_time: Timer,
    read_time: Timer,
    commit_time: Timer,
}

/// Time summed over many intervals, in nanoseconds.
#[derive(Debug, Default)]
struct Timer(AtomicU64);

impl Timer {
    fn add(&self, since: Instant) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(ns, Ordering::Relaxed);
    }
    fn total(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.cfg.display)
            .field("prefix", &self.cfg.prefix)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent, so a poisoned lock is usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn new_token() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut seed = Vec::with_capacity(40);
    seed.extend_from_slice(&nanos.to_le_bytes());
    seed.extend_from_slice(&std::process::id().to_le_bytes());
    seed.extend_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let stack = 0u8;
    seed.extend_from_slice(&(std::ptr::addr_of!(stack) as usize).to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&seed)
}

impl RedisStore {
    /// Connects to the Redis server or cluster at `url` (see the module documentation) and
    /// checks the layout version under the URL's prefix.
    ///
    /// # Errors
    /// [`Error::Store`] for a malformed URL, a server that cannot be reached after the
    /// retries, or keys of another layout version under the prefix.
    pub fn open(url: &str) -> Result<RedisStore> {
        let cfg = Config::parse(url).map_err(|reason| Error::Store {
            path: PathBuf::from(url.split('@').next_back().unwrap_or(url)),
            reason,
        })?;
        let store = RedisStore {
            keys: Keys {
                prefix: cfg.prefix.clone(),
            },
            cfg,
            conn: Mutex::new(None),
            readers: Mutex::new(Vec::new()),
            seen: Mutex::new(String::new()),
            tokens: Mutex::new(HashMap::new()),
            cache: Mutex::new(HashMap::new()),
            lock_token: None,
            prefetched: Vec::new(),
            prefetch_full: false,
            locked_at: None,
            round_trips: AtomicU64::new(0),
            shingle_reads: AtomicU64::new(0),
            stale_commits: AtomicU64::new(0),
            locks: AtomicU64::new(0),
            lock_wait: Timer::default(),
            lock_held: Timer::default(),
            sync_time: Timer::default(),
            read_time: Timer::default(),
            commit_time: Timer::default(),
        };
        match store.get_meta("redis_layout")? {
            None => store.put_meta("redis_layout", LAYOUT_VERSION)?,
            Some(v) if v == LAYOUT_VERSION => {}
            Some(v) => {
                return Err(store.fail(format!(
                    "keys under prefix {:?} have Redis layout version {v}; this neardup reads version {LAYOUT_VERSION}: use the neardup release that wrote them, or another prefix",
                    store.cfg.prefix
                )))
            }
        }
        *lock(&store.seen) = store.last_log_id()?;
        Ok(store)
    }

    /// The key prefix (one per dataset).
    pub fn prefix(&self) -> &str {
        &self.cfg.prefix
    }

    /// Traffic counters since the store was opened.
    pub fn stats(&self) -> RedisStats {
        RedisStats {
            round_trips: self.round_trips.load(Ordering::Relaxed),
            shingle_reads: self.shingle_reads.load(Ordering::Relaxed),
            stale_commits: self.stale_commits.load(Ordering::Relaxed),
            locks: self.locks.load(Ordering::Relaxed),
            lock_wait: self.lock_wait.total(),
            lock_held: self.lock_held.total(),
            sync_time: self.sync_time.total(),
            read_time: self.read_time.total(),
            commit_time: self.commit_time.total(),
        }
    }

    fn fail(&self, reason: String) -> Error {
        Error::Store {
            path: PathBuf::from(&self.cfg.display),
            reason,
        }
    }

    fn get_meta(&self, key: &str) -> Result<Option<String>> {
        let k = self.keys.tagged("meta");
        self.call("reading meta", |c| {
            c.query(redis::cmd("HGET").arg(&k).arg(key))
        })
    }

    fn put_meta(&self, key: &str, value: &str) -> Result<()> {
        let k = self.keys.tagged("meta");
        self.call("writing meta", |c| {
            c.query(redis::cmd("HSET").arg(&k).arg(key).arg(value))
        })
    }
}

impl Store for RedisStore {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.get_meta(key)
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.put_meta(key, value)
    }

    fn load(&self, f: &mut dyn FnMut(StoredRecord)) -> Result<()> {
        self.load_records(f)
    }

    fn shingles_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<u32>>>> {
        self.shingle_sets(handles)
    }

    fn shingles(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        self.shingle_set(handle)
    }

    fn embeddings_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<f32>>>> {
        self.embeddings(handles)
    }

    fn boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>> {
        self.read_boilerplate()
    }

    fn merges(&self, f: &mut dyn FnMut(MergeLogEntry)) -> Result<()> {
        self.read_merges(f)
    }

    fn rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()> {
        self.read_rejections(f)
    }

    fn labels(&self, f: &mut dyn FnMut(Label)) -> Result<()> {
        self.read_labels(f)
    }

    fn put_label(&mut self, label: &Label) -> Result<()> {
        label.validate()?;
        let k = self.keys.tagged("labels");
        let field = layout::label_field(&label.a, &label.b);
        let value = serde_json::to_string(label).expect("labels serialise");
        self.call("writing a label", |c| {
            c.query::<()>(redis::cmd("HSET").arg(&k).arg(&field).arg(&value))
        })
    }

    fn remove_label(&mut self, a: &str, b: &str) -> Result<bool> {
        let k = self.keys.tagged("labels");
        let field = layout::label_field(a, b);
        let n: u64 = self.call("removing a label", |c| {
            c.query(redis::cmd("HDEL").arg(&k).arg(&field))
        })?;
        Ok(n > 0)
    }

    fn remove_labels_of(&mut self, ids: &[&str]) -> Result<usize> {
        let mut gone = Vec::new();
        self.read_labels(&mut |l| {
            if ids.contains(&l.a.as_str()) || ids.contains(&l.b.as_str()) {
                gone.push(layout::label_field(&l.a, &l.b));
            }
        })?;
        if gone.is_empty() {
            return Ok(0);
        }
        let k = self.keys.tagged("labels");
        let n: u64 = self.call("removing labels", |c| {
            c.query(redis::cmd("HDEL").arg(&k).arg(&gone))
        })?;
        Ok(n as usize)
    }

    fn commit(&mut self, batch: &Batch) -> Result<()> {
        self.commit_batch(batch)
    }

    fn lock(&mut self) -> Result<()> {
        self.take_lock()
    }

    fn unlock(&mut self) -> Result<()> {
        self.release_lock()
    }

    fn sync(&mut self, f: &mut dyn FnMut(Batch)) -> Result<()> {
        self.catch_up(f)
    }
}

#[cfg(test)]
#[path = "../../../tests/support/redis_server.rs"]
pub(crate) mod test_server;
