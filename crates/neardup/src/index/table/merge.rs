//! Writes: inserts into the buffer, merges of a full buffer into the tables on a thread
//! of their own, removal (tombstones), and compaction, which rebuilds every table.

use std::sync::Arc;

use rayon::prelude::*;

use super::super::IndexError;
use super::key::{low_mask, KeySpec};
use super::memory::huge_capacity;
use super::rows::{PendingMerge, TableSet};
use super::sorted::{is_live, SortedTable};

/// Every table with `added` merged in (dead rows dropped when `has_dead`), in parallel or
/// one after the other.
fn merged_tables(
    tables: &[SortedTable],
    added: &[(u64, u32)],
    live: &[u64],
    has_dead: bool,
    parallel: bool,
) -> Vec<SortedTable> {
    if parallel {
        tables
            .par_iter()
            .map(|t| t.merge(added, live, has_dead))
            .collect()
    } else {
        tables
            .iter()
            .map(|t| t.merge(added, live, has_dead))
            .collect()
    }
}

/// Tables at least this large are built one after the other, to bound the build's peak
/// memory (each build holds 16 bytes per fingerprint of scratch).
const PARALLEL_BUILD_LIMIT: usize = 20_000_000;

impl TableSet {
    /// The buffer size at which inserts are merged. A merge rewrites every table (per row
    /// and table, a copy of 12 bytes and its share of fresh pages: ~100x what scanning one
    /// buffered fingerprint costs a query, which is a SIMD XOR and popcount), so with one
    /// query per insert the total cost `n / B * merge + B * scan` is least near
    /// `B = sqrt(100 n) = 10 sqrt(n)` (clamped: 100k rows buffer 3k, 1M rows 10k).
    fn buffer_limit(&self) -> usize {
        self.buffer_capacity.unwrap_or_else(|| {
            let n = self.row_fps.len() as f64;
            ((10.0 * n.sqrt()) as usize).clamp(256, 32_768)
        })
    }

    pub(crate) fn insert(&mut self, id: u64, fp: u64) -> Result<(), IndexError> {
        if self.by_id.contains_key(&id) {
            return Err(IndexError::DuplicateId { id });
        }
        let row = self.push_row(id, fp)?;
        self.buffer_fps.push(fp);
        self.buffer_rows.push(row);
        self.poll_merge();
        if self.buffer_fps.len() >= self.buffer_limit() {
            // If the last merge is still running, inserts outpace merges: wait for it, so
            // that queries never scan more than two buffers.
            self.finish_merge();
            self.start_merge();
        }
        Ok(())
    }

