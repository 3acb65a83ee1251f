//! The SimHash vote: for each of 64 bit positions, the signed sum of the feature weights.
//!
//! This is the hot loop of fingerprinting, hand-written because it is the product's core.
//! With unit weights (term frequency over occurrences, the default) the vote on bit b is
//! `2 * ones[b] - n`, so it suffices to count set bits per position; [`count_ones`] does that
//! with 8-bit lane counters, 64 at a time in two AVX2 registers (about ten instructions per
//! feature), flushed to 32-bit totals every 255 features. Weighted votes use
//! [`WeightedVote`], a plain loop the compiler vectorises.

/// Per-bit set counts over a number of 64-bit feature hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BitCounts {
    /// `ones[b]`: how many hashes have bit b set.
    pub ones: [u32; 64],
    /// How many hashes were counted.
    pub n: u64,
}

impl Default for BitCounts {
    fn default() -> Self {
        BitCounts {
            ones: [0; 64],
            n: 0,
        }
    }
}

impl BitCounts {
    /// The SimHash bits of unit-weight votes: bit b is 1 when more than half the hashes set it.
    pub fn majority(&self) -> u64 {
        let mut fp = 0u64;
        for (b, &o) in self.ones.iter().enumerate() {
            fp |= u64::from(2 * u64::from(o) > self.n) << b;
        }
        fp
    }
}

/// Adds the per-bit counts of `hashes` to `counts`.
pub(crate) fn count_ones(hashes: &[u64], counts: &mut BitCounts) {
    counts.n += hashes.len() as u64;
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 support was just detected.
            unsafe { count_ones_avx2(hashes, &mut counts.ones) };
            return;
        }
    }
    count_ones_swar(hashes, &mut counts.ones);
}

/// Portable fallback: eight 8-bit counters per u64 word (SWAR).
///
/// Multiplying a byte by 0x8040201008040201 places bit (7 - j) of the byte at the top of
/// byte j with no carries between the shifted copies; masking and shifting leaves 0 or 1 in
/// each byte lane.
fn count_ones_swar(hashes: &[u64], ones: &mut [u32; 64]) {
    const SPREAD: u64 = 0x8040_2010_0804_0201;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    for chunk in hashes.chunks(255) {
        let mut lanes = [0u64; 8];
        for &h in chunk {
            for (k, lane) in lanes.iter_mut().enumerate() {
                let byte = (h >> (8 * k)) & 0xff;
                *lane += (byte.wrapping_mul(SPREAD) & HIGH) >> 7;
            }
        }
        for (k, lane) in lanes.iter().enumerate() {
            for j in 0..8 {
                ones[8 * k + 7 - j] += ((lane >> (8 * j)) & 0xff) as u32;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_ones_avx2(hashes: &[u64], ones: &mut [u32; 64]) {
    use std::arch::x86_64::*;
    // Byte i of the low register tests bit i of the hash, byte i of the high one bit 32 + i.
    // Each 128-bit lane of the broadcast hash holds its 8 bytes at 0..8 and again at 8..16,
    // so in-lane shuffles can pick any source byte.
    let shuffle_lo = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3,
        3, 3,
    );
    let shuffle_hi = _mm256_setr_epi8(
        4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7,
        7, 7,
    );
    let bit_of_byte = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    for chunk in hashes.chunks(255) {
        let mut lo = _mm256_setzero_si256();
        let mut hi = _mm256_setzero_si256();
        for &h in chunk {
            let v = _mm256_set1_epi64x(h as i64);
            let blo = _mm256_and_si256(_mm256_shuffle_epi8(v, shuffle_lo), bit_of_byte);
            let bhi = _mm256_and_si256(_mm256_shuffle_epi8(v, shuffle_hi), bit_of_byte);
            // cmpeq gives -1 where the bit is set; subtracting -1 counts it.
            lo = _mm256_sub_epi8(lo, _mm256_cmpeq_epi8(blo, bit_of_byte));
            hi = _mm256_sub_epi8(hi, _mm256_cmpeq_epi8(bhi, bit_of_byte));
        }
        let mut bytes = [0u8; 64];
        _mm256_storeu_si256(bytes.as_mut_ptr().cast(), lo);
        _mm256_storeu_si256(bytes.as_mut_ptr().add(32).cast(), hi);
        for (o, &b) in ones.iter_mut().zip(bytes.iter()) {
            *o += u32::from(b);
        }
    }
}

/// Signed per-bit vote totals for weighted features.
#[derive(Debug, Clone)]
pub(crate) struct WeightedVote {
    sums: [i64; 64],
}

impl Default for WeightedVote {
    fn default() -> Self {
        WeightedVote { sums: [0; 64] }
    }
}

impl WeightedVote {
    /// Adds `weight` at every bit set in `hash` and subtracts it at every clear bit.
    #[inline]
    pub fn add(&mut self, hash: u64, weight: i64) {
        for (b, s) in self.sums.iter_mut().enumerate() {
            let bit = ((hash >> b) & 1) as i64;
            *s += (2 * bit - 1) * weight;
        }
    }

    /// Adds unit-weight counts scaled by `weight`: the same as calling `add(h, weight)` for
    /// every hash counted in `counts`, but at the cost of the fast counting kernel.
    pub fn add_counts(&mut self, counts: &BitCounts, weight: i64) {
        let n = counts.n as i64;
        for (s, &o) in self.sums.iter_mut().zip(counts.ones.iter()) {
            *s += weight * (2 * i64::from(o) - n);
        }
    }

    /// The SimHash bits: bit b is 1 when its total is positive.
    pub fn bits(&self) -> u64 {
        let mut fp = 0u64;
        for (b, &s) in self.sums.iter().enumerate() {
            fp |= u64::from(s > 0) << b;
        }
        fp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(hashes: &[u64]) -> [u32; 64] {
        let mut ones = [0u32; 64];
        for h in hashes {
            for (b, o) in ones.iter_mut().enumerate() {
                *o += ((h >> b) & 1) as u32;
            }
        }
        ones
    }

    fn sample(n: usize) -> Vec<u64> {
        (0..n as u64)
            .map(|i| crate::text::shingle::fmix64(i ^ 0xabcdef))
            .collect()
    }

    #[test]
    fn kernels_agree_with_naive_count() {
        for n in [0, 1, 7, 254, 255, 256, 1000] {
            let hs = sample(n);
            let mut c = BitCounts::default();
            count_ones(&hs, &mut c);
            assert_eq!(c.ones, naive(&hs), "dispatch, n = {n}");
            assert_eq!(c.n, n as u64);
            let mut swar = [0u32; 64];
            count_ones_swar(&hs, &mut swar);
            assert_eq!(swar, naive(&hs), "swar, n = {n}");
        }
    }

    #[test]
    fn weighted_vote_of_counts_equals_individual_votes() {
        let hs = sample(300);
        let mut c = BitCounts::default();
        count_ones(&hs, &mut c);
        let (mut a, mut b) = (WeightedVote::default(), WeightedVote::default());
        a.add_counts(&c, 3);
        for &h in &hs {
            b.add(h, 3);
        }
        assert_eq!(a.sums, b.sums);
        assert_eq!(a.bits(), c.majority());
    }
}
