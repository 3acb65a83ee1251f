//! Token hashing and w-token shingles, hashed by combining token hashes.
//!
//! Each token is hashed once (xxh3, fixed seed); a shingle's hash combines the hashes of its
//! w tokens with a multiply-rotate chain and a full-avalanche finaliser, so no string is built
//! per shingle. Every output bit is a SimHash vote, so the finaliser matters: the tests check
//! that bits are balanced and uncorrelated on random documents.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::tokenize::{for_each_token, TokenRule, ASCII_WORD};

/// Seed of the token hash. Changing it changes every fingerprint: bump `FORMAT_VERSION`.
const TOKEN_SEED: u64 = 0x6e65_6172_6475_7031;
const K_LEN: u64 = 0x9e37_79b9_7f4a_7c15;
const K_MIX: u64 = 0xc2b2_ae3d_27d4_eb4f;

/// The hash of one normalised token.
#[inline]
pub(crate) fn token_hash(token: &[u8]) -> u64 {
    xxh3_64_with_seed(token, TOKEN_SEED)
}

/// MurmurHash3's 64-bit finaliser: every input bit flips each output bit with probability ~1/2.
#[inline(always)]
pub(crate) fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Appends the hash of every token of ASCII `text` to `out`, lowercasing on the fly.
///
/// This is the fast path: for ASCII, NFKC is the identity and lowercasing is a bit flip, so
/// the result equals hashing the tokens of `normalize(text)`.
pub(crate) fn ascii_token_hashes(text: &[u8], out: &mut Vec<u64>) {
    let mut buf = [0u8; 32];
    let n = text.len();
    let mut i = 0;
    while i < n {
        if !ASCII_WORD[text[i] as usize] {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < n && ASCII_WORD[text[i] as usize] {
            i += 1;
        }
        let token = &text[start..i];
        let h = if token.len() <= buf.len() {
            let lower = &mut buf[..token.len()];
            for (d, &s) in lower.iter_mut().zip(token) {
                *d = s | ((s.wrapping_sub(b'A') < 26) as u8) << 5;
            }
            token_hash(lower)
        } else {
            token_hash(&token.to_ascii_lowercase())
        };
        out.push(h);
    }
}

/// Appends the hash of every token of already-normalised `text` to `out`.
pub(crate) fn unicode_token_hashes(normalized: &str, rule: TokenRule, out: &mut Vec<u64>) {
    for_each_token(normalized, rule, |t| out.push(token_hash(t.as_bytes())));
}

#[inline(always)]
fn combine(tokens: &[u64]) -> u64 {
    let mut acc = (tokens.len() as u64).wrapping_mul(K_LEN);
    for &t in tokens {
        acc = (acc ^ t).wrapping_mul(K_MIX).rotate_left(31);
    }
    fmix64(acc)
}

fn windows_of<const W: usize>(tokens: &[u64], out: &mut Vec<u64>) {
    out.extend(tokens.windows(W).map(|w| {
        let w: &[u64; W] = w.try_into().expect("windows yields slices of length W");
        combine(w)
    }));
}

/// Appends the hash of each `width`-token shingle of `tokens` to `out`.
///
/// A text with fewer tokens than `width` (but at least one) is a single shingle of all its
/// tokens; no tokens give no shingles.
pub(crate) fn shingle_hashes(tokens: &[u64], width: usize, out: &mut Vec<u64>) {
    debug_assert!(width >= 1);
    if tokens.is_empty() {
        return;
    }
    if tokens.len() < width {
        out.push(combine(tokens));
        return;
    }
    // Constant widths let the compiler unroll the combine.
    match width {
        1 => windows_of::<1>(tokens, out),
        2 => windows_of::<2>(tokens, out),
        3 => windows_of::<3>(tokens, out),
        4 => windows_of::<4>(tokens, out),
        5 => windows_of::<5>(tokens, out),
        6 => windows_of::<6>(tokens, out),
        _ => out.extend(tokens.windows(width).map(combine)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::normalize;

    fn hashes(text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        if text.is_ascii() {
            ascii_token_hashes(text.as_bytes(), &mut out);
        } else {
            unicode_token_hashes(&normalize(text), TokenRule::Unicode, &mut out);
        }
        out
    }

    #[test]
    fn ascii_fast_path_equals_unicode_path() {
        let text = "The Quick_Brown fox, 42 JUMPS; over-the lazy dog aVeryLongTokenThatExceedsThirtyTwoBytesForSure";
        let mut slow = Vec::new();
        unicode_token_hashes(&normalize(text), TokenRule::Unicode, &mut slow);
        assert_eq!(hashes(text), slow);
        assert_eq!(slow.len(), 10);
    }

    #[test]
    fn short_text_is_one_shingle() {
        let t = hashes("two words");
        let mut out = Vec::new();
        shingle_hashes(&t, 4, &mut out);
        assert_eq!(out.len(), 1);
        shingle_hashes(&[], 4, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn shingles_depend_on_order() {
        let (a, b) = (hashes("a b c d"), hashes("b a c d"));
        let (mut sa, mut sb) = (Vec::new(), Vec::new());
        shingle_hashes(&a, 4, &mut sa);
        shingle_hashes(&b, 4, &mut sb);
        assert_ne!(sa, sb);
    }

    #[test]
    fn generic_width_matches_specialised_width() {
        let t = hashes("one two three four five six seven eight nine ten");
        for w in 1..=6 {
            let mut fast = Vec::new();
            shingle_hashes(&t, w, &mut fast);
            let slow: Vec<u64> = t.windows(w).map(combine).collect();
            assert_eq!(fast, slow, "width {w}");
        }
    }

    /// Every bit of a shingle hash must be a fair coin, independent of the others: a biased
    /// or correlated bit would bias every fingerprint's vote on it.
    #[test]
    fn shingle_hash_bits_are_balanced_and_uncorrelated() {
        // Real-looking documents: words from a small vocabulary, so many tokens repeat.
        let vocab: Vec<u64> = (0..500u64)
            .map(|i| token_hash(format!("w{i}").as_bytes()))
            .collect();
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut tokens = Vec::new();
        for _ in 0..40_000 {
            state = fmix64(state.wrapping_add(K_LEN));
            tokens.push(vocab[(state % 500) as usize]);
        }
        let mut shingles = Vec::new();
        shingle_hashes(&tokens, 4, &mut shingles);
        let n = shingles.len() as f64;
        let mut ones = [0f64; 64];
        for h in &shingles {
            for (b, o) in ones.iter_mut().enumerate() {
                *o += ((h >> b) & 1) as f64;
            }
        }
        for (b, o) in ones.iter().enumerate() {
            let p = o / n;
            assert!((p - 0.5).abs() < 0.02, "bit {b} is 1 with probability {p}");
        }
        // Pairwise correlation of bits (phi coefficient) near zero.
        for a in 0..64 {
            for b in (a + 1)..64 {
                let both = shingles
                    .iter()
                    .filter(|h| (*h >> a) & (*h >> b) & 1 == 1)
                    .count() as f64;
                let (pa, pb) = (ones[a] / n, ones[b] / n);
                let cov = both / n - pa * pb;
                let phi = cov / (pa * (1.0 - pa) * pb * (1.0 - pb)).sqrt();
                assert!(phi.abs() < 0.04, "bits {a} and {b} correlate: {phi}");
            }
        }
    }
}
