//! The change log (`changes`): what other processes sharing the store need to bring their
//! memory up to date, and reading it.

use std::sync::Mutex;

use rusqlite::OptionalExtension;

use super::read::{record_from_row, RECORD_COLUMNS};
use super::SqliteStore;
use crate::store::{Batch, HostBoilerplate, NewRecord};
use crate::{Error, Result};

/// What the change log keeps of a committed batch: what other processes sharing the store
/// need to bring their memory up to date. New records are named by handle, their rows hold
/// the rest: a full copy made the log a quarter of the store's bytes.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Change {
    #[serde(default)]
    pub(super) handles: Vec<u64>,
    /// New records in full, as stores written before the handles were logged have them.
    #[serde(default, skip_serializing)]
    pub(super) records: Vec<NewRecord>,
    #[serde(default)]
    pub(super) survivor_updates: Vec<(u64, u64)>,
    #[serde(default)]
    pub(super) boilerplate: Vec<(String, HostBoilerplate)>,
    #[serde(default)]
    pub(super) erase: Vec<u64>,
}

impl Change {
    pub(super) fn is_empty(&self) -> bool {
        self.handles.is_empty()
            && self.records.is_empty()
            && self.survivor_updates.is_empty()
            && self.boilerplate.is_empty()
            && self.erase.is_empty()
    }
}

/// Records that the change log is read (or written) up to `seq`.
pub(super) fn note_seen(seen: &Mutex<i64>, seq: i64) {
    if seq > 0 {
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        *seen = (*seen).max(seq);
    }
}

impl SqliteStore {
    /// [`Store::sync`](crate::store::Store::sync): the changes logged after `seen`, with
    /// the records they added.
    pub(super) fn catch_up(&mut self, f: &mut dyn FnMut(Batch)) -> Result<()> {
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
                        embedding: None,
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
