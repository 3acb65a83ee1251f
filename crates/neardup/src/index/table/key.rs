//! Table keys: which bits of a fingerprint a table orders by, and the keys within a radius.

use super::super::IndexError;

/// The most contiguous bit ranges one key may gather.
const MAX_RANGES: usize = 24;

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
    #[inline(always)]
    pub(crate) fn bits(&self) -> u32 {
        self.bits
    }

    /// The key's bits, in fingerprint bit positions.
    #[inline(always)]
    pub(crate) fn mask(&self) -> u64 {
        self.mask
    }

    /// A fingerprint whose key is `key` (its other bits zero), for a single-range key: a
    /// multi-index radius probe filters the entries of a shared directory slot with it.
    #[inline(always)]
    pub(crate) fn fingerprint_of(&self, key: u64) -> u64 {
        debug_assert_eq!(self.count, 1, "radius probes need a single-range key");
        key << self.ranges[0].0
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
/// short. The tables build with it and the planner costs their memory with it.
pub(crate) fn directory_bits(key_bits: u32, len: usize) -> u32 {
    let log = usize::BITS - len.leading_zeros();
    key_bits.min(log.saturating_sub(2).clamp(4, 30))
}

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
}
