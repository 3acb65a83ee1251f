//! Fixed-seed generators, so that failures and measurements reproduce: included by
//! `#[path]` in the index tests (`src/index/tests.rs`), the index bench and examples.
#![allow(dead_code)]

/// splitmix64: the next value of the sequence `state` is at.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Flips `flips` distinct random bits of `fp`.
pub fn flip_bits(fp: u64, flips: u32, state: &mut u64) -> u64 {
    let mut mask = 0u64;
    while mask.count_ones() < flips {
        mask |= 1 << (splitmix(state) % 64);
    }
    fp ^ mask
}

/// xorshift64, the generator of the CJK and short-text evaluations (kept, so that their
/// numbers stay comparable); the seed must not be 0.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next value.
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}
