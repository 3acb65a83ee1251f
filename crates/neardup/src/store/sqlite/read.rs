//! Reading: records, verification sets (on the read-only connections), boilerplate, the
//! merge log, rejections and labels.

use rusqlite::{Connection, OptionalExtension};

use super::SqliteStore;
use crate::record::Timestamp;
use crate::store::{
    blob_to_ids, Arrival, Features, HostBoilerplate, Label, MergeLogEntry, MergesSince, Rejection,
    StoredRecord, Verdict,
};
use crate::{Error, Result};

/// The `records` columns [`record_from_row`] reads, in its order.
pub(super) const RECORD_COLUMNS: &str =
    "handle, id, fingerprint, content_hash, url, host, first_seen, \
     retention_class, survivor, arrival, tokens, language, features";

pub(super) fn record_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRecord> {
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

impl SqliteStore {
    /// [`Store::load`](crate::store::Store::load).
    pub(super) fn load_records(&self, f: &mut dyn FnMut(StoredRecord)) -> Result<()> {
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

    /// [`Store::shingles_many`](crate::store::Store::shingles_many), on one reader.
    pub(super) fn shingle_sets(&self, handles: &[u64]) -> Result<Vec<Option<Vec<u32>>>> {
        if handles.is_empty() {
            return Ok(Vec::new());
        }
        let conn = self.reader();
        handles
            .iter()
            .map(|&h| self.shingles_with(&conn, h))
            .collect()
    }

    /// [`Store::embeddings_many`](crate::store::Store::embeddings_many), on one reader.
    pub(super) fn embeddings(&self, handles: &[u64]) -> Result<Vec<Option<Vec<f32>>>> {
        if handles.is_empty() {
            return Ok(Vec::new());
        }
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT vector FROM embeddings WHERE handle = ?1")
            .map_err(|e| self.err(e))?;
        handles
            .iter()
            .map(|&h| {
                stmt.query_row([h as i64], |r| {
                    Ok(crate::semantic::blob_embedding(r.get_ref(0)?.as_blob()?))
                })
                .optional()
                .map_err(|e| self.err(e))
            })
            .collect()
    }

    pub(super) fn shingles_with(&self, conn: &Connection, handle: u64) -> Result<Option<Vec<u32>>> {
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

    /// [`Store::boilerplate`](crate::store::Store::boilerplate), sorted by host.
    pub(super) fn read_boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>> {
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

    /// [`Store::merges_since`](crate::store::Store::merges_since): offers `take` the entries
    /// logged in or after the second of `since`, oldest first.
    pub(super) fn read_merges(
        &self,
        since: Option<Timestamp>,
        mut take: MergesSince<'_>,
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
                    source_urls, at, cosine FROM merges WHERE at >= ?1 ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([&second]).map_err(|e| self.err(e))?;
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
                    cosine: row.get(9)?,
                })
            })()
            .map_err(|e| self.err(e))?;
            if !take.offer(entry) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// [`Store::rejections`](crate::store::Store::rejections).
    pub(super) fn read_rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT record, candidate, distance, jaccard, cosine FROM rejections ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let r = (|| -> rusqlite::Result<Rejection> {
                Ok(Rejection {
                    record: row.get(0)?,
                    candidate: row.get(1)?,
                    distance: row.get(2)?,
                    jaccard: row.get(3)?,
                    cosine: row.get(4)?,
                })
            })()
            .map_err(|e| self.err(e))?;
            f(r);
        }
        Ok(())
    }

    /// [`Store::labels`](crate::store::Store::labels).
    pub(super) fn read_labels(&self, f: &mut dyn FnMut(Label)) -> Result<()> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT a, b, verdict, source, distance, jaccard, labeller, at
                 FROM labels ORDER BY at, rowid",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let (label, verdict) = (|| -> rusqlite::Result<(Label, String)> {
                let verdict: String = row.get(2)?;
                Ok((
                    Label {
                        a: row.get(0)?,
                        b: row.get(1)?,
                        verdict: Verdict::Unsure,
                        source: row.get(3)?,
                        distance: row.get(4)?,
                        jaccard: row.get(5)?,
                        by: row.get(6)?,
                        at: row.get(7)?,
                    },
                    verdict,
                ))
            })()
            .map_err(|e| self.err(e))?;
            let Some(v) = Verdict::parse(&verdict) else {
                return Err(Error::Store {
                    path: self.path.clone(),
                    reason: format!(
                        "the label of ({:?}, {:?}) has an unknown verdict {verdict:?}",
                        label.a, label.b
                    ),
                });
            };
            f(Label {
                verdict: v,
                ..label
            });
        }
        Ok(())
    }
}
