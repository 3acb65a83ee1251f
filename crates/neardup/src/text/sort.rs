//! Sorting shingle hashes: a bucket sort for uniformly distributed 64-bit and 32-bit keys.
//!
//! Every record's shingle set is sorted (verification compares sorted sets of 32-bit ids,
//! boilerplate learning merges sorted counts of 64-bit hashes), and that sort was a tenth of the pipeline's CPU with
//! `sort_unstable`. Shingle hashes are uniform, so a counting pass on their top bits into
//! about two buckets per key leaves them nearly sorted, and one insertion pass finishes:
//! about twice as fast as pattern-defeating quicksort from a few hundred keys to a hundred
//! thousand (measured on this project's bench machine). Hand-written because the radix sort
//! crates sort by all eight bytes (`radsort` measured no faster than `sort_unstable` at
//! these sizes). Keys that are not uniform cannot make it quadratic: the insertion pass has
//! a budget of moves, past which the slice is sorted by `sort_unstable`.

/// A key [`sort_hashes`] sorts: an unsigned integer whose top bits are about uniform.
pub trait SortKey: Copy + Ord + Default {
    /// Bits in the key.
    const BITS: u32;
    /// The key's bits `[BITS - skip - bits, BITS - skip)` as an index (`skip + bits <= BITS`).
    fn bits_below(self, skip: u32, bits: u32) -> usize;
}

impl SortKey for u64 {
    const BITS: u32 = 64;
    #[inline(always)]
    fn bits_below(self, skip: u32, bits: u32) -> usize {
        ((self << skip) >> (64 - bits)) as usize
    }
}

impl SortKey for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn bits_below(self, skip: u32, bits: u32) -> usize {
        ((self << skip) >> (32 - bits)) as usize
    }
}

/// Reusable buffers for [`sort_hashes`].
#[derive(Debug, Default, Clone)]
pub struct SortBuffers<K = u64> {
    keys: Vec<K>,
    counts: Vec<u32>,
}

impl<K> SortBuffers<K> {
    /// Frees the buffers grown past `bytes`.
    pub(crate) fn release_large(&mut self, bytes: usize) {
        if self.keys.capacity() * std::mem::size_of::<K>() > bytes {
            self.keys = Vec::new();
        }
        if self.counts.capacity() * 4 > bytes {
            self.counts = Vec::new();
        }
    }
}

/// Below this many keys `sort_unstable` is as fast.
const SMALL: usize = 64;

/// Above this many keys a first pass splits them by their top byte, so each part's buckets
/// stay in cache.
const SPLIT: usize = 1 << 16;

/// Sorts `v` (shingle hashes or ids, or any keys whose top bits are about uniform) ascending.
pub fn sort_hashes<K: SortKey>(v: &mut [K], buffers: &mut SortBuffers<K>) {
    let n = v.len();
    // Bucket counts are 32-bit.
    if n <= SMALL || n >= u32::MAX as usize {
        v.sort_unstable();
        return;
    }
    let SortBuffers { keys, counts } = buffers;
    keys.clear();
    keys.resize(n, K::default());
    if n <= SPLIT {
        bucket_sort(v, keys, 0, counts);
        v.copy_from_slice(keys);
        return;
    }
    // By the top byte into `keys`, then each part bucket-sorted back into `v`.
    let mut starts = [0usize; 257];
    for &h in v.iter() {
        starts[h.bits_below(0, 8) + 1] += 1;
    }
    for i in 1..257 {
        starts[i] += starts[i - 1];
    }
    let mut next = starts;
    for &h in v.iter() {
        let b = h.bits_below(0, 8);
        keys[next[b]] = h;
        next[b] += 1;
    }
    for b in 0..256 {
        let part = starts[b]..starts[b + 1];
        if part.len() <= SMALL {
            v[part.clone()].copy_from_slice(&keys[part.clone()]);
            v[part].sort_unstable();
        } else {
            bucket_sort(&keys[part.clone()], &mut v[part], 8, counts);
        }
    }
}

/// Sorts `v` (as [`sort_hashes`]) and drops repeats: a set of shingle hashes.
pub fn sort_distinct<K: SortKey>(v: &mut Vec<K>, buffers: &mut SortBuffers<K>) {
    sort_hashes(v, buffers);
    v.dedup();
}

