//! The engine shared by the band, permuted and multi-index tables: a row store, key tables
//! sorted by a bit-subset of the fingerprint, an insert buffer and tombstones.
//!
//! Why no crate: this is the product's core. Bands (Charikar/pigeonhole), Manku's permuted
//! tables and Norouzi's multi-index hashing are all the same structure seen from here: a
//! table orders every fingerprint by a *key*, some of its bits, and a query looks up the
//! query's key (or every key within a small radius of it) and verifies the run it finds.
//! A permuted table sorted by `π(fp)` and probed on its top `p` bits finds exactly the run
//! this table finds for the key "the chosen blocks' bits", so we store the fingerprint
//! unpermuted: popcount is permutation-invariant, and the de-duplication test below needs
//! the fingerprint in its own bit order.
//!
//! Layout of one table (about 12 bytes per fingerprint plus a directory):
//!
//! - `fps`: fingerprints sorted by (key, fingerprint), so a run is contiguous and the
//!   verification loop streams 8 bytes per candidate;
//! - `rows`: the parallel 32-bit row number, read only on a hit (a row indexes the row store,
//!   which holds the id; a `u64` id per table would cost 4 more bytes per table);
//! - `dir`: offsets indexed by the top `d` bits of the key (`d` about `log2 n - 1`, or all
//!   key bits when the key is that short: a CSR layout), so a lookup is one directory read
//!   plus at most a short binary search, instead of a search over the whole table.
//!
//! Inserts go to a buffer that every query scans linearly; when full it is merged into the
//! tables in one sequential pass on a thread of its own, so an insert never waits for a
//! merge: the full buffer is frozen (queries scan it too) and a fresh one takes the inserts
//! until the merged tables are swapped in. Removal
//! marks the row dead at once (queries check liveness on every hit, and the row's
//! fingerprint and id are overwritten); merges drop dead entries from the tables and
//! compaction renumbers the rows, so erased data really leaves memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use rayon::prelude::*;

use super::linear::{hash_map_bytes, scan};
use super::{sort_matches, IndexError, IndexStats, Match, QueryStats};

/// The most contiguous bit ranges one key may gather.
const MAX_RANGES: usize = 24;

/// A sorted batch orders its queries by at most this many top bits of their directory slot.
const SORT_BITS: u32 = 16;

/// The shortest batch answered by a sorted sweep of the tables.
const SORTED_BATCH_MIN: usize = 1 << 17;

/// The fewest tabled fingerprints for which a sorted sweep beats grouped random probes
/// (measured at k 3: 1.3x at 4M and 10M with batches of 2^18, 1.5-1.9x at 30M, 1.9-3x at
/// 100M with 2M; at 1M, where four tables stay within what the TLB maps, 0.8x).
const SORTED_TABLE_MIN: usize = 1 << 22;

#[cfg(test)]
thread_local! {
    /// Makes every exact-key batch on this thread take sorted sweeps of this many queries
    /// (tests).
    pub(crate) static FORCE_SORTED_SWEEP: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// A radius batch's probes of one table as (query, key), the same by slot, and the slots'
/// starts.
type ProbeBuffers = (Vec<(u32, u32)>, Vec<(u32, u32)>, Vec<u32>);

/// Queries a radius batch sweeps the tables for at once: their probes (8 bytes each, a few
/// hundred per query and table at radius 10 to 16) stay within a few megabytes; measured
/// as fast from 256 to 2,048 on 150,000 fingerprints at k 14.
const RADII_BATCH: usize = 1024;

/// Runs up to this length are verified by a plain loop; longer ones use the vectorised scan.
const SHORT_RUN: usize = 32;

/// A key: some contiguous bit ranges of the fingerprint, concatenated (first range most
/// significant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeySpec {
    ranges: [(u8, u8); MAX_RANGES],
    count: u8,
    bits: u32,
    mask: u64,
}

impl KeySpec {
    /// A key of `ranges`, each `(lowest bit, width)`; the ranges must not overlap.
    pub(crate) fn new(ranges: &[(u32, u32)]) -> Result<Self, IndexError> {
        if ranges.is_empty() || ranges.len() > MAX_RANGES {
            return Err(IndexError::InvalidLayout(format!(
                "a key gathers 1 to {MAX_RANGES} bit ranges, not {}",
                ranges.len()
            )));
        }
        // Highest range first: the key is then the mask's bits in fingerprint order (what
        // BMI2 `pext` would gather), and a single-range key is `fp >> lo` masked.
        let mut sorted = ranges.to_vec();
        sorted.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
        let ranges = &sorted[..];
        let mut spec = KeySpec {
            ranges: [(0, 0); MAX_RANGES],
            count: ranges.len() as u8,
            bits: 0,
            mask: 0,
        };
        for (slot, &(lo, width)) in spec.ranges.iter_mut().zip(ranges) {
            if width == 0 || lo + width > 64 {
                return Err(IndexError::InvalidLayout(format!(
                    "bit range {lo}..{} is empty or outside 64 bits",
                    lo + width
                )));
            }
            let mask = low_mask(width) << lo;
            if spec.mask & mask != 0 {
                return Err(IndexError::InvalidLayout(format!(
                    "bit range {lo}..{} overlaps another range of the same key",
                    lo + width
                )));
            }
            spec.mask |= mask;
            spec.bits += width;
            *slot = (lo as u8, width as u8);
        }
        Ok(spec)
    }

    /// The key's width in bits.
    pub(crate) fn bits(&self) -> u32 {
        self.bits
    }

    /// The key's bits, in fingerprint bit positions.
    pub(crate) fn mask(&self) -> u64 {
        self.mask
    }

    /// The key of `fp`.
    #[inline]
    pub(crate) fn extract(&self, fp: u64) -> u64 {
        if self.count == 1 {
            let (lo, width) = self.ranges[0];
            return (fp >> lo) & low_mask(u32::from(width));
        }
        let mut key = 0u64;
        for &(lo, width) in &self.ranges[..usize::from(self.count)] {
            // A 64-bit range is necessarily the only one, so `key` is still 0 there and the
            // wrapping shift (by 0) is harmless.
            key = key.wrapping_shl(u32::from(width)) | ((fp >> lo) & low_mask(u32::from(width)));
        }
        key
    }
}

