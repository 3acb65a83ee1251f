//! The crate's error type.

use std::path::PathBuf;

/// A convenient alias for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in `neardup`.
///
/// Messages are lowercase, name the offending value and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is out of range; raised by a builder's `build()`.
    #[error("invalid configuration: {field} = {value}: {reason}")]
    InvalidConfig {
        /// The parameter's name, as the builder spells it.
        field: &'static str,
        /// The rejected value, formatted.
        value: String,
        /// Why it was rejected and what would be accepted.
        reason: String,
    },
    /// A value in the input is malformed.
    #[error("{field} {value:?}: {reason}")]
    InvalidInput {
        /// The input field's name.
        field: &'static str,
        /// The rejected value.
        value: String,
        /// What was wrong and what is expected.
        reason: String,
    },
    /// A feature bag with no features cannot be fingerprinted (its SimHash would be an
    /// arbitrary all-zero value that collides with every other empty document).
    #[error("empty feature bag{}: nothing to fingerprint", record_suffix(.record))]
    EmptyFeatureBag {
        /// The record the bag came from, when known.
        record: Option<String>,
    },
    /// A feature carried a weight of zero or less.
    #[error("feature {feature:?} has weight {weight}: weights must be positive integers")]
    NonPositiveWeight {
        /// The feature's text.
        feature: String,
        /// The rejected weight.
        weight: i64,
    },
    /// Two fingerprints made with different profiles were compared.
    #[error("fingerprints come from different profiles ({left} vs {right}): re-fingerprint one side with the other's profile")]
    ProfileMismatch {
        /// The left profile, described.
        left: String,
        /// The right profile, described.
        right: String,
    },
    /// A string could not be parsed as a fingerprint.
    #[error("invalid fingerprint {text:?}: {reason}")]
    InvalidFingerprint {
        /// The rejected text.
        text: String,
        /// What was wrong with it.
        reason: &'static str,
    },
    /// The analysis threads could not be started.
    #[error("starting the analysis threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
    /// A Hamming index refused an operation.
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    /// Reading or writing a file failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The store failed or refused to open.
    #[error("store {}: {reason}", .path.display())]
    Store {
        /// The store's location.
        path: PathBuf,
        /// What went wrong, with the fix where there is one.
        reason: String,
    },
    /// The store was made with another fingerprint profile.
    #[error("the store was made with fingerprint profile {stored}, but this run uses {current}: fingerprints of different profiles cannot be compared; run with the store's settings or use a new store")]
    ConfigMismatch {
        /// The store's profile.
        stored: String,
        /// The profile of this run.
        current: String,
    },
    /// Another process holds the store's writer lock ([`WriterLock`](crate::store::WriterLock)).
    #[error("store {} is in use by {holder}: one process writes to a store at a time; wait for it to finish", .path.display())]
    StoreBusy {
        /// The store's location.
        path: PathBuf,
        /// Who holds it: command, process id and since when, as the holder recorded them.
        holder: String,
    },
    /// An earlier commit failed, so the in-memory state no longer matches the store.
    #[error("an earlier write to the store failed; reopen the store to continue from its last committed state")]
    Poisoned,
    /// Another process committed to the store while this one decided a batch whose commit
    /// ran in the background ([`Deduper::process_prepared_behind`](crate::Deduper::process_prepared_behind)):
    /// those decisions were made on a stale view, so nothing of the batch was written.
    #[error("another process wrote to the store while this one was deciding a batch: nothing of that batch was written; reopen the store and process its records again")]
    Conflict,
    /// A sentence-embedding model could not be loaded or run.
    #[error("semantic model {}: {reason}", .path.display())]
    Model {
        /// The model's directory.
        path: PathBuf,
        /// What went wrong, with the fix where there is one.
        reason: String,
    },
    /// A label a store cannot keep (an empty id, a Jaccard outside 0..=1).
    #[error("invalid label: {reason}")]
    InvalidLabel {
        /// What was wrong.
        reason: String,
    },
    /// A file had the wrong format.
    #[error("{}: {reason}", .path.display())]
    Format {
        /// The file involved.
        path: PathBuf,
        /// What was wrong, with the line where known.
        reason: String,
    },
}

fn record_suffix(record: &Option<String>) -> String {
    match record {
        Some(r) => format!(" in record {r:?}"),
        None => String::new(),
    }
}
