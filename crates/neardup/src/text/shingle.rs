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

const K_SEED_A: u64 = 0xa076_1d64_78bd_642f;
const K_SEED_B: u64 = 0xe703_7ed1_a0b4_28db;

/// A 64x64 -> 128-bit multiply folded to 64 bits (the mixing step of wyhash and xxh3).
#[inline(always)]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let m = u128::from(a) * u128::from(b);
    (m as u64) ^ ((m >> 64) as u64)
}

/// The hash of one normalised token.
///
/// Tokens of up to 16 bytes (almost every word) take two folded multiplies over the
/// zero-padded bytes, the same construction xxh3 uses for short inputs but without its
/// length dispatch; longer tokens use xxh3 itself. The shingle combiner finishes the mixing.
#[inline]
pub(crate) fn token_hash(token: &[u8]) -> u64 {
    if token.len() <= 16 {
        let mut buf = [0u8; 16];
        buf[..token.len()].copy_from_slice(token);
        short_token_hash(&buf, token.len())
    } else {
        xxh3_64_with_seed(token, TOKEN_SEED)
    }
}

/// [`token_hash`] of a token already copied, zero-padded, into `buf`.
#[inline(always)]
fn short_token_hash(buf: &[u8; 16], len: usize) -> u64 {
    let lo = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
    let hi = u64::from_le_bytes(buf[8..].try_into().expect("8 bytes"));
    short_hash_words(lo, hi, len)
}

/// [`token_hash`] of a token of `len <= 16` bytes given as two little-endian words.
#[inline(always)]
fn short_hash_words(lo: u64, hi: u64, len: usize) -> u64 {
    let h = folded_multiply(lo ^ K_SEED_A, hi ^ K_SEED_B ^ TOKEN_SEED);
    folded_multiply(h ^ len as u64, K_MIX ^ TOKEN_SEED)
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
/// the result equals hashing the tokens of `normalize(text)`. Word bytes are classified 16 at
/// a time into a bitmap, tokens are found by bit scans over it, and a token of up to 16
/// bytes is loaded as two words, lowercased in-register and hashed without a copy.
pub(crate) fn ascii_token_hashes(text: &[u8], out: &mut Vec<u64>) {
    let n = text.len();
    if n == 0 {
        return;
    }
    // One bit per byte; a small document needs a few words on the stack, a larger one
    // this thread's buffer (a fresh zeroed allocation per document cost more than the
    // bitmap itself).
    thread_local! {
        static MASK: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let words = n.div_ceil(64);
    if words <= 64 {
        let mut stack = [0u64; 64];
        tokens_of(text, &mut stack[..words], out);
    } else {
        MASK.with_borrow_mut(|mask| {
            mask.clear();
            mask.resize(words, 0);
            tokens_of(text, mask, out);
        });
    }
}

/// [`ascii_token_hashes`] with a zeroed bitmap of one bit per byte of `text`.
#[inline(always)]
fn tokens_of(text: &[u8], mask: &mut [u64], out: &mut Vec<u64>) {
    let n = text.len();
    word_bitmap(text, mask);
    // At most one token per two bytes: no growth inside the loop.
    out.reserve(n / 2 + 1);
    // Tokens start and end where the bitmap changes: walk its transitions in order, each
    // word's found by one XOR with itself shifted by a byte, alternately a start and an end.
    let mut carry = 0u64;
    let mut start = 0usize;
    let mut inside = false;
    for (k, &w) in mask.iter().enumerate() {
        let mut changes = w ^ ((w << 1) | carry);
        carry = w >> 63;
        while changes != 0 {
            let p = k * 64 + changes.trailing_zeros() as usize;
            changes &= changes - 1;
            if inside {
                out.push(ascii_token_hash_at(text, start, p));
            } else {
                start = p;
            }
            inside = !inside;
        }
    }
    if inside {
        out.push(ascii_token_hash_at(text, start, n));
    }
}

/// Lowercases the ASCII letters of eight ASCII bytes at once.
#[inline(always)]
fn swar_lowercase(w: u64) -> u64 {
    const LANES: u64 = 0x0101_0101_0101_0101;
    let at_least_a = w.wrapping_add(LANES * (0x80 - u64::from(b'A')));
    let past_z = w.wrapping_add(LANES * (0x80 - u64::from(b'Z') - 1));
    let upper = at_least_a & !past_z & (LANES * 0x80);
    w | (upper >> 2)
}

/// The hash of the lowercased ASCII token `text[start..end]`.
#[inline(always)]
fn ascii_token_hash_at(text: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    if len > 16 {
        return long_ascii_token_hash(&text[start..end]);
    }
    let n = text.len();
    let load = |at: usize| u128::from_le_bytes(text[at..at + 16].try_into().expect("16 bytes"));
    let word = if start + 16 <= n {
        load(start)
    } else if n >= 16 {
        // A token near the end: the text's last 16 bytes, shifted down to the token (a
        // copy of the tail was a memcpy call, and ASCII stretches between non-ASCII words
        // are short, so most of their tokens are near an end).
        load(n - 16) >> (8 * (start + 16 - n))
    } else {
        let mut buf = [0u8; 16];
        buf[..n - start].copy_from_slice(&text[start..]);
        u128::from_le_bytes(buf)
    };
    let keep = |bytes: usize| -> u64 {
        if bytes >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * bytes)) - 1
        }
    };
    let lo = word as u64 & keep(len);
    let hi = (word >> 64) as u64 & keep(len.saturating_sub(8));
    short_hash_words(swar_lowercase(lo), swar_lowercase(hi), len)
}