    /// Inserts many fingerprints, then merges once (bulk loading).
    pub(crate) fn extend<I: IntoIterator<Item = (u64, u64)>>(
        &mut self,
        items: I,
    ) -> Result<(), IndexError> {
        let items = items.into_iter();
        let more = items.size_hint().0;
        self.row_fps.reserve(more);
        self.row_ids.reserve(more);
        self.by_id.reserve(more);
        let bulk = more >= self.row_fps.len() / 4;
        let mut result = Ok(());
        for (id, fp) in items {
            if self.by_id.contains_key(&id) {
                result = Err(IndexError::DuplicateId { id });
                break;
            }
            match self.push_row(id, fp) {
                Ok(row) if !bulk => {
                    self.buffer_fps.push(fp);
                    self.buffer_rows.push(row);
                }
                Ok(_) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // What was inserted before an error stays inserted, as with single inserts. A bulk
        // load skipped the buffer (the rows are in the row store) and rebuilds every table.
        if bulk {
            self.compact();
        } else {
            self.merge_buffer();
        }
        result
    }

    pub(crate) fn replace(&mut self, id: u64, fp: u64) -> Result<Option<u64>, IndexError> {
        let old = self.remove(id);
        self.insert(id, fp)?;
        Ok(old)
    }

    pub(crate) fn remove(&mut self, id: u64) -> Option<u64> {
        let row = self.by_id.remove(&id)?;
        let fp = self.row_fps[row as usize];
        self.live[(row / 64) as usize] &= !(1 << (row % 64));
        // Erasure: the row store forgets the fingerprint and id now; table copies follow at
        // the next merge or compaction, and are never reported meanwhile (liveness check).
        self.row_fps[row as usize] = 0;
        self.row_ids[row as usize] = 0;
        self.dead_rows += 1;
        let frozen_end = self.pending.as_ref().map_or(self.tabled_rows, |p| p.end);
        if row >= frozen_end {
            if let Some(at) = self.buffer_rows.iter().position(|&r| r == row) {
                self.buffer_rows.swap_remove(at);
                self.buffer_fps.swap_remove(at);
            }
        } else if row >= self.tabled_rows {
            // In the frozen buffer: gone from it now, a tombstone of the merged tables.
            if let Some(p) = &mut self.pending {
                if let Some(at) = p.rows.iter().position(|&r| r == row) {
                    p.rows.swap_remove(at);
                    p.fps.swap_remove(at);
                }
                p.removed_since += 1;
            }
        } else {
            self.tombstones += 1;
            if let Some(p) = &mut self.pending {
                p.removed_since += 1;
            }
        }
        if self.dead_rows > 1024 && self.dead_rows * 2 > self.row_fps.len() {
            self.compact();
        }
        Some(fp)
    }

    /// Installs the merged tables if the background merge is done.
    pub(crate) fn poll_merge(&mut self) {
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.handle.is_finished())
        {
            self.finish_merge();
        }
    }

    /// Waits for the background merge, if any, and installs its tables.
    pub(super) fn finish_merge(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let tables = match p.handle.join() {
            Ok(tables) => tables,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        self.tables = Arc::new(tables);
        self.tabled_rows = p.end;
        self.tombstones = p.removed_since;
    }

    /// Starts merging the full buffer on a thread of its own (or at once, when the merge
    /// is a rebuild anyway or no thread can be started).
    fn start_merge(&mut self) {
        debug_assert!(self.pending.is_none(), "one merge at a time");
        if self.rebuild_instead() {
            self.compact();
            return;
        }
        let added = self.buffer_entries();
        let live = self.live.clone();
        let has_dead = self.tombstones > 0;
        let tables = Arc::clone(&self.tables);
        let spawned = std::thread::Builder::new()
            .name("neardup-index-merge".into())
            .spawn(move || merged_tables(&tables, &added, &live, has_dead, false));
        match spawned {
            Ok(handle) => {
                self.pending = Some(PendingMerge {
                    fps: std::mem::take(&mut self.buffer_fps),
                    rows: std::mem::take(&mut self.buffer_rows),
                    end: self.row_fps.len() as u32,
                    removed_since: 0,
                    handle,
                });
            }
            Err(_) => self.merge_buffer(),
        }
    }

    /// Whether a merge should rebuild every table instead: large batches (bulk loads) are
    /// cheaper to counting-sort from scratch than to comparison-sort and merge, and a
    /// rebuild also renumbers away dead rows.
    fn rebuild_instead(&self) -> bool {
        self.buffer_fps.len() * 4 >= self.tabled_rows as usize
            || self.dead_rows * 4 > self.row_fps.len()
    }

    /// The buffer as unsorted `(fingerprint, row)` pairs.
    fn buffer_entries(&self) -> Vec<(u64, u32)> {
        self.buffer_fps
            .iter()
            .copied()
            .zip(self.buffer_rows.iter().copied())
            .collect()
    }

    /// Merges the buffer into every table (and drops tombstones on the way), waiting for
    /// a background merge first.
    pub(crate) fn merge_buffer(&mut self) {
        self.finish_merge();
        if self.buffer_fps.is_empty() && self.tombstones == 0 {
            return;
        }
        if self.rebuild_instead() {
            self.compact();
            return;
        }
        let added = self.buffer_entries();
        let parallel = self.row_fps.len() < PARALLEL_BUILD_LIMIT;
        let merged = merged_tables(
            &self.tables,
            &added,
            &self.live,
            self.tombstones > 0,
            parallel,
        );
        self.tables = Arc::new(merged);
        self.tabled_rows = self.row_fps.len() as u32;
        self.buffer_fps.clear();
        self.buffer_rows.clear();
        self.tombstones = 0;
    }

    /// Renumbers the live rows densely and rebuilds every table from them.
    pub(crate) fn compact(&mut self) {
        // A background merge's tables would be rebuilt anyway; its rows are in the row store.
        self.finish_merge();
        if self.dead_rows > 0 {
            let mut fps = huge_capacity(self.by_id.len());
            let mut ids = huge_capacity(self.by_id.len());
            for (row, (&fp, &id)) in self.row_fps.iter().zip(&self.row_ids).enumerate() {
                if is_live(&self.live, row as u32) {
                    fps.push(fp);
                    ids.push(id);
                }
            }
            self.by_id.clear();
            self.by_id.shrink_to(ids.len());
            for (row, &id) in ids.iter().enumerate() {
                self.by_id.insert(id, row as u32);
            }
            let words = fps.len().div_ceil(64);
            self.live = vec![u64::MAX; words];
            if fps.len() % 64 != 0 {
                if let Some(last) = self.live.last_mut() {
                    *last = low_mask((fps.len() % 64) as u32);
                }
            }
            self.row_fps = fps;
            self.row_ids = ids;
            self.dead_rows = 0;
        }
        // The buffered rows are all in the row store: free the buffer before the build.
        self.buffer_fps = Vec::new();
        self.buffer_rows = Vec::new();
        let fps = &self.row_fps;
        let keys: Vec<KeySpec> = self.tables.iter().map(|t| t.key).collect();
        // Drop the old tables first: at scale they are most of the memory.
        self.tables = Arc::new(Vec::new());
        self.tables = Arc::new(if fps.len() < PARALLEL_BUILD_LIMIT {
            keys.into_par_iter()
                .map(|key| SortedTable::build(key, fps))
                .collect()
        } else {
            keys.into_iter()
                .map(|key| SortedTable::build(key, fps))
                .collect()
        });
        self.tabled_rows = self.row_fps.len() as u32;
        self.buffer_fps = Vec::new();
        self.buffer_rows = Vec::new();
        self.tombstones = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::Radii;
    use super::*;

    /// Removals while a merge runs on its own thread, from each region (old tables, the
    /// frozen buffer, the live buffer): never reported, counted as tombstones of the merged
    /// tables, and dropped by the next merge.
    #[test]
    fn removals_during_a_background_merge_stay_removed() {
        let keys = vec![
            KeySpec::new(&[(0, 16)]).expect("valid range"),
            KeySpec::new(&[(16, 16)]).expect("valid range"),
        ];
        let mut set = TableSet::new(keys, Some(100), None);
        let fp = |i: u64| 0xABCD_0000_0000_0000 | (i << 20);
        for id in 0..1000 {
            set.insert(id, fp(id)).expect("fresh id");
        }
        set.compact();
        // 100 inserts fill the buffer: the merge starts and the buffer is frozen.
        for id in 1000..1100 {
            set.insert(id, fp(id)).expect("fresh id");
        }
        assert!(set.pending.is_some(), "a background merge started");
        assert_eq!(set.buffered(), 100);
        // Two more inserts into the live buffer, without the poll `insert` makes (which
        // could install the merge before the removals below, if it finished already).
        for id in [1100, 1101] {
            let row = set.push_row(id, fp(id)).expect("fresh id");
            set.buffer_fps.push(fp(id));
            set.buffer_rows.push(row);
        }
        let removed = [3u64, 500, 1000, 1050, 1101];
        for &id in &removed {
            assert_eq!(set.remove(id), Some(fp(id)));
        }
        let visible = |set: &TableSet| {
            let mut out = Vec::new();
            let mut ids = Vec::new();
            for id in 0..1102 {
                set.query(fp(id), 0, Radii::Exact, usize::MAX, &mut out);
                ids.extend(out.iter().map(|m| m.id));
            }
            ids
        };
        let expected: Vec<u64> = (0..1102).filter(|id| !removed.contains(id)).collect();
        assert_eq!(visible(&set), expected);
        set.finish_merge();
        assert_eq!(set.tabled_rows, 1100);
        // Two removed rows were in the old tables, two in the frozen buffer.
        assert_eq!(set.tombstones, 4);
        assert_eq!(set.buffer_rows, vec![1100]);
        assert_eq!(visible(&set), expected);
        set.merge_buffer();
        assert_eq!(set.tombstones, 0);
        assert_eq!(visible(&set), expected);
        assert_eq!(set.len(), expected.len());
    }
}
