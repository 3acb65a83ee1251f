//! Input readers: files of plain text (a document per file or per line) and JSON Lines.
//!
//! Readers stream: a record is handed on as soon as its line is read, and a line that cannot
//! be used becomes a [`Reject`] naming the file, the line and the reason, never an abort.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::args::InputArgs;

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
    /// Its text fields, in order, as (name, text).
    pub fields: Vec<(String, String)>,
}

/// An input that could not be used, and why.
#[derive(Debug, Clone)]
pub struct Reject {
    /// Where it came from.
    pub origin: Origin,
    /// Why it was rejected.
    pub reason: String,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.reason)
    }
}

/// Reads every input named by `args`, calling `f` with each record or reject in order.
///
/// # Errors
/// Only what `f` returns, or a failure to read standard input: unreadable files and bad
/// lines are rejects.
pub fn for_each(
    args: &InputArgs,
    mut f: impl FnMut(Result<Record, Reject>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let stdin = [PathBuf::from("-")];
    let files: &[PathBuf] = if args.files.is_empty() {
        &stdin
    } else {
        &args.files
    };
    for path in files {
        let name = if path == Path::new("-") {
            "<stdin>".to_owned()
        } else {
            path.display().to_string()
        };
        let reader: Box<dyn BufRead> = if path == Path::new("-") {
            Box::new(BufReader::new(io::stdin().lock()))
        } else {
            match File::open(path) {
                Ok(file) => Box::new(BufReader::with_capacity(1 << 16, file)),
                Err(e) => {
                    f(Err(Reject {
                        origin: Origin {
                            file: name,
                            line: None,
                        },
                        reason: format!("cannot open: {e}"),
                    }))?;
                    continue;
                }
            }
        };
        if args.jsonl || args.lines {
            read_lines(reader, &name, args, &mut f)?;
        } else {
            read_document(reader, name, &mut f)?;
        }
    }
    Ok(())
}

fn read_document(
    mut reader: Box<dyn BufRead>,
    name: String,
    f: &mut impl FnMut(Result<Record, Reject>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let origin = Origin {
        file: name.clone(),
        line: None,
    };
    let mut bytes = Vec::new();
    if let Err(e) = reader.read_to_end(&mut bytes) {
        return f(Err(Reject {
            origin,
            reason: format!("cannot read: {e}"),
        }));
    }
    match String::from_utf8(bytes) {
        Ok(text) => f(Ok(Record {
            origin,
            id: name,
            fields: vec![("text".to_owned(), text)],
        })),
        Err(e) => f(Err(Reject {
            origin,
            reason: invalid_utf8(e.utf8_error()),
        })),
    }
}

fn invalid_utf8(e: std::str::Utf8Error) -> String {
    format!("invalid UTF-8 at byte {}", e.valid_up_to())
}

fn read_lines(
    mut reader: Box<dyn BufRead>,
    name: &str,
    args: &InputArgs,
    f: &mut impl FnMut(Result<Record, Reject>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let origin = |line_no| Origin {
            file: name.to_owned(),
            line: Some(line_no),
        };
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) => {
                return f(Err(Reject {
                    origin: origin(line_no + 1),
                    reason: format!("cannot read: {e}"),
                }))
            }
        }
        line_no += 1;
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        let line = match std::str::from_utf8(&buf) {
            Ok(s) => s,
            Err(e) => {
                f(Err(Reject {
                    origin: origin(line_no),
                    reason: invalid_utf8(e),
                }))?;
                continue;
            }
        };
        if line.trim().is_empty() {
            continue; // a blank line is no record
        }
        let result = if args.jsonl {
            parse_json_record(line, origin(line_no), args)
        } else {
            Ok(Record {
                origin: origin(line_no),
                id: line_no.to_string(),
                fields: vec![("text".to_owned(), line.to_owned())],
            })
        };
        f(result)?;
    }
}

fn parse_json_record(line: &str, origin: Origin, args: &InputArgs) -> Result<Record, Reject> {
    let reject = |reason: String| Reject {
        origin: origin.clone(),
        reason,
    };
    let value: Value =
        serde_json::from_str(line).map_err(|e| reject(format!("malformed JSON: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(reject("expected a JSON object".into()));
    };
    let id = match obj.get(&args.id_field) {
        None | Some(Value::Null) => origin.line.map_or_else(String::new, |l| l.to_string()),
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(reject(format!(
                "field {:?} must be a non-empty string or a number, not {}",
                args.id_field,
                kind(other)
            )))
        }
    };
    let named: Vec<&str> = if args.text_fields.is_empty() {
        DEFAULT_TEXT_FIELDS.to_vec()
    } else {
        args.text_fields.iter().map(String::as_str).collect()
    };
    let mut fields = Vec::new();
    for name in &named {
        match obj.get(*name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => fields.push(((*name).to_owned(), s.clone())),
            Some(other) => {
                return Err(reject(format!(
                    "field {name:?} must be a string, not {}",
                    kind(other)
                )))
            }
        }
    }
    if fields.is_empty() {
        return Err(reject(format!(
            "missing text: none of the fields {} is present",
            named
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(Record { origin, id, fields })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
