//! One sorted table: every fingerprint ordered by (key, fingerprint), with a directory
//! indexed by the key's top bits, built by radix sort or merged with new entries.

use super::key::{directory_bits, KeySpec};
use super::memory::{huge_capacity, huge_vec};

/// Where a probe's entries lie in a table: verify `start..end`, keeping only entries `fp`
/// with `(fp ^ probe) & check == 0`, where `probe` is any fingerprint with the probed key
/// (the entries of a shared directory slot whose key is another; `check` is 0 when every
/// entry of the range has the key).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Run {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) check: u64,
}

/// One table: every tabled fingerprint, sorted by (key, fingerprint).
#[derive(Debug, Clone)]
pub(crate) struct SortedTable {
    pub(super) key: KeySpec,
    /// Directory width: the top `dir_bits` bits of the key index `dir`.
    pub(super) dir_bits: u32,
    pub(super) dir: Vec<u32>,
    pub(super) fps: Vec<u64>,
    pub(super) rows: Vec<u32>,
}

impl SortedTable {
    pub(super) fn empty(key: KeySpec) -> Self {
        Self::from_sorted(key, Vec::new(), Vec::new())
    }

    /// Builds the table over `fps`, whose rows are their positions, by a two-pass radix
    /// sort on the directory bits (no comparison sort of the whole table), then sorts each
    /// short directory slot.
    ///
    /// Pass one partitions by the slot's top 8 bits, pass two counting-sorts each part by
    /// the remaining bits: every pass writes to a region small enough for the caches and the
    /// TLB, where a one-pass counting sort would scatter over the whole table and take a
    /// cache and TLB miss per fingerprint (it was three times slower at 100M).
    pub(crate) fn build(key: KeySpec, fps: &[u64]) -> Self {
        const RADIX: u32 = 8;
        let n = fps.len();
        let d = directory_bits(key.bits(), n);
        let shift = key.bits() - d;
        let slot_of = |fp: u64| (key.extract(fp) >> shift) as usize;
        let radix = d.min(RADIX);
        let low = d - radix;

        let mut part_start = vec![0usize; (1 << radix) + 1];
        for &fp in fps {
            part_start[(slot_of(fp) >> low) + 1] += 1;
        }
        for b in 1..part_start.len() {
            part_start[b] += part_start[b - 1];
        }
        let mut cursor = part_start.clone();
        let mut parts = huge_vec(n, (0u64, 0u32));
        for (row, &fp) in fps.iter().enumerate() {
            let b = slot_of(fp) >> low;
            parts[cursor[b]] = (fp, row as u32);
            cursor[b] += 1;
        }
        drop(cursor);

        let mut dir = huge_vec((1usize << d) + 1, 0u32);
        let mut out_fps = huge_vec(n, 0u64);
        let mut out_rows = huge_vec(n, 0u32);
        let mut local = vec![0u32; 1 << low];
        for b in 0..1usize << radix {
            let part = &parts[part_start[b]..part_start[b + 1]];
            let base = b << low;
            for &(fp, _) in part {
                dir[slot_of(fp) + 1] += 1;
            }
            // dir[base] already holds the global start of this part.
            for slot in base + 1..=base + (1 << low) {
                dir[slot] += dir[slot - 1];
            }
            local.copy_from_slice(&dir[base..base + (1 << low)]);
            for &(fp, row) in part {
                let at = &mut local[slot_of(fp) - base];
                out_fps[*at as usize] = fp;
                out_rows[*at as usize] = row;
                *at += 1;
            }
        }
        drop(parts);
        if shift > 0 {
            // A slot then mixes keys that share their top `d` bits: order them by key.
            for slot in 0..dir.len() - 1 {
                let (start, end) = (dir[slot] as usize, dir[slot + 1] as usize);
                if end - start > 1 {
                    sort_slot(&key, &mut out_fps[start..end], &mut out_rows[start..end]);
                }
            }
        }
        Self::from_parts(key, dir, out_fps, out_rows)
    }

    /// The table of sorted `fps` and `rows` and their directory (of `2^d + 1` offsets).
    fn from_parts(key: KeySpec, dir: Vec<u32>, fps: Vec<u64>, rows: Vec<u32>) -> Self {
        debug_assert!((dir.len() - 1).is_power_of_two());
        SortedTable {
            key,
            dir_bits: (dir.len() - 1).trailing_zeros(),
            dir,
            fps,
            rows,
        }
    }

    /// A table over entries already sorted by (key, fingerprint); builds the directory.
    fn from_sorted(key: KeySpec, fps: Vec<u64>, rows: Vec<u32>) -> Self {
        let d = directory_bits(key.bits(), fps.len());
        let shift = key.bits() - d;
        let mut dir = huge_vec((1usize << d) + 1, 0u32);
        for &fp in &fps {
            dir[(key.extract(fp) >> shift) as usize + 1] += 1;
        }
        for slot in 1..dir.len() {
            dir[slot] += dir[slot - 1];
        }
        Self::from_parts(key, dir, fps, rows)
    }

