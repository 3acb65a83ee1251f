//! neardup: near-duplicate text detection at scale with SimHash.
#![deny(missing_docs)]

pub mod error;
pub mod index;

pub use error::{Error, Result};