/// The hash of a lowercased ASCII token longer than 16 bytes (identifiers, hex strings,
/// base64): lowercased into a buffer on the stack, where a fresh `Vec` per token was an
/// allocation and a copy (long tokens are common in technical text).
#[inline(never)]
fn long_ascii_token_hash(token: &[u8]) -> u64 {
    let mut buf = [0u8; 128];
    match buf.get_mut(..token.len()) {
        Some(lower) => {
            for (d, &s) in lower.iter_mut().zip(token) {
                *d = s.to_ascii_lowercase();
            }
            token_hash(lower)
        }
        None => token_hash(&token.to_ascii_lowercase()),
    }
}

/// Sets bit i of `mask` when `text[i]` is an ASCII word byte.
fn word_bitmap(text: &[u8], mask: &mut [u64]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe { word_bitmap_sse2(text, mask) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    word_bitmap_scalar(text, mask, 0);
}

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn word_bitmap_scalar(text: &[u8], mask: &mut [u64], from: usize) {
    for (i, &b) in text.iter().enumerate().skip(from) {
        mask[i / 64] |= u64::from(ASCII_WORD[b as usize]) << (i % 64);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn word_bitmap_sse2(text: &[u8], mask: &mut [u64]) {
    use std::arch::x86_64::*;
    // c in [lo, lo + span) <=> (c - lo + 0x80) as i8 < -128 + span
    let in_range = |c: __m128i, lo: u8, span: u8| {
        let shifted = _mm_add_epi8(c, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
        _mm_cmplt_epi8(shifted, _mm_set1_epi8((0x80u8.wrapping_add(span)) as i8))
    };
    let chunks = text.len() / 16;
    for i in 0..chunks {
        let c = _mm_loadu_si128(text.as_ptr().add(16 * i).cast());
        let lower = _mm_or_si128(c, _mm_set1_epi8(0x20));
        let alpha = in_range(lower, b'a', 26);
        let digit = in_range(c, b'0', 10);
        let under = _mm_cmpeq_epi8(c, _mm_set1_epi8(b'_' as i8));
        let word = _mm_or_si128(_mm_or_si128(alpha, digit), under);
        let bits = _mm_movemask_epi8(word) as u32 as u64;
        mask[i / 4] |= bits << (16 * (i % 4));
    }
    for (i, &b) in text.iter().enumerate().skip(chunks * 16) {
        mask[i / 64] |= u64::from(ASCII_WORD[b as usize]) << (i % 64);
    }
}

/// The position of the first byte >= 0x80, eight bytes at a time.
fn first_non_ascii(bytes: &[u8]) -> Option<usize> {
    let mut chunks = bytes.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let high = w & 0x8080_8080_8080_8080;
        if high != 0 {
            return Some(base + high.trailing_zeros() as usize / 8);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b >= 0x80)
        .map(|p| base + p)
}

/// Appends the hash of every token of `text` (any Unicode) under [`TokenRule::Unicode`].
///
/// ASCII stretches take the fast path; only the whitespace-delimited runs that contain a
/// non-ASCII character are normalised. That is exact: NFKC never composes across an ASCII
/// whitespace character, lowercasing's final-sigma context stops at one, and no token spans
/// one, so normalising run by run equals normalising the whole text.
pub(crate) fn text_token_hashes(
    text: &str,
    rule: TokenRule,
    normalized: &mut String,
    out: &mut Vec<u64>,
) {
    let bytes = text.as_bytes();
    if text.is_ascii() {
        ascii_token_hashes(bytes, out);
        return;
    }
    let is_space = |b: &u8| matches!(b, b' ' | b'\n' | b'\t' | b'\r' | b'\x0b' | b'\x0c');
    let mut pos = 0;
    while pos < bytes.len() {
        let Some(offset) = first_non_ascii(&bytes[pos..]) else {
            ascii_token_hashes(&bytes[pos..], out);
            return;
        };
        let first = pos + offset;
        let start = bytes[pos..first]
            .iter()
            .rposition(is_space)
            .map_or(pos, |i| pos + i + 1);
        let end = bytes[first..]
            .iter()
            .position(is_space)
            .map_or(bytes.len(), |i| first + i);
        ascii_token_hashes(&bytes[pos..start], out);
        // `start` follows and `end` sits on an ASCII byte: both are char boundaries.
        super::normalize::normalize_non_ascii_into(&text[start..end], normalized);
        unicode_token_hashes(normalized, rule, out);
        pos = end;
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

/// The 32-bit id of a 64-bit shingle hash that [`shingle_ids`] keeps: its high half.
#[inline]
pub(crate) fn shingle_id(shingle: u64) -> u32 {
    (shingle >> 32) as u32
}

/// Compacts 64-bit shingle hashes to the sorted, distinct 32-bit ids stored for
/// verification: half the bytes, and a 32-bit collision inside a pair of documents of a
/// thousand shingles each moves their Jaccard by less than 1e-3 with probability > 0.999.
pub fn shingle_ids(shingles: &[u64]) -> Vec<u32> {
    let mut ids: Vec<u32> = shingles.iter().map(|&h| shingle_id(h)).collect();
    // Sorted input keeps its high halves in order: then deduplication is all that is left.
    if !shingles.is_sorted() {
        ids.sort_unstable();
    }
    ids.dedup();
    ids
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
    fn fast_tokenizer_matches_byte_loop_on_every_boundary() {
        // Tokens crossing the 16-byte SIMD chunks and the 64-bit bitmap words, tokens at the
        // very end, long tokens and every word-byte class.
        let mut text = String::new();
        for i in 0..300 {
            let word: String = (0..(i % 23 + 1))
                .map(|j| b"aZ_09mQx"[(i + j) % 8] as char)
                .collect();
            text.push_str(&word);
            text.push_str([" ", ",", "--", "\n", ".  "][i % 5]);
        }
        for cut in [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 1000, text.len()] {
            let t = &text.as_bytes()[..cut.min(text.len())];
            let mut fast = Vec::new();
            ascii_token_hashes(t, &mut fast);
            let mut slow = Vec::new();
            let s = std::str::from_utf8(t).unwrap().to_ascii_lowercase();
            for_each_token(&s, TokenRule::Unicode, |tok| {
                slow.push(token_hash(tok.as_bytes()))
            });
            assert_eq!(fast, slow, "prefix of {cut} bytes");
        }
    }

    proptest::proptest! {
        #[test]
        fn fast_tokenizer_matches_byte_loop_on_any_ascii(
            bytes in proptest::collection::vec(proptest::sample::select(b"aZ9_ -.\n".to_vec()), 0..700),
            long in 0usize..200,
        ) {
            // Runs of word bytes up to hundreds long, capitals among them: tokens spanning
            // whole bitmap words, on both sides of the long-token buffer's 128 bytes.
            let mut t = bytes;
            let run = (0..long).map(|i| if i % 3 == 0 { b'Q' } else { b'q' });
            t.splice(t.len() / 2..t.len() / 2, run);
            let mut fast = Vec::new();
            ascii_token_hashes(&t, &mut fast);
            let mut slow = Vec::new();
            let s = std::str::from_utf8(&t).unwrap().to_ascii_lowercase();
            for_each_token(&s, TokenRule::Unicode, |tok| slow.push(token_hash(tok.as_bytes())));
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn long_texts_reuse_the_threads_bitmap_cleanly() {
        // Past 4 KiB the bitmap is this thread's buffer: a long text, then a shorter one
        // that must not see the first one's bits.
        let long: String = (0..6000).map(|i| format!("w{} ", i % 977)).collect();
        let short: String = "Zz ".repeat(1500) + &"-".repeat(3000);
        for t in [&long, &short, &long[..5000], &short] {
            let mut fast = Vec::new();
            ascii_token_hashes(t.as_bytes(), &mut fast);
            let mut slow = Vec::new();
            for_each_token(&t.to_ascii_lowercase(), TokenRule::Unicode, |tok| {
                slow.push(token_hash(tok.as_bytes()))
            });
            assert_eq!(fast, slow);
        }
    }

    #[test]
    fn swar_lowercase_touches_only_capitals() {
        for b in 0u8..0x80 {
            let w = u64::from(b) * 0x0101_0101_0101_0101;
            let want = u64::from(b.to_ascii_lowercase()) * 0x0101_0101_0101_0101;
            assert_eq!(swar_lowercase(w), want, "byte {b:#x}");
        }
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