    /// Merges `added` (unsorted `(fingerprint, row)`) into a new table in one sequential
    /// pass, dropping entries whose row is dead.
    pub(super) fn merge(&self, added: &[(u64, u32)], live: &[u64], has_dead: bool) -> Self {
        let key = self.key;
        let mut added: Vec<(u64, u64, u32)> = added
            .iter()
            .map(|&(fp, row)| (key.extract(fp), fp, row))
            .collect();
        added.sort_unstable();
        let len = self.fps.len() + added.len();
        let d = directory_bits(key.bits(), len);
        let mut fps = huge_capacity(len);
        let mut rows = huge_capacity(len);
        if has_dead || d != self.dir_bits || self.fps.is_empty() {
            let mut new = added.into_iter().peekable();
            for (&fp, &row) in self.fps.iter().zip(&self.rows) {
                if !is_live(live, row) {
                    continue;
                }
                let order = (key.extract(fp), fp);
                while let Some(&(nkey, nfp, nrow)) = new.peek() {
                    if (nkey, nfp) > order {
                        break;
                    }
                    fps.push(nfp);
                    rows.push(nrow);
                    new.next();
                }
                fps.push(fp);
                rows.push(row);
            }
            for (_, nfp, nrow) in new {
                fps.push(nfp);
                rows.push(nrow);
            }
            return Self::from_sorted(key, fps, rows);
        }
        // No dead entries and the same directory width: copy the old table in bulk between
        // the insertion points (found through the directory), and shift the directory by
        // the number of entries added before each slot.
        let shift = key.bits() - d;
        let mut old_at = 0;
        for &(nkey, nfp, nrow) in &added {
            let slot = (nkey >> shift) as usize;
            let mut pos = old_at.max(self.dir[slot] as usize);
            let end = self.dir[slot + 1] as usize;
            while pos < end && (key.extract(self.fps[pos]), self.fps[pos]) <= (nkey, nfp) {
                pos += 1;
            }
            fps.extend_from_slice(&self.fps[old_at..pos]);
            rows.extend_from_slice(&self.rows[old_at..pos]);
            old_at = pos;
            fps.push(nfp);
            rows.push(nrow);
        }
        fps.extend_from_slice(&self.fps[old_at..]);
        rows.extend_from_slice(&self.rows[old_at..]);
        let mut dir = huge_capacity(self.dir.len());
        let mut before = 0u32;
        let mut next = added.iter().map(|a| (a.0 >> shift) as usize).peekable();
        for (slot, &start) in self.dir.iter().enumerate() {
            while next.next_if(|&s| s < slot).is_some() {
                before += 1;
            }
            dir.push(start + before);
        }
        Self::from_parts(key, dir, fps, rows)
    }

    /// The directory slot of `key`.
    #[inline(always)]
    pub(super) fn slot(&self, key: u64) -> usize {
        (key >> (self.key.bits() - self.dir_bits)) as usize
    }

    /// The entries to verify for `key`, given its `slot` (see [`Run`]).
    ///
    /// When the directory covers the whole key the slot is the run (`check` 0). Otherwise a
    /// slot holds two to four entries, and filtering them by the key bits during the
    /// verification pass is cheaper than first searching for the run, a dependent second
    /// pass over the same cache line. Long slots (clusters) are narrowed by binary search.
    #[inline(always)]
    pub(super) fn locate(&self, slot: usize, key: u64) -> Run {
        let (start, end) = (self.dir[slot] as usize, self.dir[slot + 1] as usize);
        if self.key.bits() == self.dir_bits || end - start <= 16 {
            let check = if self.key.bits() == self.dir_bits {
                0
            } else {
                self.key.mask()
            };
            return Run { start, end, check };
        }
        let slice = &self.fps[start..end];
        let lo = slice.partition_point(|&fp| self.key.extract(fp) < key);
        let hi = lo + slice[lo..].partition_point(|&fp| self.key.extract(fp) == key);
        Run {
            start: start + lo,
            end: start + hi,
            check: 0,
        }
    }

    /// The positions of the run whose key is `key`; `probe` is any fingerprint with that
    /// key (its other bits are ignored).
    #[cfg(test)]
    fn run(&self, key: u64, probe: u64) -> (usize, usize) {
        let Run { start, end, check } = self.locate(self.slot(key), key);
        let slice = &self.fps[start..end];
        let lo = slice
            .iter()
            .position(|&fp| (fp ^ probe) & check == 0)
            .unwrap_or(slice.len());
        let len = slice[lo..]
            .iter()
            .take_while(|&&fp| (fp ^ probe) & check == 0)
            .count();
        (start + lo, start + lo + len)
    }