/// Sorts `v` (as [`sort_hashes`]) and drops repeats, noting them in `repeats`:
/// `(i, extra)` for each value that occurred `1 + extra` times, where `i` is its place in
/// the distinct result, in order of `i`.
pub fn sort_distinct_counted<K: SortKey>(
    v: &mut Vec<K>,
    repeats: &mut Vec<(u32, u32)>,
    buffers: &mut SortBuffers<K>,
) {
    sort_hashes(v, buffers);
    repeats.clear();
    let mut kept = 0usize;
    for read in 0..v.len() {
        let x = v[read];
        if kept > 0 && v[kept - 1] == x {
            let at = (kept - 1) as u32;
            match repeats.last_mut() {
                Some((i, extra)) if *i == at => *extra += 1,
                _ => repeats.push((at, 1)),
            }
        } else {
            v[kept] = x;
            kept += 1;
        }
    }
    v.truncate(kept);
}

/// An open-addressing table of 64-bit values (shingle hashes: about uniform), kept between
/// calls, for making sets without sorting them.
#[derive(Debug, Default, Clone)]
pub struct DistinctTable {
    /// Values in their slots; 0 marks an empty slot, so the value 0 is tracked apart.
    pub(crate) values: Vec<u64>,
}

impl DistinctTable {
    /// Empties the table for about `n` values: a third full at most.
    fn reset(&mut self, n: usize) -> (u32, usize) {
        let bits = (usize::BITS - (n * 3).max(16).leading_zeros()).min(40);
        self.values.clear();
        self.values.resize(1 << bits, 0);
        (bits, (1usize << bits) - 1)
    }

