//! Input readers: plain-text files (a document per file or per line), JSON Lines (plain,
//! .gz or .zst) and directories of .txt/.html (or, with JSON Lines input, .jsonl) files.
//!
//! [`InputArgs::resolve`] settles the format first (JSON Lines by the files' names unless a
//! flag says otherwise) and refuses input paths that cannot be opened. Readers then stream:
//! a record is handed on as soon as its line is read, and anything that cannot be used
//! becomes a [`Reject`] naming the file, the line, the record's id when it has one, and the
//! reason, never an abort.
//!
//! One job a file: `discover` settles the format and finds the files (the walk of a
//! directory, the files it skips, the bytes to read), `open` opens and decompresses a
//! file, `mmap` maps a plain one, `lines` cuts input into lines, `read` walks the inputs
//! into [`Item`]s, `record` builds a [`Record`] from an item (a JSON object's members read by
//! `neardup::json`), and `host` probes a JSON line for its host alone.

use std::fmt;

mod discover;
mod host;
mod lines;
mod mmap;
mod open;
mod read;
mod record;
#[cfg(test)]
mod tests;

pub use self::discover::{
    is_jsonl_name, print_skipped_note, skipped_files, skipped_note, total_bytes,
};
pub use self::host::probe_host;
pub use self::lines::{for_each_line, LineBytes};
pub use self::mmap::release_pages;
pub use self::read::{for_each, for_each_item};
pub use self::record::{mirror_host, parse_json_line, Item};
pub use neardup::json::{object_with, RESERVED_KEYS};

/// The string `fields` of one JSON Lines record, read as the JSON Lines reader reads them:
/// the flat-object scan, or serde_json alone with `serde_only`. `None` for a field that is
/// absent, null or blank. For the JSON benchmark, which holds the scan against serde_json
/// and the SIMD JSON crates on the same records.
///
/// # Errors
/// The reader's reject reason: the line is not a JSON object, or a field is not a string.
pub fn json_string_fields(
    line: &str,
    fields: &[&str],
    serde_only: bool,
) -> Result<Vec<Option<String>>, String> {
    let members = if serde_only {
        neardup::json::Members::parse_with_serde(line)?
    } else {
        neardup::json::Members::parse(line)?
    };
    fields.iter().map(|f| members.string(f)).collect()
}

/// Text fields read from a JSONL record when none are named (seed 000's `content_text`,
/// plus a plain `text`).
pub const DEFAULT_TEXT_FIELDS: [&str; 4] = ["title", "description", "body_text", "text"];

/// Where a record came from: a file and, for line-based input, a 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file, or `<stdin>`.
    pub file: String,
    /// The line, for --lines and --jsonl.
    pub line: Option<u64>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// One input record.
#[derive(Debug, Clone)]
pub struct Record {
    /// Where it came from.
    pub origin: Origin,
    /// Its id: the id field, else the line number, else the file name.
    pub id: String,
    /// Its content fields, in order, as (name, text); HTML already reduced to text.
    pub fields: Vec<(String, String)>,
    /// Source URL.
    pub url: Option<String>,
    /// Host.
    pub host: Option<String>,
    /// First-seen time as written (RFC 3339 expected).
    pub first_seen: Option<String>,
    /// Retention class.
    pub retention_class: Option<String>,
    /// The JSON object it was read from (JSONL only), as read, for outputs that extend it:
    /// the line itself, valid UTF-8, not a copy.
    pub object: Option<LineBytes>,
    /// When `object` has top-level members of [`RESERVED_KEYS`], whose values outputs that
    /// extend the object set themselves: the byte ranges in `object` of its other members,
    /// which those outputs keep. `None`: the object is kept whole.
    pub kept_members: Option<Vec<std::ops::Range<usize>>>,
}

impl Record {
    /// The library's record: the first-seen time parsed (a bad one is a reject naming
    /// `--time-field`), the fields weighted by `--field-weight`. The JSON object and its
    /// kept members, which only outputs use, are dropped: take them first.
    pub fn into_library(self, args: &crate::args::InputArgs) -> Result<neardup::Record, Reject> {
        let first_seen = match &self.first_seen {
            None => None,
            Some(t) => Some(neardup::Timestamp::parse_rfc3339(t).map_err(|e| Reject {
                origin: self.origin.clone(),
                id: Some(self.id.clone()),
                reason: format!("field {:?}: {e}", args.time_field),
            })?),
        };
        Ok(neardup::Record {
            id: self.id,
            url: self.url,
            host: self.host,
            first_seen,
            retention_class: self.retention_class,
            fields: self
                .fields
                .into_iter()
                .map(|(name, text)| neardup::TextField {
                    weight: args.weight_of(&name),
                    name,
                    text,
                })
                .collect(),
        })
    }
}

/// An input that could not be used, and why.
#[derive(Debug, Clone)]
pub struct Reject {
    /// Where it came from.
    pub origin: Origin,
    /// The record's id, when it is a JSON object with a string or number id.
    pub id: Option<String>,
    /// Why it was rejected.
    pub reason: String,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.id {
            Some(id) => write!(f, "{} (record {id:?}): {}", self.origin, self.reason),
            None => write!(f, "{}: {}", self.origin, self.reason),
        }
    }
}
