//! The row store every table points into (fingerprint, id and liveness per row, the id
//! map), the state of the insert buffer and of a merge in progress, and what they cost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::super::linear::hash_map_bytes;
use super::super::{IndexError, IndexStats, QueryStats};
use super::key::KeySpec;
use super::sorted::{is_live, SortedTable};

/// A buffer being merged into the tables on its own thread.
#[derive(Debug)]
pub(super) struct PendingMerge {
    /// The frozen buffer: queries scan it until the merged tables are installed.
    pub(super) fps: Vec<u64>,
    pub(super) rows: Vec<u32>,
    /// The merged tables hold every live row below this (the row count when frozen).
    pub(super) end: u32,
    /// Rows below `end` removed after the merge read the liveness bitmap: the merged
    /// tables still hold their entries, so they become the tables' tombstones.
    pub(super) removed_since: usize,
    pub(super) handle: JoinHandle<Vec<SortedTable>>,
}

/// Rows, tables, buffer and tombstones; the indexes wrap it with their layout and radii.
#[derive(Debug)]
pub(crate) struct TableSet {
    /// Shared with a background merge, which reads them while queries go on.
    pub(super) tables: Arc<Vec<SortedTable>>,
    pub(super) row_fps: Vec<u64>,
    pub(super) row_ids: Vec<u64>,
    pub(super) live: Vec<u64>,
    pub(super) by_id: HashMap<u64, u32>,
    /// Rows below this are in the tables; the rest are in the buffer.
    pub(super) tabled_rows: u32,
    pub(super) buffer_fps: Vec<u64>,
    pub(super) buffer_rows: Vec<u32>,
    pub(super) buffer_capacity: Option<usize>,
    /// A frozen buffer being merged, with rows from `tabled_rows` on; the live buffer then
    /// holds the rows from its `end` on.
    pub(super) pending: Option<PendingMerge>,
    pub(super) candidate_cap: Option<usize>,
    pub(super) capped_total: AtomicU64,
    /// Dead rows below `tabled_rows` whose entries are still in the tables.
    pub(super) tombstones: usize,
    /// Dead rows anywhere in the row store.
    pub(super) dead_rows: usize,
}

impl Clone for TableSet {
    /// A copy sharing the (immutable) tables; a merge in progress is not copied, its
    /// frozen buffer is: the copy holds it in its own buffer.
    fn clone(&self) -> Self {
        let (mut buffer_fps, mut buffer_rows) = match &self.pending {
            Some(p) => (p.fps.clone(), p.rows.clone()),
            None => (Vec::new(), Vec::new()),
        };
        buffer_fps.extend_from_slice(&self.buffer_fps);
        buffer_rows.extend_from_slice(&self.buffer_rows);
        TableSet {
            tables: Arc::clone(&self.tables),
            row_fps: self.row_fps.clone(),
            row_ids: self.row_ids.clone(),
            live: self.live.clone(),
            by_id: self.by_id.clone(),
            tabled_rows: self.tabled_rows,
            buffer_fps,
            buffer_rows,
            buffer_capacity: self.buffer_capacity,
            pending: None,
            candidate_cap: self.candidate_cap,
            capped_total: AtomicU64::new(self.capped_total.load(Ordering::Relaxed)),
            tombstones: self.tombstones,
            dead_rows: self.dead_rows,
        }
    }
}

impl Drop for TableSet {
    /// Waits for a merge in progress: detached, it would go on holding a copy of the tables
    /// and the merged ones (at 100M fingerprints, gigabytes) after the index is gone.
    fn drop(&mut self) {
        if let Some(p) = self.pending.take() {
            let _ = p.handle.join();
        }
    }
}

impl TableSet {
    pub(crate) fn new(
        keys: Vec<KeySpec>,
        buffer_capacity: Option<usize>,
        candidate_cap: Option<usize>,
    ) -> Self {
        TableSet {
            tables: Arc::new(keys.into_iter().map(SortedTable::empty).collect()),
            row_fps: Vec::new(),
            row_ids: Vec::new(),
            live: Vec::new(),
            by_id: HashMap::new(),
            tabled_rows: 0,
            buffer_fps: Vec::new(),
            buffer_rows: Vec::new(),
            buffer_capacity,
            pending: None,
            candidate_cap,
            capped_total: AtomicU64::new(0),
            tombstones: 0,
            dead_rows: 0,
        }
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &KeySpec> {
        self.tables.iter().map(|t| &t.key)
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(super) fn push_row(&mut self, id: u64, fp: u64) -> Result<u32, IndexError> {
        if self.row_fps.len() >= u32::MAX as usize {
            return Err(IndexError::Full {
                rows: self.row_fps.len(),
            });
        }
        let row = self.row_fps.len() as u32;
        self.row_fps.push(fp);
        self.row_ids.push(id);
        if row.is_multiple_of(64) {
            self.live.push(0);
        }
        self.live[(row / 64) as usize] |= 1 << (row % 64);
        self.by_id.insert(id, row);
        Ok(row)
    }

    pub(crate) fn get(&self, id: u64) -> Option<u64> {
        self.by_id.get(&id).map(|&row| self.row_fps[row as usize])
    }

    /// Adds the probes `stats` capped to the index's running count.
    pub(super) fn count_capped(&self, stats: &QueryStats) {
        if stats.capped_probes > 0 {
            self.capped_total
                .fetch_add(stats.capped_probes, Ordering::Relaxed);
        }
    }

    /// Whether a row found in a table is still stored: skips the bitmap read when the
    /// tables hold no removed rows (the common case after a merge or compaction).
    #[inline(always)]
    pub(super) fn row_is_live(&self, row: u32) -> bool {
        self.tombstones == 0 || is_live(&self.live, row)
    }

    /// Fingerprints waiting in buffers (the live one and a frozen one being merged).
    pub(super) fn buffered(&self) -> usize {
        self.buffer_fps.len() + self.pending.as_ref().map_or(0, |p| p.fps.len())
    }

    /// Live rows stored in the tables plus the buffer.
    pub(crate) fn tabled_len(&self) -> usize {
        self.row_fps.len() - self.dead_rows
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.tables
            .iter()
            .map(SortedTable::memory_bytes)
            .sum::<usize>()
            + self.row_fps.capacity() * 8
            + self.row_ids.capacity() * 8
            + self.live.capacity() * 8
            + hash_map_bytes(&self.by_id)
            + self.buffer_fps.capacity() * 8
            + self.buffer_rows.capacity() * 4
            + self
                .pending
                .as_ref()
                .map_or(0, |p| p.fps.capacity() * 8 + p.rows.capacity() * 4)
    }

    pub(crate) fn stats(&self, layout: String) -> IndexStats {
        IndexStats {
            len: self.len(),
            tables: self.tables.len(),
            largest_bucket: self
                .tables
                .iter()
                .map(SortedTable::largest_run)
                .max()
                .unwrap_or(0),
            buffered: self.buffered(),
            tombstones: self.tombstones,
            capped_probes: self.capped_total.load(Ordering::Relaxed),
            memory_bytes: self.memory_bytes(),
            layout,
        }
    }
}