    /// The slot of `h` (not 0): where it is, or the empty one where it goes.
    #[inline(always)]
    fn slot(&self, h: u64, bits: u32, mask: usize) -> usize {
        let mut i = (h >> (64 - bits)) as usize;
        loop {
            let v = self.values[i];
            if v == h || v == 0 {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Appends the distinct values of `src` to `out`, each once, in their order of first
    /// appearance.
    pub fn distinct(&mut self, src: &[u64], out: &mut Vec<u64>) {
        let (bits, mask) = self.reset(src.len());
        out.reserve(src.len());
        let mut zero = false;
        for &h in src {
            if h == 0 {
                if !zero {
                    zero = true;
                    out.push(0);
                }
                continue;
            }
            let i = self.slot(h, bits, mask);
            if self.values[i] == 0 {
                self.values[i] = h;
                out.push(h);
            }
        }
    }

    /// Frees buffers grown past `bytes`.
    pub(crate) fn release_large(&mut self, bytes: usize) {
        if self.values.capacity() * 8 > bytes {
            self.values = Vec::new();
        }
    }
}

/// Writes `src` sorted into `dst` (same length): counts on the bits below the top `skip`
/// into at least one bucket per key, scatters, then one insertion pass.
fn bucket_sort<K: SortKey>(src: &[K], dst: &mut [K], skip: u32, counts: &mut Vec<u32>) {
    let n = src.len();
    debug_assert_eq!(n, dst.len());
    // Two buckets per key or more: with one, a third of the keys shared theirs and the
    // insertion pass's branch went wrong on each (the sort of 2,000 sets of 300-3,300 random
    // keys took 34 ms against 26.5 with two, for 32-bit keys; 37.5 against 29.3 for 64-bit;
    // four were slower again).
    let bits = (usize::BITS - n.leading_zeros() + 1)
        .min(20)
        .min(K::BITS - skip);
    let bucket = |h: K| h.bits_below(skip, bits);
    counts.clear();
    counts.resize(1 << bits, 0);
    for &h in src {
        counts[bucket(h)] += 1;
    }
    let mut sum = 0u32;
    for c in counts.iter_mut() {
        let here = *c;
        *c = sum;
        sum += here;
    }
    for &h in src {
        let b = bucket(h);
        dst[counts[b] as usize] = h;
        counts[b] += 1;
    }
    // Keys are in order up to their top bits: each moves past the few keys of its own
    // bucket. A skewed input moves more; past the budget, sort what is left the slow way.
    let mut budget = 8 * n;
    for i in 1..n {
        let x = dst[i];
        if dst[i - 1] <= x {
            continue;
        }
        let mut j = i;
        while j > 0 && dst[j - 1] > x {
            dst[j] = dst[j - 1];
            j -= 1;
        }
        dst[j] = x;
        budget = budget.saturating_sub(i - j);
        if budget == 0 {
            dst.sort_unstable();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(mut v: Vec<u64>) {
        // The same keys' high halves as 32-bit keys, through the same code.
        let mut halves: Vec<u32> = v.iter().map(|&h| (h >> 32) as u32).collect();
        let mut want_halves = halves.clone();
        want_halves.sort_unstable();
        sort_hashes(&mut halves, &mut SortBuffers::default());
        assert_eq!(halves, want_halves);
        let mut want = v.clone();
        want.sort_unstable();
        sort_hashes(&mut v, &mut SortBuffers::default());
        assert_eq!(v, want);
    }

    fn uniform(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                crate::text::shingle::fmix64(x)
            })
            .collect()
    }

    #[test]
    fn sorts_uniform_keys_of_every_size_path() {
        for n in [0, 1, 2, 63, 64, 65, 1000, SPLIT, SPLIT + 1, 300_000] {
            check(uniform(n, n as u64));
        }
    }

    #[test]
    fn sorts_skewed_keys_without_the_bucket_spread() {
        // All keys share their top 40 bits: one bucket holds everything, and the insertion
        // pass runs out of budget (it would be quadratic) and falls back.
        let low: Vec<u64> = uniform(50_000, 7).iter().map(|h| h & 0xFF_FFFF).collect();
        check(low.clone());
        check(low.iter().map(|h| h | 0xABCD_EF00_0000_0000).collect());
        // Many copies of few keys, and runs already in order or reversed.
        check((0..100_000u64).map(|i| uniform(8, i % 8)[0]).collect());
        check((0..100_000u64).collect());
        check((0..100_000u64).rev().map(|i| i << 40).collect());
    }

    /// Skewed values (all in one slot's run, 0 among them) and uniform ones, repeated one to
    /// three times.
    fn skewed_and_uniform() -> impl Strategy<Value = Vec<u64>> {
        let skewed = prop::sample::select(vec![0u64, 1, u64::MAX, 1 << 63, 42]);
        (
            prop::collection::vec(skewed, 0..50),
            prop::collection::vec(any::<u64>(), 0..2000),
            1usize..4,
        )
            .prop_map(|(v, w, repeat)| {
                let n = (v.len() + w.len()) * repeat;
                v.iter().chain(&w).copied().cycle().take(n).collect()
            })
    }

    proptest! {
        #[test]
        fn distinct_table_keeps_each_value_once_in_first_order(src in skewed_and_uniform()) {
            // Stale contents must not matter.
            let mut table = DistinctTable { values: vec![7u64; 3] };
            let mut out = vec![99];
            table.distinct(&src, &mut out);
            let mut seen = std::collections::HashSet::new();
            let firsts: Vec<u64> = src.iter().copied().filter(|h| seen.insert(*h)).collect();
            let want: Vec<u64> = std::iter::once(99).chain(firsts.iter().copied()).collect();
            prop_assert_eq!(out, want);
        }

        #[test]
        fn sort_distinct_counted_keeps_each_value_once_in_order_and_counts_repeats(
            src in skewed_and_uniform(),
        ) {
            let mut want = src.clone();
            want.sort_unstable();
            want.dedup();
            let want_repeats: Vec<(u32, u32)> = want
                .iter()
                .enumerate()
                .map(|(i, h)| (i as u32, src.iter().filter(|&x| x == h).count() as u32 - 1))
                .filter(|&(_, e)| e > 0)
                .collect();
            let (mut got, mut repeats) = (src, vec![(5, 5)]);
            sort_distinct_counted(&mut got, &mut repeats, &mut SortBuffers::default());
            prop_assert_eq!(got, want);
            prop_assert_eq!(repeats, want_repeats);
        }

        #[test]
        fn sorts_like_sort_unstable(
            v in prop::collection::vec(any::<u64>(), 0..3000),
            top in prop::option::of(any::<u16>()),
        ) {
            // Some inputs share their top 16 bits, so buckets are skewed.
            let v = match top {
                Some(t) => v.iter().map(|h| (h >> 16) | (u64::from(t) << 48)).collect(),
                None => v,
            };
            check(v);
        }
    }
}
