//! Records built from what was read: a line of text or JSON, or a whole document.

use std::sync::Arc;

use super::lines::Block;
use super::{LineBytes, Origin, Record, Reject, DEFAULT_TEXT_FIELDS};
use crate::args::{InputArgs, InputFormat};
use neardup::json::{kind, unlocated, Members, Text};

/// The host of a document at `path` (below the directory named as input) in a mirror of a
/// crawl, as `wget --recursive` and HTTrack lay one out: the first directory of the path
/// when it is named like a host (`www.example.com/news/a.html`: `example.com`, as the host
/// of its URL would be). Its pages share that host's boilerplate.
pub fn mirror_host(path: &str) -> Option<String> {
    let (first, _) = path.split_once(['/', '\\'])?;
    // A dot, and a top-level label that begins with a letter: `v1.2` or `1.2` are versions.
    let (_, top) = first.rsplit_once('.')?;
    if first.starts_with('.') || !top.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    neardup::record::host_of(&format!("http://{first}/"))
}

/// The record of a whole document read from a directory.
fn document_record(
    origin: Origin,
    id: String,
    html: bool,
    bytes: Vec<u8>,
) -> Result<Record, Reject> {
    match String::from_utf8(bytes) {
        Ok(text) => {
            let (field, text) = if html {
                ("html", neardup::text::html_to_text(&text))
            } else {
                ("text", text)
            };
            Ok(Record {
                origin,
                host: mirror_host(&id),
                id,
                fields: vec![(field.to_owned(), text)],
                url: None,
                first_seen: None,
                retention_class: None,
                object: None,
                kept_members: None,
            })
        }
        Err(e) => Err(Reject {
            origin,
            id: None,
            reason: invalid_utf8(e.utf8_error().valid_up_to()),
        }),
    }
}

fn invalid_utf8(valid_up_to: usize) -> String {
    // Lines are read as bytes and checked here, so the error names the line's own offset.
    format!("invalid UTF-8 at byte {valid_up_to}")
}

/// One unit of input as read: a line not parsed yet (so lines can be parsed in parallel), or
/// a record or reject already complete (whole files, unreadable files).
#[derive(Debug)]
pub enum Item {
    /// A non-blank line of a --lines or --jsonl input.
    Line {
        /// The file.
        file: std::sync::Arc<str>,
        /// Its 1-based line number.
        line: u64,
        /// Its bytes, without the line end.
        bytes: LineBytes,
    },
    /// A whole document of a directory (a `.txt` or `.html` file), read but not decoded.
    Document {
        origin: Origin,
        /// Its path below the directory.
        id: String,
        /// Whether it is HTML, reduced to its text when parsed.
        html: bool,
        bytes: Vec<u8>,
    },
    /// A finished record or reject.
    Done(Result<Record, Reject>),
}

impl Item {
    /// The bytes of input it holds.
    pub fn len(&self) -> usize {
        match self {
            Item::Line { bytes, .. } => bytes.len(),
            Item::Document { bytes, .. } => bytes.len(),
            Item::Done(_) => 0,
        }
    }

    /// Whether it holds no bytes of input (a finished record or reject, or an empty
    /// document).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record or reject this item stands for.
    pub fn parse(self, args: &InputArgs) -> Result<Record, Reject> {
        match self {
            Item::Done(r) => r,
            Item::Document {
                origin,
                id,
                html,
                bytes,
            } => document_record(origin, id, html, bytes),
            Item::Line { file, line, bytes } => {
                let origin = Origin {
                    file: file.to_string(),
                    line: Some(line),
                };
                // simdutf8: the same check as std's, several times faster on long lines.
                let text = match simdutf8::compat::from_utf8(&bytes) {
                    Ok(s) => s,
                    Err(e) => {
                        return Err(Reject {
                            origin,
                            id: None,
                            reason: invalid_utf8(e.valid_up_to()),
                        })
                    }
                };
                if args.jsonl {
                    parse_json_record(text, bytes.clone(), origin, args)
                } else {
                    Ok(Record {
                        origin,
                        id: line.to_string(),
                        fields: vec![("text".to_owned(), text.to_owned())],
                        url: None,
                        host: None,
                        first_seen: None,
                        retention_class: None,
                        object: None,
                        kept_members: None,
                    })
                }
            }
        }
    }
}