/// The lowest `width` bits set (all 64 for `width >= 64`).
#[inline]
pub(crate) fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// `sum_{j <= radius} C(bits, j)`: the number of keys within `radius` of a `bits`-bit key.
pub(crate) fn ball_size(bits: u32, radius: u32) -> f64 {
    let mut term = 1.0f64;
    let mut total = 1.0f64;
    for j in 1..=radius.min(bits) {
        term = term * f64::from(bits - j + 1) / f64::from(j);
        total += term;
    }
    total
}

/// Calls `f` for every `bits`-bit value within `radius` of `center` (the center first).
#[inline]
pub(crate) fn for_each_in_ball<F: FnMut(u64)>(center: u64, bits: u32, radius: u32, f: &mut F) {
    f(center);
    if radius > 0 {
        flip_from(center, 0, bits, radius, f);
    }
}

fn flip_from<F: FnMut(u64)>(value: u64, start: u32, bits: u32, left: u32, f: &mut F) {
    for bit in start..bits {
        let flipped = value ^ (1u64 << bit);
        f(flipped);
        if left > 1 {
            flip_from(flipped, bit + 1, bits, left - 1, f);
        }
    }
}

/// Directory width for `len` entries and a `key_bits` key: about one slot per two to four
/// entries (about 1 to 2 bytes per fingerprint), or every key value when the key is that
/// short.
pub(crate) fn directory_bits(key_bits: u32, len: usize) -> u32 {
    let log = usize::BITS - len.leading_zeros();
    key_bits.min(log.saturating_sub(2).clamp(4, 30))
}

/// One table: every tabled fingerprint, sorted by (key, fingerprint).
#[derive(Debug, Clone)]
pub(crate) struct SortedTable {
    key: KeySpec,
    dir_bits: u32,
    dir: Vec<u32>,
    fps: Vec<u64>,
    rows: Vec<u32>,
}

impl SortedTable {
    fn empty(key: KeySpec) -> Self {
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
        let d = directory_bits(key.bits, n);
        let shift = key.bits - d;
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
        SortedTable {
            key,
            dir_bits: d,
            dir,
            fps: out_fps,
            rows: out_rows,
        }
    }

    /// A table over entries already sorted by (key, fingerprint); builds the directory.
    fn from_sorted(key: KeySpec, fps: Vec<u64>, rows: Vec<u32>) -> Self {
        let d = directory_bits(key.bits, fps.len());
        let shift = key.bits - d;
        let mut dir = huge_vec((1usize << d) + 1, 0u32);
        for &fp in &fps {
            dir[(key.extract(fp) >> shift) as usize + 1] += 1;
        }
        for slot in 1..dir.len() {
            dir[slot] += dir[slot - 1];
        }
        SortedTable {
            key,
            dir_bits: d,
            dir,
            fps,
            rows,
        }
    }

    /// Merges `added` (unsorted `(fingerprint, row)`) into a new table in one sequential
    /// pass, dropping entries whose row is dead.
    fn merge(&self, added: &[(u64, u32)], live: &[u64], has_dead: bool) -> Self {
        let key = self.key;
        let mut added: Vec<(u64, u64, u32)> = added
            .iter()
            .map(|&(fp, row)| (key.extract(fp), fp, row))
            .collect();
        added.sort_unstable();
        let len = self.fps.len() + added.len();
        let d = directory_bits(key.bits, len);
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
        let shift = key.bits - d;
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
        SortedTable {
            key,
            dir_bits: d,
            dir,
            fps,
            rows,
        }
    }

    /// The directory slot of `key`.
    #[inline(always)]
    fn slot(&self, key: u64) -> usize {
        (key >> (self.key.bits - self.dir_bits)) as usize
    }

    /// The entries to verify for `key`, given its `slot`; `probe` is any fingerprint with
    /// that key. Returns `(start, end, check)`: verify `start..end`, keeping only entries
    /// `fp` with `(fp ^ probe) & check == 0` (the entries whose key is `key`).
    ///
    /// When the directory covers the whole key the slot is the run (`check` 0). Otherwise a
    /// slot holds two to four entries, and filtering them by the key bits during the
    /// verification pass is cheaper than first searching for the run, a dependent second
    /// pass over the same cache line. Long slots (clusters) are narrowed by binary search.
    #[inline(always)]
    fn locate(&self, slot: usize, key: u64) -> (usize, usize, u64) {
        let (start, end) = (self.dir[slot] as usize, self.dir[slot + 1] as usize);
        if self.key.bits == self.dir_bits || end - start <= 16 {
            let check = if self.key.bits == self.dir_bits {
                0
            } else {
                self.key.mask
            };
            return (start, end, check);
        }
        let slice = &self.fps[start..end];
        let lo = slice.partition_point(|&fp| self.key.extract(fp) < key);
        let hi = lo + slice[lo..].partition_point(|&fp| self.key.extract(fp) == key);
        (start + lo, start + hi, 0)
    }