    /// Calls `f(fingerprints, rows)` for every run of two or more entries sharing a key.
    pub(crate) fn for_each_shared_run<F: FnMut(&[u64], &[u32])>(&self, mut f: F) {
        if self.key.bits() == self.dir_bits {
            for slot in self.dir.windows(2) {
                let (start, end) = (slot[0] as usize, slot[1] as usize);
                if end - start > 1 {
                    f(&self.fps[start..end], &self.rows[start..end]);
                }
            }
            return;
        }
        let mut start = 0;
        let mut start_key = self.fps.first().map_or(0, |&fp| self.key.extract(fp));
        for at in 1..=self.fps.len() {
            let key = self.fps.get(at).map(|&fp| self.key.extract(fp));
            if key != Some(start_key) {
                if at - start > 1 {
                    f(&self.fps[start..at], &self.rows[start..at]);
                }
                start = at;
                start_key = key.unwrap_or(0);
            }
        }
    }

    pub(super) fn largest_run(&self) -> usize {
        let mut largest = 0;
        let mut start = 0;
        for at in 1..=self.fps.len() {
            if at == self.fps.len()
                || self.key.extract(self.fps[at]) != self.key.extract(self.fps[start])
            {
                largest = largest.max(at - start);
                start = at;
            }
        }
        largest
    }

    pub(super) fn memory_bytes(&self) -> usize {
        self.dir.capacity() * 4 + self.fps.capacity() * 8 + self.rows.capacity() * 4
    }
}

/// Sorts a slot's parallel arrays by (key, fingerprint): insertion sort for the usual two
/// to four entries, a sort of pairs for the long slots of clustered fingerprints.
fn sort_slot(key: &KeySpec, fps: &mut [u64], rows: &mut [u32]) {
    let order = |fp: u64| (key.extract(fp), fp);
    if fps.len() <= 16 {
        for i in 1..fps.len() {
            let mut j = i;
            while j > 0 && order(fps[j - 1]) > order(fps[j]) {
                fps.swap(j - 1, j);
                rows.swap(j - 1, j);
                j -= 1;
            }
        }
        return;
    }
    let mut pairs: Vec<(u64, u32)> = fps.iter().copied().zip(rows.iter().copied()).collect();
    pairs.sort_unstable_by_key(|&(fp, _)| order(fp));
    for ((fp, row), (f, r)) in pairs.into_iter().zip(fps.iter_mut().zip(rows.iter_mut())) {
        *f = fp;
        *r = row;
    }
}

/// Whether `row` is set in a liveness bitmap (bit `row % 64` of word `row / 64`).
#[inline]
pub(super) fn is_live(live: &[u64], row: u32) -> bool {
    live[(row / 64) as usize] >> (row % 64) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_copy_merge_keeps_every_run_whole() {
        for key in [
            KeySpec::new(&[(10, 12)]).expect("valid range"),
            KeySpec::new(&[(40, 9), (3, 7)]).expect("valid ranges"),
        ] {
            let fps: Vec<u64> = (0..5000u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i % 7))
                .collect();
            let live = vec![u64::MAX; fps.len().div_ceil(64)];
            let base = SortedTable::build(key, &fps[..4500]);
            let added: Vec<(u64, u32)> = fps[4500..].iter().copied().zip(4500..).collect();
            let merged = base.merge(&added, &live, false);
            assert_eq!(merged.dir_bits, base.dir_bits, "the bulk path ran");
            let fresh = SortedTable::build(key, &fps);
            assert_eq!(merged.dir, fresh.dir);
            // The (fingerprint, row) entries of `fp`'s run, sorted.
            let run_of = |table: &SortedTable, fp: u64| {
                let (s, e) = table.run(key.extract(fp), fp);
                let mut entries: Vec<(u64, u32)> = table.fps[s..e]
                    .iter()
                    .copied()
                    .zip(table.rows[s..e].iter().copied())
                    .collect();
                entries.sort_unstable();
                entries
            };
            for (row, &fp) in fps.iter().enumerate() {
                let got = run_of(&merged, fp);
                assert_eq!(got, run_of(&fresh, fp));
                assert!(got.contains(&(fp, row as u32)));
            }
        }
    }

    #[test]
    fn build_and_merge_agree_on_runs() {
        let key = KeySpec::new(&[(10, 12)]).expect("valid range");
        let fps: Vec<u64> = (0..5000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let built = SortedTable::build(key, &fps);
        let live = vec![u64::MAX; fps.len().div_ceil(64)];
        let added: Vec<(u64, u32)> = fps.iter().copied().zip(0..).collect();
        let merged = SortedTable::empty(key).merge(&added, &live, false);
        assert_eq!(built.fps, merged.fps);
        for fp in fps.iter().take(100) {
            let (s, e) = built.run(key.extract(*fp), *fp);
            assert!(built.fps[s..e].contains(fp));
            assert!(built.fps[s..e]
                .iter()
                .all(|f| key.extract(*f) == key.extract(*fp)));
        }
    }
}
