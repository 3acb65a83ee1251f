//! The embedded default store: SQLite (bundled), in WAL mode with full synchronisation, so
//! a batch is durable once `commit` returns and a crash leaves the last committed state. A
//! batch run that has the store to itself commits through a rollback journal instead
//! ([`SqliteStore::open_bulk`]), just as durable, writing each new page once.
//! Users can read the merge log with `sqlite3 neardup.db 'select * from merges'`.

mod behind;
mod changes;
mod commit;
mod open;
mod read;
mod schema;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension};

use self::behind::Behind;
use super::{
    Batch, HostBoilerplate, Label, MergeLogEntry, MergesSince, Rejection, Store, StoredRecord,
};
use crate::record::Timestamp;
use crate::{Error, Result};

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

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // A batch being committed is finished first (its outcome is no longer wanted: a
        // batch that fails leaves nothing, one that succeeds is in the store).
        if let Some(behind) = self.behind_mut().take() {
            behind.stop();
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
        self.load_records(f)
    }

    fn shingles(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        self.shingles_with(&self.reader(), handle)
    }

    fn shingles_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<u32>>>> {
        self.shingle_sets(handles)
    }

    fn embeddings_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<f32>>>> {
        self.embeddings(handles)
    }

    fn boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>> {
        self.read_boilerplate()
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
        self.read_merges(since, MergesSince::new(since, limit, f))
    }

    fn rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()> {
        self.read_rejections(f)
    }

    fn labels(&self, f: &mut dyn FnMut(Label)) -> Result<()> {
        self.read_labels(f)
    }

    fn put_label(&mut self, label: &Label) -> Result<()> {
        label.validate()?;
        self.finish_behind()?;
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO labels
                 (a, b, verdict, source, distance, jaccard, labeller, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                rusqlite::params![
                    label.a,
                    label.b,
                    label.verdict.as_str(),
                    label.source,
                    label.distance,
                    label.jaccard,
                    label.by,
                    label.at
                ],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn remove_label(&mut self, a: &str, b: &str) -> Result<bool> {
        self.finish_behind()?;
        self.conn()
            .execute("DELETE FROM labels WHERE a = ?1 AND b = ?2", [a, b])
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    fn remove_labels_of(&mut self, ids: &[&str]) -> Result<usize> {
        self.finish_behind()?;
        let conn = self.conn();
        let mut n = 0;
        for id in ids {
            n += conn
                .execute("DELETE FROM labels WHERE a = ?1 OR b = ?1", [id])
                .map_err(|e| self.err(e))?;
        }
        Ok(n)
    }

    fn commit(&mut self, batch: &Batch) -> Result<()> {
        self.commit_batch(batch)
    }

    fn commits_behind(&self) -> bool {
        true
    }

    /// Hands `batch` to the store's commit thread (started on the first call), after the
    /// batch before it is committed: the caller decides its next batch meanwhile. The
    /// thread takes the write lock, checks that the change log holds nothing this process
    /// has not seen, and commits.
    fn commit_behind(&mut self, batch: Batch) -> Result<()> {
        self.hand_behind(batch)
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
        self.catch_up(f)
    }
}
