//! Committing a batch: its rows and its change-log entry in one transaction, the one
//! [`lock`](crate::store::Store::lock) opened or one of its own.

use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use super::changes::{note_seen, Change};
use super::SqliteStore;
use crate::semantic::embedding_blob;
use crate::store::{packed_blob, Batch};
use crate::Result;

impl SqliteStore {
    /// [`Store::commit`](crate::store::Store::commit).
    pub(super) fn commit_batch(&mut self, batch: &Batch) -> Result<()> {
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
}

/// Writes the rows of `batch` in the open transaction.
fn apply(tx: &Connection, batch: &Batch) -> rusqlite::Result<()> {
    {
        let mut ins = tx.prepare_cached(
            "INSERT INTO records (handle, id, fingerprint, content_hash, url, host, first_seen,
                retention_class, survivor, arrival, tokens, language, features)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?;
        let mut sh = tx.prepare_cached("INSERT INTO shingles (handle, ids) VALUES (?1, ?2)")?;
        let mut em =
            tx.prepare_cached("INSERT INTO embeddings (handle, vector) VALUES (?1, ?2)")?;
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
            if let Some(e) = &n.embedding {
                em.execute(params![r.handle as i64, embedding_blob(e)])?;
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
                matched, source_urls, at, cosine)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
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
                e.cosine,
            ])?;
        }
        let mut rj = tx.prepare_cached(
            "INSERT INTO rejections (record, candidate, distance, jaccard, cosine)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for r in &batch.rejections {
            rj.execute(params![
                r.record,
                r.candidate,
                r.distance,
                r.jaccard,
                r.cosine
            ])?;
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
        tx.execute("DELETE FROM embeddings WHERE handle = ?1", [h as i64])?;
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

/// Writes `batch` and, when it changes anything another process must learn, its change-log
/// entry, in the open transaction; answers the entry's `seq` (0 for none).
fn write_batch(conn: &Connection, batch: &Batch) -> rusqlite::Result<i64> {
    apply(conn, batch)?;
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

/// Commits `batch` in a transaction of its own unless another process has logged a change
/// this one has not seen (`seen`): answers whether it committed. The write lock is taken
/// first (`BEGIN IMMEDIATE`), so nothing can be logged between the check and the commit.
pub(super) fn commit_unless_moved(
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
