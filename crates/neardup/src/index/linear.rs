//! Brute-force XOR-popcount scan: the oracle for tests and the baseline for benches.
//!
//! Why no crate: the scan is twenty lines, and owning it lets the table indexes reuse the
//! same vectorised kernel for their insert buffers and long runs.

use std::collections::HashMap;

use super::{sort_matches, HammingIndex, IndexError, IndexStats, Match, QueryStats};

/// Calls `hit(position, distance)` for every `fps[position]` within `max_distance` of
/// `query`, in position order.
///
/// The loop works on blocks of 16 fingerprints and first builds a bit mask of the hits, so
/// the distance computation has no branch and LLVM vectorises it (with AVX2 the popcount
/// becomes a nibble lookup, four lanes at a time); the rare hits are then walked from the
/// mask. On x86-64 the kernel is picked at run time: AVX-512 with its vector popcount
/// (`scan_wide`) where the CPU has it, else an AVX2 copy (the default target has neither
/// AVX2 nor even the `popcnt` instruction).
#[inline]
pub fn scan<F: FnMut(usize, u32)>(fps: &[u64], query: u64, max_distance: u32, mut hit: F) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_wide_popcount() {
            // SAFETY: the CPU supports the features `scan_wide` is compiled for.
            unsafe { scan_wide(fps, query, max_distance, &mut hit) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU supports the features `scan_avx2` is compiled for.
            unsafe { scan_avx2(fps, query, max_distance, &mut hit) };
            return;
        }
    }
    scan_portable(fps, query, max_distance, &mut hit);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn scan_avx2<F: FnMut(usize, u32)>(fps: &[u64], query: u64, max_distance: u32, hit: &mut F) {
    scan_portable(fps, query, max_distance, hit);
}

/// Whether the CPU has AVX-512 with the vector popcount (`vpopcntq`): eight distances per
/// instruction, and masked loads that verify a run of any length without a scalar tail.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_wide_popcount() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
}

/// [`scan`] with AVX-512: eight fingerprints per step (XOR, `vpopcntq`, compare into a
/// mask), the last step a masked load, so a slice of any length costs `len / 8` steps
/// with no scalar tail. [`scan`] picks it at run time.
///
/// # Safety
/// The CPU must support `avx512f` and `avx512vpopcntdq` ([`has_wide_popcount`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[inline]
pub(crate) unsafe fn scan_wide<F: FnMut(usize, u32)>(
    fps: &[u64],
    query: u64,
    max_distance: u32,
    hit: &mut F,
) {
    use std::arch::x86_64::{
        __mmask8, _mm512_mask_cmple_epu64_mask, _mm512_maskz_loadu_epi64, _mm512_popcnt_epi64,
        _mm512_set1_epi64, _mm512_xor_si512,
    };
    let q = _mm512_set1_epi64(query as i64);
    let k = _mm512_set1_epi64(i64::from(max_distance));
    let mut at = 0;
    while at < fps.len() {
        let left = fps.len() - at;
        let lanes: __mmask8 = if left >= 8 { 0xFF } else { (1u8 << left) - 1 };
        // SAFETY: the mask enables only lanes inside `fps` (masked-off lanes are not read
        // and cannot fault).
        let v = unsafe { _mm512_maskz_loadu_epi64(lanes, fps.as_ptr().add(at).cast()) };
        let distance = _mm512_popcnt_epi64(_mm512_xor_si512(v, q));
        let mut found = _mm512_mask_cmple_epu64_mask(lanes, distance, k);
        while found != 0 {
            let lane = found.trailing_zeros() as usize;
            hit(at + lane, (fps[at + lane] ^ query).count_ones());
            found &= found - 1;
        }
        at += 8;
    }
}

#[inline(always)]
fn scan_portable<F: FnMut(usize, u32)>(fps: &[u64], query: u64, max_distance: u32, hit: &mut F) {
    const LANES: usize = 16;
    let mut blocks = fps.chunks_exact(LANES);
    let mut base = 0;
    for block in &mut blocks {
        let mut mask = 0u32;
        for (lane, &fp) in block.iter().enumerate() {
            mask |= u32::from((fp ^ query).count_ones() <= max_distance) << lane;
        }
        while mask != 0 {
            let lane = mask.trailing_zeros() as usize;
            hit(base + lane, (block[lane] ^ query).count_ones());
            mask &= mask - 1;
        }
        base += LANES;
    }
    for (lane, &fp) in blocks.remainder().iter().enumerate() {
        let distance = (fp ^ query).count_ones();
        if distance <= max_distance {
            hit(base + lane, distance);
        }
    }
}

/// Every fingerprint in one contiguous array, scanned in full by each query.
///
/// Exact for every `max_distance` (0 to 64). Memory: 16 bytes per fingerprint (the
/// fingerprint and its id in two parallel arrays, so the scan reads only fingerprints)
/// plus an id-to-position map. Removal swaps the last entry into the hole, so the data
/// of a removed id is gone at once.
///
/// ```
/// use neardup::index::{HammingIndex, LinearIndex, Match};
/// let mut index = LinearIndex::new();
/// index.insert(47, 0b1011)?;
/// index.insert(83, 0b0100)?;
/// assert_eq!(index.query(0b1001, 1)?, vec![Match { distance: 1, id: 47 }]);
/// Ok::<(), neardup::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct LinearIndex {
    fps: Vec<u64>,
    ids: Vec<u64>,
    position: HashMap<u64, usize>,
}

