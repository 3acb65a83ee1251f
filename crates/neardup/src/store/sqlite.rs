//! The embedded default store: SQLite (bundled), in WAL mode with full synchronisation, so
//! a batch is durable once `commit` returns and a crash leaves the last committed state. A
//! batch run that has the store to itself commits through a rollback journal instead
//! ([`SqliteStore::open_bulk`]), just as durable, writing each new page once.
//! Users can read the merge log with `sqlite3 neardup.db 'select * from merges'`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use super::{
    blob_to_ids, packed_blob, Arrival, Batch, Features, HostBoilerplate, MergeLogEntry, NewRecord,
    Rejection, Store, StoredRecord,
};
use crate::record::Timestamp;
use crate::{Error, Result};

/// Version of the schema below; a store of another version is refused with advice.
/// Version 3 stores verification sets bit-packed (`set_blob`), which a release that reads
/// version 2 would take for plain ids: a version-2 store is upgraded when this release opens
/// it (nothing is rewritten: its plain sets still read), and older releases then refuse it.
const SCHEMA_VERSION: i64 = 3;

/// The schema version this release upgrades in place (see [`SCHEMA_VERSION`]).
const UPGRADED_SCHEMA_VERSION: i64 = 2;

/// Indexes earlier releases made on `records` that no query uses (clusters and retention
/// are answered from memory). Every commit rewrote the leaves its records landed in: a
/// store opened drops them, which cut a batch run's page writes by a third.
const UNUSED_INDEXES: [&str; 2] = ["records_survivor", "records_retention"];

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    handle INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    content_hash BLOB NOT NULL,
    url TEXT,
    host TEXT,
    first_seen INTEGER NOT NULL,
    retention_class TEXT,
    survivor INTEGER NOT NULL,
    arrival TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    language TEXT,
    features TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shingles (handle INTEGER PRIMARY KEY, ids BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS merges (
    seq INTEGER PRIMARY KEY,
    kept TEXT NOT NULL,
    merged TEXT NOT NULL,
    merged_fingerprint TEXT NOT NULL,
    rule TEXT NOT NULL,
    distance INTEGER NOT NULL,
    jaccard REAL NOT NULL,
    matched TEXT NOT NULL,
    source_urls TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS merges_merged ON merges(merged);
CREATE TABLE IF NOT EXISTS rejections (
    seq INTEGER PRIMARY KEY,
    record TEXT NOT NULL,
    candidate TEXT NOT NULL,
    distance INTEGER NOT NULL,
    jaccard REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, batch TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS boilerplate (
    host TEXT PRIMARY KEY,
    pages INTEGER NOT NULL,
    shingles BLOB NOT NULL
);
";

/// The SQLite store.
pub struct SqliteStore {
    // A mutex makes the store Sync, so readers on several threads (the HTTP service) can
    // share it; SQLite serialises writers anyway. Shared with the commit thread.
    conn: Arc<Mutex<Connection>>,
    /// Read-only connections for verification reads (shingle sets): WAL lets them read
    /// while `conn` writes, so queries neither queue behind one another on one connection
    /// nor wait for a commit's fsync. They map the file (`mmap_size`) instead of copying
    /// each page out of the kernel's cache.
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    path: PathBuf,
    /// The last change-log entry this process has applied (its own or others').
    seen: Arc<Mutex<i64>>,
    /// Whether `lock` holds an open write transaction.
    locked: bool,
    /// Whether commits go through a rollback journal ([`SqliteStore::open_bulk`]).
    bulk: bool,
    /// The thread that commits what [`Store::commit_behind`] hands over, once started (in
    /// a mutex only to be `Sync`: it is used through `&mut self`).
    behind: Mutex<Option<Behind>>,
}

/// The commit thread of [`Store::commit_behind`]: one batch at a time, each answered in
/// turn.
struct Behind {
    batches: std::sync::mpsc::SyncSender<Batch>,
    answers: std::sync::mpsc::Receiver<Result<()>>,
    /// Whether a batch was handed over and its answer not taken yet.
    waiting: bool,
    thread: std::thread::JoinHandle<()>,
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // A batch being committed is finished first (its outcome is no longer wanted: a
        // batch that fails leaves nothing, one that succeeds is in the store).
        if let Some(behind) = self.behind_mut().take() {
            let Behind {
                batches,
                answers,
                thread,
                ..
            } = behind;
            drop(batches);
            let _ = thread.join();
            drop(answers);
        }
        // Readers first: a read-only connection that has read holds a shared lock, and the
        // write connection checkpoints the WAL into the database file and deletes it only
        // when it closes last. Otherwise the last commits would stay in the -wal file, and
        // a copy of the .db file alone would miss them.
        self.readers.clear();
        if self.bulk {
            // Back to WAL, the mode every other open expects (it would switch anyway, but a
            // user's `sqlite3` session should find the store as it always is). Nothing is
            // lost if this fails: the mode only says how the next commit is made durable.
            let _ = self
                .conn()
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0));
        }
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`.
    ///
    /// # Errors
    /// [`Error::Store`] when the file is not a neardup store, is of another schema version,
    /// or cannot be opened.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        Self::open_as(path, false)
    }

    /// Opens the store at `path` for one process loading a batch (`neardup dedup`): when no
    /// other connection has it open, commits go through a rollback journal instead of the
    /// WAL until the store is dropped. A commit of new records then writes their pages once,
    /// where the WAL writes every page twice (to the log, then into the file at the
    /// checkpoint) and reads it back in between: the 1 GB bench run went from 10.3 to 9.1 s,
    /// its kernel time from 2.9 to 1.9 s. Commits stay durable (`synchronous=FULL`
    /// syncs the journal, the file, then the journal's truncation, the commit point) and a
    /// crash leaves a journal that the next open rolls back.
    ///
    /// What the rollback journal gives up is WAL's readers that never wait: another
    /// process reading the store meanwhile waits for each commit to finish, and a commit
    /// waits for that reader's read (up to the busy timeout). Where another process already
    /// has the store open, it stays in WAL mode and this is [`open`](Self::open); a process
    /// that opens it meanwhile switches it back to WAL (waiting for a commit in progress),
    /// and the batch goes on in WAL mode.
    ///
    /// A store it creates has 16 KiB pages instead of SQLite's 4 KiB, for good: a batch
    /// commits thousands of verification sets at a time, most of which then fit a page.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_bulk(path: &Path) -> Result<SqliteStore> {
        Self::open_as(path, true)
    }

    /// Whether commits go through the rollback journal ([`open_bulk`](Self::open_bulk)).
    pub fn is_bulk(&self) -> bool {
        self.bulk
    }

    fn open_as(path: &Path, bulk: bool) -> Result<SqliteStore> {
        let err = |e: rusqlite::Error| Error::Store {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        // The page size is the file's for good, set before its first write. A store a batch
        // run creates gets 16 KiB pages, where a record's verification set (about 4 bytes a
        // word) fits its leaf up to some 4,000 shingles instead of 1,000 and spills into an
        // overflow page no more: on the 1 GB bench corpus a run's commits took 1.6 s
        // instead of 2.0-2.6 s and the run 6.8 s instead of 7.9-8.0 (64 KiB measured the
        // same there, and commits 0-45% slower on 1.5 KB records). Other stores keep
        // SQLite's 4 KiB: the service commits a few records at a time, each dirtying a leaf
        // of each index, and 16 KiB pages made its writer copy and checksum four times as
        // much per commit (30-40% more CPU per insert).
        if bulk
            && conn
                .query_row("PRAGMA page_count", [], |r| r.get::<_, i64>(0))
                .map_err(err)?
                == 0
        {
            conn.pragma_update(None, "page_size", BULK_PAGE_BYTES)
                .map_err(err)?;
        }
        wal_mode(&conn).map_err(err)?;
        // FULL: a committed transaction survives power loss, not only a process crash.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(err)?;
        conn.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES)
            .map_err(err)?;
        // Bulk: the journal mode is switched while this is the only connection this process
        // has, without waiting: leaving WAL needs every other connection closed, and where
        // another process has the store open SQLite either answers the mode in force or that
        // the store is busy. Either way the store stays in WAL mode.
        let bulk = bulk && {
            conn.busy_timeout(std::time::Duration::ZERO).map_err(err)?;
            let switched = conn
                .query_row("PRAGMA journal_mode = TRUNCATE", [], |r| {
                    r.get::<_, String>(0)
                })
                .is_ok_and(|mode| mode.eq_ignore_ascii_case("truncate"));
            conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
            switched
        };
        if bulk {
            // A batch's dirty pages (4,096 records of a few KB of shingle ids each) fit in
            // the page cache: a spill before the commit would sync the journal once more.
            conn.pragma_update(None, "cache_size", BULK_CACHE_KIB)
                .map_err(err)?;
        }
        conn.execute_batch(SCHEMA).map_err(err)?;
        for name in UNUSED_INDEXES {
            let exists: bool = conn
                .query_row(
                    "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'index' AND name = ?1",
                    [name],
                    |r| r.get(0),
                )
                .map_err(err)?;
            if exists {
                conn.execute_batch(&format!("DROP INDEX IF EXISTS {name}"))
                    .map_err(err)?;
            }
        }
        let readers = (0..READERS)
            .map(|_| open_reader(path).map(Mutex::new))
            .collect::<rusqlite::Result<_>>()
            .map_err(err)?;
        let store = SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            readers,
            next_reader: AtomicUsize::new(0),
            path: path.to_owned(),
            seen: Arc::new(Mutex::new(0)),
            locked: false,
            bulk,
            behind: Mutex::new(None),
        };
        match store.get_meta("schema_version")? {
            None => store.put_meta("schema_version", &SCHEMA_VERSION.to_string())?,
            Some(v) if v == SCHEMA_VERSION.to_string() => {}
            Some(v) if v == UPGRADED_SCHEMA_VERSION.to_string() => {
                store.put_meta("schema_version", &SCHEMA_VERSION.to_string())?
            }
            Some(v) => {
                return Err(Error::Store {
                    path: path.to_owned(),
                    reason: format!("schema version {v}, this neardup reads version {SCHEMA_VERSION}: use the neardup release that wrote it, or start a new store"),
                })
            }
        }
        Ok(store)
    }

    /// Takes the answer of the batch handed to the commit thread, if one is outstanding.
    fn finish_behind(&mut self) -> Result<()> {
        let path = self.path.clone();
        match self.behind_mut() {
            Some(behind) if behind.waiting => {
                behind.waiting = false;
                behind.answers.recv().unwrap_or_else(|_| {
                    Err(Error::Store {
                        path,
                        reason: "the commit thread stopped".into(),
                    })
                })
            }
            _ => Ok(()),
        }
    }

    fn behind_mut(&mut self) -> &mut Option<Behind> {
        self.behind.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (transactions
        // roll back), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A free reader, else the next one in turn.
    fn reader(&self) -> MutexGuard<'_, Connection> {
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        let n = self.readers.len();
        for i in 0..n {
            if let Ok(guard) = self.readers[(start + i) % n].try_lock() {
                return guard;
            }
        }
        self.readers[start % n]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn err(&self, e: rusqlite::Error) -> Error {
        Error::Store {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }

    fn shingles_with(&self, conn: &Connection, handle: u64) -> Result<Option<Vec<u32>>> {
        let mut stmt = conn
            .prepare_cached("SELECT ids FROM shingles WHERE handle = ?1")
            .map_err(|e| self.err(e))?;
        let found = stmt
            .query_row([handle as i64], |r| {
                Ok(blob_to_ids(r.get_ref(0)?.as_blob()?))
            })
            .optional()
            .map_err(|e| self.err(e))?;
        found.transpose().map_err(|reason| Error::Store {
            path: self.path.clone(),
            reason: format!("the verification set of record handle {handle} is damaged: {reason}"),
        })
    }

    fn get_meta(&self, key: &str) -> Result<Option<String>> {
        self.conn()
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    fn put_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn()
            .execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [key, value],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn apply(tx: &Connection, batch: &Batch) -> rusqlite::Result<()> {
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO records (handle, id, fingerprint, content_hash, url, host, first_seen,
                    retention_class, survivor, arrival, tokens, language, features)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?;
            let mut sh = tx.prepare_cached("INSERT INTO shingles (handle, ids) VALUES (?1, ?2)")?;
            for n in &batch.records {
                let r = &n.record;
                ins.execute(params![
                    r.handle as i64,
                    r.id,
                    format!("{:032x}", r.fingerprint),
                    r.content_hash.to_le_bytes().as_slice(),
                    r.url,
                    r.host,
                    r.first_seen.0,
                    r.retention_class,
                    r.survivor as i64,
                    r.arrival.as_str(),
                    i64::from(r.tokens),
                    r.language,
                    r.features.as_str(),
                ])?;
                if !n.shingles.is_empty() {
                    sh.execute(params![r.handle as i64, packed_blob(&n.shingles).as_ref()])?;
                }
            }
        }
        {
            let mut up = tx.prepare_cached("UPDATE records SET survivor = ?2 WHERE handle = ?1")?;
            for &(h, s) in &batch.survivor_updates {
                up.execute(params![h as i64, s as i64])?;
            }
        }
        {
            let mut m = tx.prepare_cached(
                "INSERT INTO merges (kept, merged, merged_fingerprint, rule, distance, jaccard,
                    matched, source_urls, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for e in &batch.merges {
                m.execute(params![
                    e.kept,
                    e.merged,
                    e.merged_fingerprint,
                    e.rule,
                    e.distance,
                    e.jaccard,
                    e.matched,
                    serde_json::to_string(&e.source_urls).expect("strings serialise"),
                    e.at,
                ])?;
            }
            let mut rj = tx.prepare_cached(
                "INSERT INTO rejections (record, candidate, distance, jaccard)
                 VALUES (?1, ?2, ?3, ?4)",
            )?;
            for r in &batch.rejections {
                rj.execute(params![r.record, r.candidate, r.distance, r.jaccard])?;
            }
        }
        {
            let mut bp = tx.prepare_cached(
                "INSERT INTO boilerplate (host, pages, shingles) VALUES (?1, ?2, ?3)
                 ON CONFLICT(host) DO UPDATE SET pages = excluded.pages, shingles = excluded.shingles",
            )?;
            for (host, b) in &batch.boilerplate {
                let blob: Vec<u8> = b.shingles.iter().flat_map(|h| h.to_le_bytes()).collect();
                bp.execute(params![host, b.pages as i64, blob])?;
            }
        }
        for &h in &batch.erase {
            let id: Option<String> = tx
                .query_row(
                    "SELECT id FROM records WHERE handle = ?1",
                    [h as i64],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(id) = id else { continue };
            tx.execute("DELETE FROM shingles WHERE handle = ?1", [h as i64])?;
            tx.execute("DELETE FROM records WHERE handle = ?1", [h as i64])?;
            tx.execute("DELETE FROM merges WHERE merged = ?1", [&id])?;
            tx.execute("UPDATE merges SET kept = '<erased>' WHERE kept = ?1", [&id])?;
            tx.execute(
                "UPDATE merges SET matched = '<erased>' WHERE matched = ?1",
                [&id],
            )?;
            tx.execute(
                "DELETE FROM rejections WHERE record = ?1 OR candidate = ?1",
                [&id],
            )?;
        }
        Ok(())
    }
}

/// Writes `batch` and, when it changes anything another process must learn, its change-log
/// entry, in the open transaction; answers the entry's `seq` (0 for none).
fn write_batch(conn: &Connection, batch: &Batch) -> rusqlite::Result<i64> {
    SqliteStore::apply(conn, batch)?;
    // What other processes need to bring their memory up to date: new records by handle
    // (their rows hold the rest), no shingles, no log.
    let change = Change {
        handles: batch.records.iter().map(|n| n.record.handle).collect(),
        records: Vec::new(),
        survivor_updates: batch.survivor_updates.clone(),
        boilerplate: batch.boilerplate.clone(),
        erase: batch.erase.clone(),
    };
    if change.is_empty() {
        return Ok(0);
    }
    let json = serde_json::to_string(&change).expect("changes serialise");
    conn.execute("INSERT INTO changes (batch) VALUES (?1)", [&json])?;
    Ok(conn.last_insert_rowid())
}

/// Records that the change log is read (or written) up to `seq`.
fn note_seen(seen: &Mutex<i64>, seq: i64) {
    if seq > 0 {
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        *seen = (*seen).max(seq);
    }
}

/// Commits `batch` in a transaction of its own unless another process has logged a change
/// this one has not seen (`seen`): answers whether it committed. The write lock is taken
/// first (`BEGIN IMMEDIATE`), so nothing can be logged between the check and the commit.
fn commit_unless_moved(
    conn: &Connection,
    seen: &Mutex<i64>,
    batch: &Batch,
) -> rusqlite::Result<bool> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| -> rusqlite::Result<Option<i64>> {
        let last = *seen.lock().unwrap_or_else(|e| e.into_inner());
        let moved: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM changes WHERE seq > ?1)",
            [last],
            |r| r.get(0),
        )?;
        if moved {
            return Ok(None);
        }
        let seq = write_batch(conn, batch)?;
        conn.execute_batch("COMMIT")?;
        Ok(Some(seq))
    })();
    match result {
        Ok(Some(seq)) => {
            note_seen(seen, seq);
            Ok(true)
        }
        Ok(None) => {
            conn.execute_batch("ROLLBACK")?;
            Ok(false)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// WAL pages after which a commit checkpoints the WAL into the database file (SQLite's
/// default is 1,000). The commit that checkpoints also copies and syncs, so a checkpoint is
/// the tail of the service's insert latency; smaller, more frequent ones shorten it: side
/// by side, 4 runs each, insert p99 11.1-14.1 ms against 14.4-18.1 ms at 1,000 (p90 about
/// 1 ms higher, throughput the same; 4,000 and 10,000 pages made p99 30-60 ms). Batch runs
/// commit thousands of pages at a time and checkpoint after every commit either way.
const CHECKPOINT_PAGES: i64 = 250;

/// Puts the store in WAL mode. A store a batch run holds in its rollback journal
/// ([`SqliteStore::open_bulk`]) is switched back, which needs the run between two commits:
/// SQLite answers busy at once to a reader that would upgrade its lock while another
/// connection writes (waiting could deadlock), so the switch is retried up to the busy
/// timeout.
fn wal_mode(conn: &Connection) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            done => return done,
        }
    }
}

/// How long a connection waits for another's lock before it reports the store busy.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The page size of a store created by [`SqliteStore::open_bulk`].
const BULK_PAGE_BYTES: i64 = 16 << 10;

/// The writer's page cache in bulk mode, in KiB (SQLite's negative `cache_size`).
const BULK_CACHE_KIB: i64 = -(64 << 10);

/// How many read-only connections a store keeps for verification reads.
const READERS: usize = 4;

/// How much of the file a reader maps (SQLite caps it at its compile-time maximum, 2 GiB
/// for the bundled build); the address space is reserved, memory is used as pages are read.
const READER_MMAP_BYTES: i64 = 1 << 36;

fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.pragma_update(None, "mmap_size", READER_MMAP_BYTES)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// What the change log keeps of a committed batch: what other processes sharing the store
/// need to bring their memory up to date. New records are named by handle, their rows hold
/// the rest: a full copy made the log a quarter of the store's bytes.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Change {
    #[serde(default)]
    handles: Vec<u64>,
    /// New records in full, as stores written before the handles were logged have them.
    #[serde(default, skip_serializing)]
    records: Vec<NewRecord>,
    #[serde(default)]
    survivor_updates: Vec<(u64, u64)>,
    #[serde(default)]
    boilerplate: Vec<(String, HostBoilerplate)>,
    #[serde(default)]
    erase: Vec<u64>,
}

impl Change {
    fn is_empty(&self) -> bool {
        self.handles.is_empty()
            && self.records.is_empty()
            && self.survivor_updates.is_empty()
            && self.boilerplate.is_empty()
            && self.erase.is_empty()
    }
}

/// The `records` columns [`record_from_row`] reads, in its order.
const RECORD_COLUMNS: &str = "handle, id, fingerprint, content_hash, url, host, first_seen, \
     retention_class, survivor, arrival, tokens, language, features";

fn record_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRecord> {
    let fp: String = row.get(2)?;
    let ch: Vec<u8> = row.get(3)?;
    let arrival: String = row.get(9)?;
    let bad = |what: &str| {
        rusqlite::Error::InvalidColumnType(0, what.to_owned(), rusqlite::types::Type::Text)
    };
    Ok(StoredRecord {
        handle: row.get::<_, i64>(0)? as u64,
        id: row.get(1)?,
        fingerprint: u128::from_str_radix(&fp, 16).map_err(|_| bad("fingerprint"))?,
        content_hash: u128::from_le_bytes(
            ch.as_slice().try_into().map_err(|_| bad("content_hash"))?,
        ),
        url: row.get(4)?,
        host: row.get(5)?,
        first_seen: Timestamp(row.get(6)?),
        retention_class: row.get(7)?,
        survivor: row.get::<_, i64>(8)? as u64,
        arrival: Arrival::parse(&arrival).ok_or_else(|| bad("arrival"))?,
        tokens: row.get::<_, i64>(10)? as u32,
        language: row.get(11)?,
        features: Features::parse(&row.get::<_, String>(12)?).ok_or_else(|| bad("features"))?,
    })
}

impl Store for SqliteStore {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.get_meta(key)
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.finish_behind()?;
        self.put_meta(key, value)
    }

    fn load(&self, f: &mut dyn FnMut(StoredRecord)) -> Result<()> {
        let conn = self.conn();
        // What is loaded includes every change logged so far.
        let last: i64 = conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM changes", [], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(e))?;
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = last;
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {RECORD_COLUMNS} FROM records ORDER BY handle"
            ))
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let record = record_from_row(row).map_err(|e| self.err(e))?;
            f(record);
        }
        Ok(())
    }

    fn shingles(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        self.shingles_with(&self.reader(), handle)
    }

    fn shingles_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<u32>>>> {
        if handles.is_empty() {
            return Ok(Vec::new());
        }
        let conn = self.reader();
        handles
            .iter()
            .map(|&h| self.shingles_with(&conn, h))
            .collect()
    }

    fn boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT host, pages, shingles FROM boilerplate ORDER BY host")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                let blob: Vec<u8> = r.get(2)?;
                Ok((
                    r.get::<_, String>(0)?,
                    HostBoilerplate {
                        pages: r.get::<_, i64>(1)? as u64,
                        shingles: blob
                            .chunks_exact(8)
                            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                            .collect(),
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))
    }

    fn merges(&self, f: &mut dyn FnMut(MergeLogEntry)) -> Result<()> {
        self.merges_since(None, usize::MAX, f).map(|_| ())
    }

    fn merges_since(
        &self,
        since: Option<Timestamp>,
        limit: usize,
        f: &mut dyn FnMut(MergeLogEntry),
    ) -> Result<bool> {
        // Times are RFC 3339 text with a variable fraction ("...:07Z", "...:07.5Z"), so the
        // text comparison is only a prefilter on the whole second (SQLite skips older rows
        // without building them); the exact test is `MergesSince::offer`.
        let second = since.map_or_else(String::new, |s| {
            s.to_rfc3339()
                .chars()
                .take("2026-01-01T00:00:00".len())
                .collect()
        });
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(
                "SELECT kept, merged, merged_fingerprint, rule, distance, jaccard, matched,
                    source_urls, at FROM merges WHERE at >= ?1 ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([&second]).map_err(|e| self.err(e))?;
        let mut take = super::MergesSince::new(since, limit, f);
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let entry = (|| -> rusqlite::Result<MergeLogEntry> {
                let urls: String = row.get(7)?;
                Ok(MergeLogEntry {
                    kept: row.get(0)?,
                    merged: row.get(1)?,
                    merged_fingerprint: row.get(2)?,
                    rule: row.get(3)?,
                    distance: row.get(4)?,
                    jaccard: row.get(5)?,
                    matched: row.get(6)?,
                    source_urls: serde_json::from_str(&urls).unwrap_or_default(),
                    at: row.get(8)?,
                })
            })()
            .map_err(|e| self.err(e))?;
            if !take.offer(entry) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT record, candidate, distance, jaccard FROM rejections ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let r = (|| -> rusqlite::Result<Rejection> {
                Ok(Rejection {
                    record: row.get(0)?,
                    candidate: row.get(1)?,
                    distance: row.get(2)?,
                    jaccard: row.get(3)?,
                })
            })()
            .map_err(|e| self.err(e))?;
            f(r);
        }
        Ok(())
    }

    fn commit(&mut self, batch: &Batch) -> Result<()> {
        self.finish_behind()?;
        if batch.is_empty() && !self.locked {
            return Ok(());
        }
        let locked = std::mem::replace(&mut self.locked, false);
        let conn = self.conn();
        let seq = if locked {
            // `lock` opened the transaction; end it here so the batch is durable on return.
            match write_batch(&conn, batch)
                .and_then(|seq| conn.execute_batch("COMMIT").map(|()| seq))
            {
                Ok(seq) => seq,
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    return Err(self.err(e));
                }
            }
        } else {
            let tx = conn.unchecked_transaction().map_err(|e| self.err(e))?;
            let seq = write_batch(&tx, batch).map_err(|e| self.err(e))?;
            tx.commit().map_err(|e| self.err(e))?;
            seq
        };
        note_seen(&self.seen, seq);
        Ok(())
    }

    fn commits_behind(&self) -> bool {
        true
    }

    /// Hands `batch` to the store's commit thread (started on the first call), after the
    /// batch before it is committed: the caller decides its next batch meanwhile. The
    /// thread takes the write lock, checks that the change log holds nothing this process
    /// has not seen, and commits.
    fn commit_behind(&mut self, batch: Batch) -> Result<()> {
        self.finish_behind()?;
        if self.locked {
            // A cycle under `lock` is in progress on this connection: commit in it.
            return self.commit(&batch);
        }
        if self.behind_mut().is_none() {
            let (batches, jobs) = std::sync::mpsc::sync_channel::<Batch>(1);
            let (answer, answers) = std::sync::mpsc::channel();
            let (conn, seen, path) = (self.conn.clone(), self.seen.clone(), self.path.clone());
            let thread = std::thread::Builder::new()
                .name("neardup-commit".into())
                .spawn(move || {
                    for batch in jobs {
                        let conn = conn.lock().unwrap_or_else(|e| e.into_inner());
                        let result = match commit_unless_moved(&conn, &seen, &batch) {
                            Ok(true) => Ok(()),
                            Ok(false) => Err(Error::Conflict),
                            Err(e) => Err(Error::Store {
                                path: path.clone(),
                                reason: e.to_string(),
                            }),
                        };
                        drop(conn);
                        if answer.send(result).is_err() {
                            break;
                        }
                    }
                })
                .map_err(|e| Error::Store {
                    path: self.path.clone(),
                    reason: format!("starting the commit thread: {e}"),
                })?;
            *self.behind_mut() = Some(Behind {
                batches,
                answers,
                waiting: false,
                thread,
            });
        }
        let path = self.path.clone();
        let behind = self.behind_mut().as_mut().expect("started above");
        behind.batches.send(batch).map_err(|_| Error::Store {
            path,
            reason: "the commit thread stopped".into(),
        })?;
        behind.waiting = true;
        Ok(())
    }

    fn wait_behind(&mut self) -> Result<()> {
        self.finish_behind()
    }

    fn lock(&mut self) -> Result<()> {
        self.finish_behind()?;
        if self.locked {
            return Ok(());
        }
        // IMMEDIATE takes SQLite's write lock now (waiting up to the busy timeout), so no
        // other process commits between our sync and our commit.
        self.conn()
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))?;
        self.locked = true;
        Ok(())
    }

    fn unlock(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.locked, false) {
            self.conn()
                .execute_batch("ROLLBACK")
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn sync(&mut self, f: &mut dyn FnMut(Batch)) -> Result<()> {
        self.finish_behind()?;
        let conn = self.conn();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut stmt = conn
            .prepare_cached("SELECT seq, batch FROM changes WHERE seq > ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([*seen], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let changes: Vec<(i64, String)> = rows
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        let mut record = conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM records WHERE handle = ?1"
            ))
            .map_err(|e| self.err(e))?;
        for (seq, json) in changes {
            let change: Change = serde_json::from_str(&json).map_err(|e| Error::Store {
                path: self.path.clone(),
                reason: format!("change {seq} is unreadable: {e}"),
            })?;
            let mut records = change.records;
            for h in change.handles {
                // A record a later change erased has no row: that change forgets it anyway.
                let row = record
                    .query_row([h as i64], |row| Ok(record_from_row(row)))
                    .optional()
                    .map_err(|e| self.err(e))?;
                if let Some(r) = row {
                    records.push(NewRecord {
                        record: r.map_err(|e| self.err(e))?,
                        shingles: Default::default(),
                    });
                }
            }
            f(Batch {
                records,
                survivor_updates: change.survivor_updates,
                merges: Vec::new(),
                rejections: Vec::new(),
                boilerplate: change.boilerplate,
                erase: change.erase,
            });
            *seen = seq;
        }
        Ok(())
    }
}
