//! Synthetic texts shared by the library's unit tests (`src/pipeline/tests.rs`) and its
//! integration tests: `doc(seed, words)` is the same text wherever it is made.

/// MurmurHash3's 64-bit finaliser (the crate's own, repeated: integration tests cannot
/// reach it).
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// `words` pseudo-random words (`w0` to `w19999`), a text of its own for each `seed`.
pub fn doc(seed: u64, words: usize) -> String {
    let mut s = seed;
    (0..words)
        .map(|_| {
            s = fmix64(s.wrapping_add(0x9e37_79b9_7f4a_7c15));
            format!("w{}", s % 20_000)
        })
        .collect::<Vec<_>>()
        .join(" ")
}
