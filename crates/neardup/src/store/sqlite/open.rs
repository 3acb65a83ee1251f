//! Opening a store: the writer's connection settings and journal mode, and the read-only
//! connections for verification reads.

use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};

use super::{schema, SqliteStore};
use crate::{Error, Result};

impl SqliteStore {
    pub(super) fn open_as(path: &Path, bulk: bool) -> Result<SqliteStore> {
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
        schema::create(&conn).map_err(err)?;
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
        store.check_schema_version()?;
        Ok(store)
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
