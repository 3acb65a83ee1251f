//! The exact tier: a 128-bit hash of a record's normalised token stream.
//!
//! Records whose normalised text is identical (same tokens in the same order; case,
//! punctuation, spacing and compatibility forms folded) share this hash, so exact duplicates
//! are settled by one lookup before any SimHash work (seed 004).

use std::fmt;

/// Token-hash separator between fields, so `("ab", "c")` and `("a", "bc")` differ.
pub(crate) const FIELD_SEPARATOR: u64 = u64::MAX;

/// A 128-bit content hash of normalised text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContentHash(pub u128);

impl ContentHash {
    /// Hashes a sequence of token hashes (as produced by the analyzer).
    pub(crate) fn of_tokens(tokens: &[u64], buf: &mut Vec<u8>) -> ContentHash {
        // The hashes' little-endian bytes, in order: on a little-endian machine that is the
        // slice's own memory, hashed where it is instead of copied token by token.
        if cfg!(target_endian = "little") {
            return ContentHash(xxhash_rust::xxh3::xxh3_128(bytemuck::cast_slice(tokens)));
        }
        buf.clear();
        buf.reserve(tokens.len() * 8);
        for t in tokens {
            buf.extend_from_slice(&t.to_le_bytes());
        }
        ContentHash(xxhash_rust::xxh3::xxh3_128(buf))
    }

    /// The hash as 32 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        format!("{:032x}", self.0)
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}