impl LinearIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty index with room for `capacity` fingerprints.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            fps: Vec::with_capacity(capacity),
            ids: Vec::with_capacity(capacity),
            position: HashMap::with_capacity(capacity),
        }
    }

    /// The stored fingerprints, in storage order (parallel to [`LinearIndex::ids`]).
    pub fn fingerprints(&self) -> &[u64] {
        &self.fps
    }

    /// The stored ids, in storage order (parallel to [`LinearIndex::fingerprints`]).
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }
}

impl HammingIndex for LinearIndex {
    fn insert(&mut self, id: u64, fingerprint: u64) -> Result<(), IndexError> {
        if self.position.contains_key(&id) {
            return Err(IndexError::DuplicateId { id });
        }
        self.position.insert(id, self.fps.len());
        self.fps.push(fingerprint);
        self.ids.push(id);
        Ok(())
    }

    fn replace(&mut self, id: u64, fingerprint: u64) -> Result<Option<u64>, IndexError> {
        match self.position.get(&id) {
            Some(&at) => Ok(Some(std::mem::replace(&mut self.fps[at], fingerprint))),
            None => self.insert(id, fingerprint).map(|()| None),
        }
    }

    fn remove(&mut self, id: u64) -> Option<u64> {
        let at = self.position.remove(&id)?;
        let fingerprint = self.fps.swap_remove(at);
        self.ids.swap_remove(at);
        if let Some(&moved) = self.ids.get(at) {
            self.position.insert(moved, at);
        }
        Some(fingerprint)
    }

    fn get(&self, id: u64) -> Option<u64> {
        self.position.get(&id).map(|&at| self.fps[at])
    }

    fn query_nearest_into(
        &self,
        fingerprint: u64,
        max_distance: u32,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> Result<QueryStats, IndexError> {
        out.clear();
        scan(&self.fps, fingerprint, max_distance, |at, distance| {
            out.push(Match {
                distance,
                id: self.ids[at],
            });
        });
        sort_matches(out, limit);
        Ok(QueryStats {
            probes: 0,
            candidates: self.fps.len() as u64,
            capped_probes: 0,
        })
    }

    fn max_supported_distance(&self) -> u32 {
        64
    }

    fn len(&self) -> usize {
        self.fps.len()
    }

    fn memory_bytes(&self) -> usize {
        self.fps.capacity() * 8 + self.ids.capacity() * 8 + hash_map_bytes(&self.position)
    }

    fn compact(&mut self) {
        self.fps.shrink_to_fit();
        self.ids.shrink_to_fit();
    }

    fn stats(&self) -> IndexStats {
        IndexStats {
            len: self.len(),
            tables: 0,
            largest_bucket: self.len(),
            buffered: 0,
            tombstones: 0,
            capped_probes: 0,
            memory_bytes: self.memory_bytes(),
            layout: "linear scan".to_owned(),
        }
    }
}

/// Approximate heap bytes of a `HashMap` (std's SwissTable: one control byte per slot).
pub(crate) fn hash_map_bytes<K, V>(map: &HashMap<K, V>) -> usize {
    map.capacity() * (std::mem::size_of::<(K, V)>() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_hits_in_blocks_and_remainder() {
        let fps: Vec<u64> = (0..37u64)
            .map(|i| if i % 5 == 0 { 0xff } else { !0 })
            .collect();
        let mut hits = Vec::new();
        scan(&fps, 0xfe, 1, |at, d| hits.push((at, d)));
        let expected: Vec<(usize, u32)> = (0..37).filter(|i| i % 5 == 0).map(|i| (i, 1)).collect();
        assert_eq!(hits, expected);
    }

    /// Every kernel this CPU runs agrees with the portable one, for every length (full
    /// steps, masked tails) and radius.
    #[test]
    fn kernels_agree_on_every_length_and_radius() {
        let mut state = 7u64;
        let fps: Vec<u64> = (0..70)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Mostly near the query 0, some far.
                if state >> 60 < 12 {
                    (1u64 << (state % 64)) | (1u64 << ((state >> 8) % 64)) | (state >> 62)
                } else {
                    state
                }
            })
            .collect();
        for len in 0..fps.len() {
            for k in [0, 1, 2, 3, 10, 64] {
                let mut want = Vec::new();
                scan_portable(&fps[..len], 0, k, &mut |at, d| want.push((at, d)));
                let mut got = Vec::new();
                scan(&fps[..len], 0, k, |at, d| got.push((at, d)));
                assert_eq!(got, want, "len {len}, k {k}");
                #[cfg(target_arch = "x86_64")]
                if has_wide_popcount() {
                    let mut wide = Vec::new();
                    // SAFETY: the CPU supports the kernel's features (checked above).
                    unsafe { scan_wide(&fps[..len], 0, k, &mut |at, d| wide.push((at, d))) };
                    assert_eq!(wide, want, "len {len}, k {k}");
                }
            }
        }
    }

    #[test]
    fn duplicate_id_is_rejected_and_replace_overwrites() {
        let mut index = LinearIndex::new();
        index.insert(1, 10).expect("fresh id");
        assert_eq!(index.insert(1, 11), Err(IndexError::DuplicateId { id: 1 }));
        assert_eq!(index.replace(1, 12), Ok(Some(10)));
        assert_eq!(index.get(1), Some(12));
    }

    #[test]
    fn remove_swaps_and_keeps_positions_right() {
        let mut index = LinearIndex::new();
        for id in 0..5 {
            index.insert(id, id * 3).expect("fresh id");
        }
        assert_eq!(index.remove(1), Some(3));
        assert_eq!(index.remove(1), None);
        assert_eq!(index.get(4), Some(12));
        assert_eq!(index.remove(4), Some(12));
        assert_eq!(index.len(), 3);
        assert_eq!(
            index.query(6, 0).expect("linear answers every radius"),
            vec![Match { distance: 0, id: 2 }]
        );
    }
}