    /// The positions of the run whose key is `key`; `probe` is any fingerprint with that
    /// key (its other bits are ignored).
    #[cfg(test)]
    fn run(&self, key: u64, probe: u64) -> (usize, usize) {
        let (start, end, check) = self.locate(self.slot(key), key);
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

    /// A fingerprint whose key is `key`, for a single-range key (multi-index probes).
    #[inline(always)]
    fn probe_for(&self, key: u64) -> u64 {
        debug_assert_eq!(self.key.count, 1, "radius probes need a single-range key");
        key << self.key.ranges[0].0
    }

    /// Calls `f(fingerprints, rows)` for every run of two or more entries sharing a key.
    pub(crate) fn for_each_shared_run<F: FnMut(&[u64], &[u32])>(&self, mut f: F) {
        if self.key.bits == self.dir_bits {
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

    fn largest_run(&self) -> usize {
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

    fn memory_bytes(&self) -> usize {
        self.dir.capacity() * 4 + self.fps.capacity() * 8 + self.rows.capacity() * 4
    }
}

/// Allocations at least this large ask for transparent huge pages.
const HUGE_BYTES: usize = 4 << 20;

/// An empty vector with room for `capacity` elements, backed by huge pages where the OS
/// allows it: probes touch random places of tables much larger than what the TLB maps
/// with 4 KiB pages, and a page walk per probe costs as much as the cache miss itself
/// (more under virtualisation). Asked before the first write, so pages fault in huge.
fn huge_capacity<T>(capacity: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(capacity);
    advise_huge_pages(v.as_ptr().cast::<u8>(), capacity * std::mem::size_of::<T>());
    v
}

/// `len` copies of `value` in a [`huge_capacity`] vector.
fn huge_vec<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = huge_capacity(len);
    v.resize(len, value);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *const u8, bytes: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    if bytes < HUGE_BYTES {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + bytes) & !(HUGE_PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside an allocation we own; MADV_HUGEPAGE only changes
        // how the kernel backs it, never its contents. Failure (no THP) is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *const u8, _bytes: usize) {}

/// Asks for the cache line holding `items[at]` (a directory entry, a row number, an id):
/// one line only, since every line in flight holds one of the core's few fill buffers.
#[inline(always)]
fn prefetch<T>(items: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < items.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching has no effect on memory and never faults.
        unsafe { _mm_prefetch(items[at..].as_ptr().cast::<i8>(), _MM_HINT_T0) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, at);
}

/// Asks for the cache lines holding `items[at]` and the next one (a run of ~15
/// fingerprints spans two): the multi-index probe loop, where measured against whole-run
/// prefetching this was faster (fewer fill buffers held per probe ahead).
#[inline(always)]
fn prefetch_pair<T>(items: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < items.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let line = items[at..].as_ptr().cast::<i8>();
        // SAFETY: prefetching has no effect on memory; the second line may lie past the
        // slice, which a prefetch tolerates (it never faults), and `wrapping_add` keeps the
        // pointer arithmetic defined.
        unsafe {
            _mm_prefetch(line, _MM_HINT_T0);
            _mm_prefetch(line.wrapping_add(64), _MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, at);
}

/// Asks for every cache line of `items[start..end]`, up to four (a longer run is read
/// sequentially, which the hardware prefetcher follows).
#[inline(always)]
fn prefetch_run<T>(items: &[T], start: usize, end: usize) {
    #[cfg(target_arch = "x86_64")]
    if start < end && end <= items.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let first = items[start..].as_ptr().cast::<i8>();
        let bytes = (end - start) * std::mem::size_of::<T>();
        // Lines touched: from the one holding the first byte to the one holding the last.
        let lines = ((first as usize & 63) + bytes).div_ceil(64).min(4);
        for line in 0..lines {
            // SAFETY: prefetching has no effect on memory and never faults; the address
            // lies inside (or in the last line of) the slice, and `wrapping_add` keeps the
            // pointer arithmetic defined.
            unsafe { _mm_prefetch(first.wrapping_add(line * 64), _MM_HINT_T0) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, start, end);
}

/// Sorts `items` by the low `bits` bits of `key`, stably: least significant byte first, one
/// counting pass per byte. Each pass writes 256 streams, which the caches absorb, where one
/// pass over 2^16 buckets would miss on nearly every write once they outgrow L2.
fn radix_sort<T: Copy + Default>(items: &mut Vec<T>, bits: u32, key: impl Fn(&T) -> u32) {
    let mut sorted = vec![T::default(); items.len()];
    let mut counts = [0usize; 257];
    for shift in (0..bits).step_by(8) {
        counts.fill(0);
        for item in items.iter() {
            counts[((key(item) >> shift) & 0xFF) as usize + 1] += 1;
        }
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        for item in items.iter() {
            let at = &mut counts[((key(item) >> shift) & 0xFF) as usize];
            sorted[*at] = *item;
            *at += 1;
        }
        std::mem::swap(items, &mut sorted);
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

#[inline]
fn is_live(live: &[u64], row: u32) -> bool {
    live[(row / 64) as usize] >> (row % 64) & 1 == 1
}

/// Tables up to this many are probed in two phases by exact-key queries.
const EXACT_BATCH: usize = 24;

/// The key radius each table is probed with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Radii<'a> {
    /// Every table, exact key (radius 0): bands and permuted tables.
    Exact,
    /// Per table; `None` skips the table (multi-index hashing).
    PerTable(&'a [Option<u32>]),
}

impl Radii<'_> {
    #[inline(always)]
    fn radius(self, table: usize) -> Option<u32> {
        match self {
            Radii::Exact => Some(0),
            Radii::PerTable(radii) => radii[table],
        }
    }
}

/// A buffer being merged into the tables on its own thread.
#[derive(Debug)]
struct PendingMerge {
    /// The frozen buffer: queries scan it until the merged tables are installed.
    fps: Vec<u64>,
    rows: Vec<u32>,
    /// The merged tables hold every live row below this (the row count when frozen).
    end: u32,
    /// Rows below `end` removed after the merge read the liveness bitmap: the merged
    /// tables still hold their entries, so they become the tables' tombstones.
    removed_since: usize,
    handle: JoinHandle<Vec<SortedTable>>,
}

/// Rows, tables, buffer and tombstones; the indexes wrap it with their layout and radii.
#[derive(Debug)]
pub(crate) struct TableSet {
    /// Shared with a background merge, which reads them while queries go on.
    tables: Arc<Vec<SortedTable>>,
    row_fps: Vec<u64>,
    row_ids: Vec<u64>,
    live: Vec<u64>,
    by_id: HashMap<u64, u32>,
    /// Rows below this are in the tables; the rest are in the buffer.
    tabled_rows: u32,
    buffer_fps: Vec<u64>,
    buffer_rows: Vec<u32>,
    buffer_capacity: Option<usize>,
    /// A frozen buffer being merged, with rows from `tabled_rows` on; the live buffer then
    /// holds the rows from its `end` on.
    pending: Option<PendingMerge>,
    candidate_cap: Option<usize>,
    capped_total: AtomicU64,
    /// Dead rows below `tabled_rows` whose entries are still in the tables.
    tombstones: usize,
    /// Dead rows anywhere in the row store.
    dead_rows: usize,
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

    fn push_row(&mut self, id: u64, fp: u64) -> Result<u32, IndexError> {
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

    pub(crate) fn get(&self, id: u64) -> Option<u64> {
        self.by_id.get(&id).map(|&row| self.row_fps[row as usize])
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
    fn finish_merge(&mut self) {
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

    /// Looks up every table with the given per-table key radius (`None`: skip the table),
    /// scans the buffer, and fills `out` with the first `limit` matches by (distance, id),
    /// sorted.
    ///
    /// A fingerprint found in table `t` is reported there only if no earlier probed table
    /// `j` also reaches it (its key is then within `radius[j]` of the query's key in `j`,
    /// so `j` reported it): every id is reported once, with no hash set.
    pub(crate) fn query(
        &self,
        q: u64,
        max_distance: u32,
        radii: Radii<'_>,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> QueryStats {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU supports the features `query_avx2` is compiled for.
                return unsafe { self.query_avx2(q, max_distance, radii, limit, out) };
            }
        }
        self.query_body(q, max_distance, radii, limit, out)
    }

    /// The query compiled with hardware popcount and AVX2: the default x86-64 target has
    /// neither, and the verification loops are most of a query's instructions.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn query_avx2(
        &self,
        q: u64,
        max_distance: u32,
        radii: Radii<'_>,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> QueryStats {
        self.query_body(q, max_distance, radii, limit, out)
    }

    /// Answers many queries that probe the tables with radii (multi-index hashing) at once:
    /// `out[i]` gets what [`query`](Self::query) puts in its `out` for `queries[i]`.
    ///
    /// A query at radius 10 to 16 probes a few hundred runs of each table, each a cache
    /// miss of its own when queries come one by one. Here each table's probes of all the
    /// queries are ordered by directory slot and verified in that order: the table is read
    /// in one forward sweep, and a run that several queries probe is read once.
    pub(crate) fn query_radii_batch(
        &self,
        queries: &[u64],
        max_distance: u32,
        radii: &[Option<u32>],
        limit: usize,
        out: &mut Vec<Vec<Match>>,
    ) -> QueryStats {
        #[cfg(target_arch = "x86_64")]
        {
            if super::linear::has_wide_popcount() {
                // SAFETY: the CPU supports the features `query_radii_batch_wide` is
                // compiled for.
                return unsafe {
                    self.query_radii_batch_wide(queries, max_distance, radii, limit, out)
                };
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU supports the features `query_radii_batch_avx2` is
                // compiled for.
                return unsafe {
                    self.query_radii_batch_avx2(queries, max_distance, radii, limit, out)
                };
            }
        }
        self.query_radii_batch_body::<false>(queries, max_distance, radii, limit, out)
    }

    /// [`query_radii_batch`](Self::query_radii_batch) compiled with hardware popcount and
    /// AVX2, as [`query_avx2`](Self::query_avx2).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn query_radii_batch_avx2(
        &self,
        queries: &[u64],
        max_distance: u32,
        radii: &[Option<u32>],
        limit: usize,
        out: &mut Vec<Vec<Match>>,
    ) -> QueryStats {
        self.query_radii_batch_body::<false>(queries, max_distance, radii, limit, out)
    }

    /// [`query_radii_batch`](Self::query_radii_batch) with AVX-512's vector popcount:
    /// once the runs come from cache, verifying their candidates is the work, and it goes
    /// eight at a time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt,avx512f,avx512vpopcntdq")]
    unsafe fn query_radii_batch_wide(
        &self,
        queries: &[u64],
        max_distance: u32,
        radii: &[Option<u32>],
        limit: usize,
        out: &mut Vec<Vec<Match>>,
    ) -> QueryStats {
        self.query_radii_batch_body::<true>(queries, max_distance, radii, limit, out)
    }

    #[inline(always)]
    fn query_radii_batch_body<const WIDE: bool>(
        &self,
        queries: &[u64],
        max_distance: u32,
        radii: &[Option<u32>],
        limit: usize,
        out: &mut Vec<Vec<Match>>,
    ) -> QueryStats {
        out.resize_with(queries.len(), Vec::new);
        out.truncate(queries.len());
        out.iter_mut().for_each(Vec::clear);
        let mut stats = QueryStats::default();
        // The thread's probe buffers, kept from batch to batch (fresh ones were a megabyte
        // of new pages per batch), unless a wide radius grew them past 8 MiB each.
        thread_local! {
            static PROBES: std::cell::RefCell<ProbeBuffers> = std::cell::RefCell::default();
        }
        PROBES.with_borrow_mut(|buffers| {
            for (group, found) in queries.chunks(RADII_BATCH).zip(out.chunks_mut(RADII_BATCH)) {
                self.query_radii_group::<WIDE>(
                    group,
                    max_distance,
                    radii,
                    found,
                    buffers,
                    &mut stats,
                );
            }
            if buffers.0.capacity() > 1 << 20 {
                *buffers = ProbeBuffers::default();
            }
        });
        for (&q, found) in queries.iter().zip(out.iter_mut()) {
            self.scan_buffer(q, max_distance, found, &mut stats);
            sort_matches(found, limit);
        }
        self.count_capped(&stats);
        stats
    }

    /// The table matches of a group of [`query_radii_batch`](Self::query_radii_batch)'s
    /// queries into `out` (one per query, unsorted), with buffers for the probes.
    #[inline(always)]
    fn query_radii_group<const WIDE: bool>(
        &self,
        queries: &[u64],
        max_distance: u32,
        radii: &[Option<u32>],
        out: &mut [Vec<Match>],
        (probes, sorted, starts): &mut ProbeBuffers,
        stats: &mut QueryStats,
    ) {
        for (t, table) in self.tables.iter().enumerate() {
            let Some(radius) = radii[t] else {
                continue;
            };
            // Keys of multi-index tables of two or more substrings fit in 32 bits (the
            // caller asks one query at a time of a single table).
            debug_assert!(table.key.bits <= 32);
            probes.clear();
            for (qi, &q) in queries.iter().enumerate() {
                for_each_in_ball(table.key.extract(q), table.key.bits, radius, &mut |key| {
                    probes.push((qi as u32, key as u32));
                });
            }
            // A counting sort by the slot's top bits (a few probes per bucket are in
            // order enough): a count, then a scatter.
            let bits = table.dir_bits.min(SORT_BITS);
            let shift = table.key.bits - bits;
            starts.clear();
            starts.resize((1 << bits) + 1, 0);
            for &(_, key) in probes.iter() {
                starts[(key >> shift) as usize + 1] += 1;
            }
            for b in 1..starts.len() {
                starts[b] += starts[b - 1];
            }
            sorted.clear();
            sorted.resize(probes.len(), (0, 0));
            for &probe in probes.iter() {
                let at = &mut starts[(probe.1 >> shift) as usize];
                sorted[*at as usize] = probe;
                *at += 1;
            }
            for &(qi, key) in sorted.iter() {
                let key = u64::from(key);
                let (start, end, check) = table.locate(table.slot(key), key);
                let found = &mut out[qi as usize];
                self.verify_run::<WIDE, _>(
                    queries[qi as usize],
                    max_distance,
                    Radii::PerTable(radii),
                    t,
                    table,
                    (start, end),
                    (table.probe_for(key), check),
                    stats,
                    |at, distance| {
                        let row = table.rows[at];
                        if self.row_is_live(row) {
                            found.push(Match {
                                distance,
                                id: self.row_ids[row as usize],
                            });
                        }
                    },
                );
            }
        }
    }

    /// Exact-key queries in groups: the directory reads and run prefetches of a whole
    /// group go out before any run is verified, so up to `GROUP * tables` cache misses
    /// overlap. Fills `out` with `(query position, match)`.
    pub(crate) fn query_batch_exact(
        &self,
        queries: &[u64],
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
    ) -> QueryStats {
        if let Some(sweep) = self.sorted_sweep(queries.len()) {
            out.clear();
            let mut total = QueryStats::default();
            for (n, part) in queries.chunks(sweep).enumerate() {
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
                {
                    // SAFETY: the CPU supports the features `sorted_avx2` is compiled for.
                    total.add(unsafe { self.sorted_avx2(part, n * sweep, max_distance, out) });
                    continue;
                }
                total.add(self.batch_sorted(part, n * sweep, max_distance, out));
            }
            return total;
        }
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU supports the features `batch_avx2` is compiled for.
                return unsafe { self.batch_avx2(queries, max_distance, out) };
            }
        }
        self.batch_body(queries, max_distance, out)
    }

    /// How many queries of a batch of `len` each sorted sweep answers, when the batch is
    /// answered by [`batch_sorted`](Self::batch_sorted): when it is long enough to sweep
    /// the tables densely and the tables are too large for random probes to stay within
    /// what the TLB maps. Sweeps hold about one query per 32 table entries: denser gains
    /// little, and the sweep's own arrays then outgrow the caches.
    fn sorted_sweep(&self, len: usize) -> Option<usize> {
        #[cfg(test)]
        if let Some(sweep) = FORCE_SORTED_SWEEP.with(std::cell::Cell::get) {
            return Some(sweep);
        }
        // Positions are kept as u32.
        ((SORTED_BATCH_MIN..=u32::MAX as usize).contains(&len)
            && self.tabled_rows as usize >= SORTED_TABLE_MIN)
            .then(|| SORTED_BATCH_MIN.max(self.tabled_rows as usize / 32))
    }

    /// Exact-key queries of a large batch, table by table in key order: each table is
    /// swept once from its start to its end instead of being probed at random, so the
    /// batch's lookups share pages (and TLB entries) and the hardware prefetchers follow
    /// them. A table many times larger than what the TLB maps costs a page walk per random
    /// probe, which bounds the grouped path below at about 20 million probes a second on
    /// this kind of machine; the sweep does not pay it. Appends to `out` what
    /// [`query_batch_exact`](Self::query_batch_exact) fills it with, positions counted from
    /// `base`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn sorted_avx2(
        &self,
        queries: &[u64],
        base: usize,
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
    ) -> QueryStats {
        self.batch_sorted(queries, base, max_distance, out)
    }

    #[inline(always)]
    fn batch_sorted(
        &self,
        queries: &[u64],
        base: usize,
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
    ) -> QueryStats {
        /// Probes issued ahead of the one being verified (directory line, then run).
        const AHEAD: usize = 16;
        let mut total = QueryStats::default();
        // The batch in the table's key order: (query, its key, position, its slot), so that
        // the sweep extracts no key twice.
        let mut order: Vec<(u64, u64, u32, u32)> = Vec::with_capacity(queries.len());
        // A hit: (query, row, distance).
        let mut hits: Vec<(u32, u32, u32)> = Vec::new();
        let batch_bits = usize::BITS - queries.len().leading_zeros();
        for (t, table) in self.tables.iter().enumerate() {
            if table.fps.is_empty() {
                continue;
            }
            // Sorted by their slot's top bits: buckets of a few queries each are fine enough
            // for locality.
            let bits = table.dir_bits.min(batch_bits).min(SORT_BITS);
            let shift = table.dir_bits - bits;
            order.clear();
            order.extend(queries.iter().enumerate().map(|(qi, &q)| {
                let key = table.key.extract(q);
                (q, key, qi as u32, table.slot(key) as u32)
            }));
            radix_sort(&mut order, bits, |o| o.3 >> shift);
            for &(.., slot) in order.iter().take(AHEAD) {
                prefetch(&table.dir, slot as usize);
            }
            for (i, &(q, key, qi, slot)) in order.iter().enumerate() {
                if let Some(&(.., ahead)) = order.get(i + AHEAD) {
                    prefetch(&table.dir, ahead as usize);
                }
                if let Some(&(.., near)) = order.get(i + AHEAD / 2) {
                    prefetch(&table.fps, table.dir[near as usize] as usize);
                }
                let (start, end, check) = table.locate(slot as usize, key);
                self.verify_run::<false, _>(
                    q,
                    max_distance,
                    Radii::Exact,
                    t,
                    table,
                    (start, end),
                    (q, check),
                    &mut total,
                    |at, distance| hits.push((qi, table.rows[at], distance)),
                );
            }
        }
        // Ids in row order (a sweep of the row store, not a miss per hit), then grouped by
        // query (a counting sort again) and reported in (distance, id) order per query, with
        // the insert buffer's.
        let high_row = hits.iter().map(|h| h.1).max().unwrap_or(0);
        radix_sort(&mut hits, u32::BITS - high_row.leading_zeros(), |h| h.1);
        let mut counts = vec![0u32; queries.len() + 1];
        for &(qi, row, _) in &hits {
            if self.row_is_live(row) {
                counts[qi as usize + 1] += 1;
            }
        }
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        let mut grouped = vec![Match { distance: 0, id: 0 }; counts[queries.len()] as usize];
        for &(qi, row, distance) in &hits {
            if self.row_is_live(row) {
                let at = &mut counts[qi as usize];
                grouped[*at as usize] = Match {
                    distance,
                    id: self.row_ids[row as usize],
                };
                *at += 1;
            }
        }
        drop(hits);
        let mut one = Vec::new();
        let mut start = 0;
        for (qi, &q) in queries.iter().enumerate() {
            let end = counts[qi] as usize;
            let first = out.len();
            out.extend(grouped[start..end].iter().map(|&m| (base + qi, m)));
            start = end;
            self.finish_batch_query(q, base + qi, first, max_distance, out, &mut one, &mut total);
        }
        self.count_capped(&total);
        total
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn batch_avx2(
        &self,
        queries: &[u64],
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
    ) -> QueryStats {
        self.batch_body(queries, max_distance, out)
    }

    #[inline(always)]
    fn batch_body(
        &self,
        queries: &[u64],
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
    ) -> QueryStats {
        // Large enough that a stage's misses (GROUP * tables directory lines, then two to
        // three run lines each) keep the memory system busy, small enough that the lines
        // prefetched in one stage are still in L1/L2 when the next stage reads them.
        const GROUP: usize = 32;
        out.clear();
        let tables = self.tables.len();
        let mut total = QueryStats::default();
        let mut runs = vec![(0usize, 0usize, 0u64); GROUP * tables];
        // A verified hit waiting for its id: (query in group, table, position, distance).
        let mut pending: Vec<(u32, u32, u32, u32)> = Vec::new();
        let mut rows: Vec<u32> = Vec::new();
        let mut one = Vec::new();
        for (group_no, group) in queries.chunks(GROUP).enumerate() {
            // Five stages over the whole group, each issuing the memory accesses the next
            // one needs: directory lines, run lines, row numbers of the hits, their ids.
            // A query's accesses are a chain of dependent misses; across the group they
            // are independent, so every stage pays one memory latency for all of them.
            for (qi, &q) in group.iter().enumerate() {
                for (t, table) in self.tables.iter().enumerate() {
                    let slot = table.slot(table.key.extract(q));
                    prefetch(&table.dir, slot);
                    runs[qi * tables + t].0 = slot;
                }
            }
            for (qi, &q) in group.iter().enumerate() {
                for (t, table) in self.tables.iter().enumerate() {
                    let run = &mut runs[qi * tables + t];
                    let (start, end, check) = table.locate(run.0, table.key.extract(q));
                    prefetch_run(&table.fps, start, end);
                    *run = (start, end, check);
                }
            }
            pending.clear();
            for (qi, &q) in group.iter().enumerate() {
                for (t, table) in self.tables.iter().enumerate() {
                    let (start, end, check) = runs[qi * tables + t];
                    self.verify_run::<false, _>(
                        q,
                        max_distance,
                        Radii::Exact,
                        t,
                        table,
                        (start, end),
                        (q, check),
                        &mut total,
                        |at, distance| {
                            prefetch(&table.rows, at);
                            pending.push((qi as u32, t as u32, at as u32, distance));
                        },
                    );
                }
            }
            rows.clear();
            for &(_, t, at, _) in &pending {
                let row = self.tables[t as usize].rows[at as usize];
                prefetch(&self.row_ids, row as usize);
                rows.push(row);
            }
            let mut next = pending.iter().zip(&rows).peekable();
            for (qi, &q) in group.iter().enumerate() {
                let at = group_no * GROUP + qi;
                let first = out.len();
                while let Some((&(_, _, _, distance), &row)) =
                    next.next_if(|((pqi, ..), _)| *pqi as usize == qi)
                {
                    if self.row_is_live(row) {
                        out.push((
                            at,
                            Match {
                                distance,
                                id: self.row_ids[row as usize],
                            },
                        ));
                    }
                }
                self.finish_batch_query(q, at, first, max_distance, out, &mut one, &mut total);
            }
        }
        self.count_capped(&total);
        total
    }

    /// Ends query `q` (at position `at`) of a batch whose table matches are `out[first..]`:
    /// adds the insert buffer's matches and puts them all in (distance, id) order.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn finish_batch_query(
        &self,
        q: u64,
        at: usize,
        first: usize,
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
        scratch: &mut Vec<Match>,
        stats: &mut QueryStats,
    ) {
        if self.buffered() > 0 {
            scratch.clear();
            self.scan_buffer(q, max_distance, scratch, stats);
            out.extend(scratch.iter().map(|&m| (at, m)));
        }
        if out.len() - first > 1 {
            out[first..].sort_unstable_by_key(|&(_, m)| m);
        }
    }

    /// Adds the probes `stats` capped to the index's running count.
    fn count_capped(&self, stats: &QueryStats) {
        if stats.capped_probes > 0 {
            self.capped_total
                .fetch_add(stats.capped_probes, Ordering::Relaxed);
        }
    }

    /// Whether a row found in a table is still stored: skips the bitmap read when the
    /// tables hold no removed rows (the common case after a merge or compaction).
    #[inline(always)]
    fn row_is_live(&self, row: u32) -> bool {
        self.tombstones == 0 || is_live(&self.live, row)
    }

    #[inline(always)]
    fn query_body(
        &self,
        q: u64,
        max_distance: u32,
        radii: Radii<'_>,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> QueryStats {
        out.clear();
        let mut stats = QueryStats::default();
        match radii {
            Radii::Exact if self.tables.len() <= EXACT_BATCH => {
                // Exact-key lookups are independent, so they go in three passes over the
                // tables (directory prefetch, directory read and run prefetch, verify):
                // the cache and TLB misses of all tables overlap instead of queueing.
                let mut slots = [0usize; EXACT_BATCH];
                for (slot, table) in slots.iter_mut().zip(self.tables.iter()) {
                    *slot = table.slot(table.key.extract(q));
                    prefetch(&table.dir, *slot);
                }
                let mut runs = [(0usize, 0usize, 0u64); EXACT_BATCH];
                for ((run, table), &slot) in runs.iter_mut().zip(self.tables.iter()).zip(&slots) {
                    *run = table.locate(slot, table.key.extract(q));
                    prefetch_run(&table.fps, run.0, run.1);
                }
                for (t, (table, &(start, end, check))) in self.tables.iter().zip(&runs).enumerate()
                {
                    self.verify_into(
                        q,
                        max_distance,
                        radii,
                        t,
                        table,
                        (start, end),
                        (q, check),
                        out,
                        &mut stats,
                    );
                }
            }
            _ => {
                let mut runs: Vec<(usize, usize, u64, u64)> = Vec::new();
                for (t, table) in self.tables.iter().enumerate() {
                    let Some(radius) = radii.radius(t) else {
                        continue;
                    };
                    let center = table.key.extract(q);
                    if radius == 0 {
                        let (start, end, check) = table.locate(table.slot(center), center);
                        self.verify_into(
                            q,
                            max_distance,
                            radii,
                            t,
                            table,
                            (start, end),
                            (q, check),
                            out,
                            &mut stats,
                        );
                    } else {
                        // Only multi-index tables are probed with a radius; their keys are
                        // single ranges, so a key maps back to a fingerprint by a shift.
                        // The directory (small, cached) is read for the whole ball first;
                        // then each run is prefetched AHEAD probes before it is verified,
                        // so the cache misses of successive probes overlap.
                        const AHEAD: usize = 16;
                        runs.clear();
                        for_each_in_ball(center, table.key.bits, radius, &mut |key| {
                            let (start, end, check) = table.locate(table.slot(key), key);
                            runs.push((start, end, table.probe_for(key), check));
                        });
                        for &(start, ..) in runs.iter().take(AHEAD) {
                            prefetch_pair(&table.fps, start);
                        }
                        for (i, &(start, end, probe, check)) in runs.iter().enumerate() {
                            if let Some(&(ahead, ..)) = runs.get(i + AHEAD) {
                                prefetch_pair(&table.fps, ahead);
                            }
                            self.verify_into(
                                q,
                                max_distance,
                                radii,
                                t,
                                table,
                                (start, end),
                                (probe, check),
                                out,
                                &mut stats,
                            );
                        }
                    }
                }
            }
        }
        self.scan_buffer(q, max_distance, out, &mut stats);
        self.finish(out, stats, limit)
    }

    /// Verifies `start..end` of table `t` (one probe) and calls `found(position,
    /// distance)` for its new hits; entries with `(fp ^ probe) & check != 0` have another
    /// key and are skipped, and so are hits an earlier table also reaches (it reported
    /// them). The caller resolves a hit's row and id, at once or after a prefetch.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn verify_run<const WIDE: bool, F: FnMut(usize, u32)>(
        &self,
        q: u64,
        max_distance: u32,
        radii: Radii<'_>,
        t: usize,
        table: &SortedTable,
        (start, mut end): (usize, usize),
        (probe, check): (u64, u64),
        stats: &mut QueryStats,
        mut found: F,
    ) {
        stats.probes += 1;
        if let Some(cap) = self.candidate_cap {
            if end - start > cap {
                end = start + cap;
                stats.capped_probes += 1;
            }
        }
        stats.candidates += (end - start) as u64;
        let mut hit = |at: usize, distance: u32| {
            let fp = table.fps[start + at];
            if (fp ^ probe) & check != 0 {
                return; // shares the directory slot, not the key
            }
            let diff = fp ^ q;
            let seen = match radii {
                Radii::Exact => self.tables[..t]
                    .iter()
                    .any(|other| diff & other.key.mask == 0),
                Radii::PerTable(radii) => self.tables[..t]
                    .iter()
                    .zip(radii)
                    .any(|(other, r)| r.is_some_and(|r| (diff & other.key.mask).count_ones() <= r)),
            };
            if !seen {
                found(start + at, distance);
            }
        };
        let run = &table.fps[start..end];
        #[cfg(target_arch = "x86_64")]
        if WIDE {
            // SAFETY: `WIDE` is set only where the CPU has AVX-512's vector popcount.
            unsafe { super::linear::scan_wide(run, q, max_distance, &mut hit) };
            return;
        }
        if run.len() <= SHORT_RUN {
            for (at, &fp) in run.iter().enumerate() {
                let distance = (fp ^ q).count_ones();
                if distance <= max_distance {
                    hit(at, distance);
                }
            }
        } else {
            scan(run, q, max_distance, hit);
        }
    }

    /// Verifies one probe and reports its new hits into `out` at once.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn verify_into(
        &self,
        q: u64,
        max_distance: u32,
        radii: Radii<'_>,
        t: usize,
        table: &SortedTable,
        range: (usize, usize),
        key: (u64, u64),
        out: &mut Vec<Match>,
        stats: &mut QueryStats,
    ) {
        self.verify_run::<false, _>(
            q,
            max_distance,
            radii,
            t,
            table,
            range,
            key,
            stats,
            |at, distance| {
                let row = table.rows[at];
                if self.row_is_live(row) {
                    out.push(Match {
                        distance,
                        id: self.row_ids[row as usize],
                    });
                }
            },
        );
    }

    /// Answers by scanning every row (used when probing would cost more than a scan).
    pub(crate) fn query_by_scan(
        &self,
        q: u64,
        max_distance: u32,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> QueryStats {
        out.clear();
        scan(&self.row_fps, q, max_distance, |row, distance| {
            if is_live(&self.live, row as u32) {
                out.push(Match {
                    distance,
                    id: self.row_ids[row],
                });
            }
        });
        let stats = QueryStats {
            probes: 0,
            candidates: self.row_fps.len() as u64,
            capped_probes: 0,
        };
        self.finish(out, stats, limit)
    }

    /// Scans the buffer and a frozen buffer being merged.
    #[inline(always)]
    fn scan_buffer(&self, q: u64, max_distance: u32, out: &mut Vec<Match>, stats: &mut QueryStats) {
        if let Some(p) = &self.pending {
            self.scan_rows(&p.fps, &p.rows, q, max_distance, out, stats);
        }
        self.scan_rows(
            &self.buffer_fps,
            &self.buffer_rows,
            q,
            max_distance,
            out,
            stats,
        );
    }

    #[inline(always)]
    fn scan_rows(
        &self,
        fps: &[u64],
        rows: &[u32],
        q: u64,
        max_distance: u32,
        out: &mut Vec<Match>,
        stats: &mut QueryStats,
    ) {
        if fps.is_empty() {
            return;
        }
        stats.candidates += fps.len() as u64;
        scan(fps, q, max_distance, |at, distance| {
            out.push(Match {
                distance,
                id: self.row_ids[rows[at] as usize],
            });
        });
    }

    /// Fingerprints waiting in buffers (the live one and a frozen one being merged).
    fn buffered(&self) -> usize {
        self.buffer_fps.len() + self.pending.as_ref().map_or(0, |p| p.fps.len())
    }

    #[inline(always)]
    fn finish(&self, out: &mut Vec<Match>, stats: QueryStats, limit: usize) -> QueryStats {
        self.count_capped(&stats);
        sort_matches(out, limit);
        stats
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

/// Implements the [`HammingIndex`](super::HammingIndex) methods that only forward to the
/// `tables: TableSet` field; the wrapper writes `query_into`, `max_supported_distance`
/// and `stats` itself (and `query_batch` where its probes are exact keys).
macro_rules! forward_to_tables {
    () => {
        fn insert(&mut self, id: u64, fingerprint: u64) -> Result<(), IndexError> {
            self.tables.insert(id, fingerprint)
        }

        fn replace(&mut self, id: u64, fingerprint: u64) -> Result<Option<u64>, IndexError> {
            self.tables.replace(id, fingerprint)
        }

        fn remove(&mut self, id: u64) -> Option<u64> {
            self.tables.remove(id)
        }

        fn get(&self, id: u64) -> Option<u64> {
            self.tables.get(id)
        }

        fn len(&self) -> usize {
            self.tables.len()
        }

        fn memory_bytes(&self) -> usize {
            self.tables.memory_bytes()
        }

        fn compact(&mut self) {
            self.tables.compact()
        }

        fn settle(&mut self) {
            self.tables.poll_merge()
        }
    };
}
pub(crate) use forward_to_tables;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_gathers_ranges_most_significant_first() {
        let key = KeySpec::new(&[(60, 4), (0, 4)]).expect("valid ranges");
        assert_eq!(key.extract(0xA000_0000_0000_0005), 0xA5);
        assert_eq!(key.bits(), 8);
        assert_eq!(key.mask(), 0xF000_0000_0000_000F);
        let whole = KeySpec::new(&[(0, 64)]).expect("valid range");
        assert_eq!(whole.extract(u64::MAX - 1), u64::MAX - 1);
    }

    #[test]
    fn overlapping_ranges_are_rejected() {
        assert!(KeySpec::new(&[(0, 8), (4, 8)]).is_err());
        assert!(KeySpec::new(&[(60, 8)]).is_err());
    }

    #[test]
    fn ball_enumeration_matches_its_size() {
        for (bits, radius) in [(8, 0), (8, 2), (12, 3), (5, 5)] {
            let mut seen = Vec::new();
            for_each_in_ball(0b1010, bits, radius, &mut |v| seen.push(v));
            assert_eq!(seen.len() as f64, ball_size(bits, radius));
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len() as f64, ball_size(bits, radius));
            assert!(seen
                .iter()
                .all(|v| (v ^ 0b1010).count_ones() <= radius && *v >> bits == 0));
        }
    }

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
            for (row, &fp) in fps.iter().enumerate() {
                let (s, e) = merged.run(key.extract(fp), fp);
                let mut got: Vec<(u64, u32)> = merged.fps[s..e]
                    .iter()
                    .copied()
                    .zip(merged.rows[s..e].iter().copied())
                    .collect();
                let (fs, fe) = fresh.run(key.extract(fp), fp);
                let mut want: Vec<(u64, u32)> = fresh.fps[fs..fe]
                    .iter()
                    .copied()
                    .zip(fresh.rows[fs..fe].iter().copied())
                    .collect();
                got.sort_unstable();
                want.sort_unstable();
                assert_eq!(got, want);
                assert!(got.contains(&(fp, row as u32)));
            }
        }
    }

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
