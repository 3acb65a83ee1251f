//! Exit codes, one table for every command (the README's and `neardup --help`'s).

use std::process::ExitCode;

/// The table `neardup --help` prints after its commands.
pub const TABLE: &str = "\
Exit codes:
  0  done
  1  nothing matched (query, explain) or nothing to do (erase: an id was not stored)
  2  done, but some records were rejected (see rejects.jsonl or stderr); --strict makes a reject an error (3)
  3  error: bad arguments, unreadable input, a store or output that failed; the run did not do what was asked
  4  accounting error: the outputs do not account for every input record (a bug; report.json says which counts differ)
  5  the store is in use by another process (with --no-wait)";

/// Done.
pub const DONE: u8 = 0;
/// `query` and `explain`: nothing matched; `erase`: an id was not stored.
pub const NO_MATCH: u8 = 1;
/// Done, but some records were rejected.
pub const REJECTED: u8 = 2;
/// The run did not do what was asked.
pub const ERROR: u8 = 3;
/// The outputs do not account for every input record.
pub const UNBALANCED: u8 = 4;
/// The store is in use by another process.
pub const BUSY: u8 = 5;

/// The code of a finished run: [`REJECTED`] when it rejected records, else [`DONE`].
pub fn done(rejected: u64) -> ExitCode {
    ExitCode::from(if rejected > 0 { REJECTED } else { DONE })
}

/// A run whose outputs do not account for its input: kept + merged + rejected differs
/// from the records read.
#[derive(Debug, thiserror::Error)]
#[error("accounting error: {input} input records but {kept} kept + {merged} merged + {rejected} rejected = {sum} ({detail}); the outputs are incomplete, please report this")]
pub struct Unbalanced {
    pub input: u64,
    pub kept: u64,
    pub merged: u64,
    pub rejected: u64,
    pub sum: u64,
    pub detail: String,
}

/// The exit code of a failed command.
pub fn of_error(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.downcast_ref::<Unbalanced>().is_some() {
            return UNBALANCED;
        }
        if let Some(neardup::Error::StoreBusy { .. }) = cause.downcast_ref::<neardup::Error>() {
            return BUSY;
        }
    }
    ERROR
}
