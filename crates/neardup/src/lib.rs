//! neardup finds near-duplicate text at scale with SimHash.
//!
//! Records get a 64-bit (or 128-bit) weighted SimHash over normalised word shingles; a
//! Hamming-space index finds every stored fingerprint within `max_distance` bits without a
//! scan; candidates are verified by exact Jaccard similarity of their shingle sets.
//!
//! # Overview
//! - [`SimHasher`] (built by [`SimHasher::builder`]) turns text into a [`Fingerprint`],
//!   or with [`SimHasher::analyze`] into an [`Analysis`]: fingerprint, shingle set and the
//!   exact-tier [`ContentHash`].
//! - [`text`] holds the analysis steps: [`text::normalize`] (NFKC, lowercase),
//!   [`text::tokens`], and [`Boilerplate`] exclusion.
//! - [`features`] holds the weightings: term frequency, presence, and [`IdfTable`].
//! - [`index`] holds the Hamming indexes.
//!
//! # Example
//! ```
//! use neardup::SimHasher;
//!
//! let hasher = SimHasher::builder().build()?;
//! let a = hasher.fingerprint("The quick brown fox jumps over the lazy dog")?;
//! let b = hasher.fingerprint("the QUICK, brown fox jumps over the lazy dog!")?;
//! assert_eq!(a.distance(&b)?, 0); // case and punctuation do not matter
//! println!("{a}"); // 16 hex digits
//! # Ok::<(), neardup::Error>(())
//! ```
//!
//! # Fingerprint compatibility
//! Every fingerprint carries its [`Profile`] (hash, shingle width, bits, weighting, format
//! version); comparing fingerprints of different profiles is an error, never a silent wrong
//! answer. The `blake2b` profile ([`HashAlgo::Blake2b`]) reproduces the Python `simhash(text)`
//! of the guide this project started from bit for bit, so its stored fingerprints stay valid.
#![deny(missing_docs)]

#[macro_use]
mod macros;

pub mod error;
pub mod exact;
pub mod features;
pub mod fingerprint;
pub mod index;
pub mod json;
pub mod pipeline;
pub mod record;
pub mod semantic;
pub mod store;
pub mod text;
pub mod tune;
pub mod verify;
pub mod watch;

pub use error::{Error, Result};
pub use exact::ContentHash;
pub use features::{IdfTable, Weighting};
pub use fingerprint::{
    hamming, Analysis, Field, Fingerprint, FingerprintBits, HashAlgo, Profile, Scratch, SimHasher,
    SimHasherBuilder, FORMAT_VERSION,
};
pub use index::{
    AutoIndex, BandIndex, HammingIndex, IndexError, IndexStats, LinearIndex, Match, MihIndex,
    PermutedIndex, QueryStats,
};
pub use pipeline::{Decision, Deduper, DeduperBuilder, Outcome, Rule};
pub use record::{Record, TextField, Timestamp};
#[cfg(feature = "redis")]
pub use store::RedisStore;
pub use store::{MemoryStore, SqliteStore, Store};
pub use text::Boilerplate;

#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