/// `bytes`, one line of a JSON Lines input (without its line end), parsed as the readers
/// parse line 1 of `<line>` with every option at its default: the JSON reader on its own,
/// for the fuzz targets and the corpus test.
pub fn parse_json_line(bytes: &[u8]) -> Result<Record, Reject> {
    let mut args = InputArgs::for_files(Vec::new(), InputFormat::Jsonl);
    args.jsonl = true;
    Item::Line {
        file: Arc::from("<line>"),
        line: 1,
        bytes: LineBytes {
            block: Arc::new(Block::Read(bytes.to_vec())),
            start: 0,
            end: bytes.len(),
        },
    }
    .parse(&args)
}

/// Parses `line`, whose bytes are `object` (kept as the record's object).
fn parse_json_record(
    line: &str,
    object: LineBytes,
    origin: Origin,
    args: &InputArgs,
) -> Result<Record, Reject> {
    let obj = Members::parse(line).map_err(|reason| Reject {
        origin: origin.clone(),
        id: None,
        reason,
    })?;
    let line_id = || origin.line.map_or_else(String::new, |l| l.to_string());
    let id_field = &args.id_field;
    // The id, when the object has a usable one: every reject of the record names it.
    let id = match obj.get(id_field).map(|raw| (raw, kind(raw))) {
        None | Some((_, "null")) => Ok(None),
        Some((raw, "a number")) => serde_json::from_str::<serde_json::Number>(raw)
            .map(|n| Some(n.to_string()))
            .map_err(|e| format!("field {id_field:?}: {}", unlocated(&e))),
        Some((_, "a string")) => match obj.text(id_field) {
            Ok(Text::Present(s)) => Ok(Some(s)),
            Ok(empty) => Err(format!(
                "field {id_field:?} must be a non-empty string or a number, not {}",
                if empty == Text::Empty {
                    "an empty string"
                } else {
                    "white space"
                }
            )),
            Err(e) => Err(e),
        },
        Some((_, other)) => Err(format!(
            "field {id_field:?} must be a non-empty string or a number, not {other}"
        )),
    };
    let id = id.map_err(|reason| Reject {
        origin: origin.clone(),
        id: None,
        reason,
    })?;
    let reject = |reason: String| Reject {
        origin: origin.clone(),
        id: id.clone(),
        reason,
    };
    let named: Vec<&str> = if args.text_fields.is_empty() {
        DEFAULT_TEXT_FIELDS.to_vec()
    } else {
        args.text_fields.iter().map(String::as_str).collect()
    };
    let mut fields = Vec::new();
    // Fields present without text, and fields absent, for the reason when none has text.
    let (mut empty, mut absent) = (Vec::new(), Vec::new());
    let html = args.html_fields.iter().map(|n| (n.as_str(), true));
    for (name, is_html) in named.iter().map(|n| (*n, false)).chain(html) {
        match obj.text(name).map_err(reject)? {
            Text::Present(text) => {
                let text = if is_html {
                    neardup::text::html_to_text(&text)
                } else {
                    text
                };
                fields.push((name.to_owned(), text));
            }
            Text::Absent => absent.push(format!("{name:?}")),
            other => empty.extend(other.describe_empty(name)),
        }
    }
    if fields.is_empty() {
        let absent = absent.join(", ");
        return Err(reject(match (empty.is_empty(), absent.is_empty()) {
            (true, _) => format!("missing text: none of the fields {absent} is present"),
            (false, true) => format!("empty text: {}", empty.join(", ")),
            (false, false) => format!(
                "empty text: {}, and none of the fields {absent} is present",
                empty.join(", ")
            ),
        }));
    }
    Ok(Record {
        id: id.clone().unwrap_or_else(line_id),
        fields,
        url: obj.string(&args.url_field).map_err(reject)?,
        host: obj.string(&args.host_field).map_err(reject)?,
        first_seen: obj.string(&args.time_field).map_err(reject)?,
        retention_class: obj.string(&args.class_field).map_err(reject)?,
        kept_members: obj.kept_members(line),
        object: Some(object),
        origin,
    })
}
