//! The schema: its tables, its version, and what opening a store of an older release
//! changes in it.

use rusqlite::Connection;

use super::SqliteStore;
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
    at TEXT NOT NULL,
    cosine REAL
);
CREATE INDEX IF NOT EXISTS merges_merged ON merges(merged);
CREATE TABLE IF NOT EXISTS rejections (
    seq INTEGER PRIMARY KEY,
    record TEXT NOT NULL,
    candidate TEXT NOT NULL,
    distance INTEGER NOT NULL,
    jaccard REAL NOT NULL,
    cosine REAL
);
CREATE TABLE IF NOT EXISTS embeddings (handle INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, batch TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS labels (
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    verdict TEXT NOT NULL,
    source TEXT NOT NULL,
    distance INTEGER NOT NULL,
    jaccard REAL NOT NULL,
    labeller TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (a, b)
);
CREATE TABLE IF NOT EXISTS boilerplate (
    host TEXT PRIMARY KEY,
    pages INTEGER NOT NULL,
    shingles BLOB NOT NULL
);
";

/// Columns later releases added to tables of earlier ones: (table, column, type). Nullable,
/// so an earlier release still writes and reads the table (naming its columns) as before.
const ADDED_COLUMNS: [(&str, &str, &str); 2] = [
    ("merges", "cosine", "REAL"),
    ("rejections", "cosine", "REAL"),
];

/// Creates what is missing of the schema (tables, [`ADDED_COLUMNS`]) and drops
/// [`UNUSED_INDEXES`].
pub(super) fn create(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    for (table, column, kind) in ADDED_COLUMNS {
        let exists: bool = conn.query_row(
            &format!("SELECT count(*) > 0 FROM pragma_table_info('{table}') WHERE name = ?1"),
            [column],
            |r| r.get(0),
        )?;
        if !exists {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))?;
        }
    }
    for name in UNUSED_INDEXES {
        let exists: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'index' AND name = ?1",
            [name],
            |r| r.get(0),
        )?;
        if exists {
            conn.execute_batch(&format!("DROP INDEX IF EXISTS {name}"))?;
        }
    }
    Ok(())
}

impl SqliteStore {
    /// Records the schema version in a new store, upgrades [`UPGRADED_SCHEMA_VERSION`], and
    /// refuses any other.
    pub(super) fn check_schema_version(&self) -> Result<()> {
        match self.get_meta("schema_version")? {
            None => self.put_meta("schema_version", &SCHEMA_VERSION.to_string())?,
            Some(v) if v == SCHEMA_VERSION.to_string() => {}
            Some(v) if v == UPGRADED_SCHEMA_VERSION.to_string() => {
                self.put_meta("schema_version", &SCHEMA_VERSION.to_string())?
            }
            Some(v) => {
                return Err(Error::Store {
                    path: self.path.clone(),
                    reason: format!("schema version {v}, this neardup reads version {SCHEMA_VERSION}: use the neardup release that wrote it, or start a new store"),
                })
            }
        }
        Ok(())
    }
}
