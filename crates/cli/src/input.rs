//! Input readers: plain-text files (a document per file or per line), JSON Lines (plain,
//! .gz or .zst) and directories of .txt/.html files.
//!
//! Readers stream: a record is handed on as soon as its line is read, and anything that
//! cannot be used becomes a [`Reject`] naming the file, the line and the reason, never an
//! abort.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

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
    /// The JSON object it was read from (JSONL only), for outputs that extend it.
    pub object: Option<Map<String, Value>>,
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

/// Calls `f` with every record or reject of the inputs, in order.
///
/// # Errors
/// Only what `f` returns: unreadable files and bad lines are rejects.
pub fn for_each(
    args: &InputArgs,
    mut f: impl FnMut(Result<Record, Reject>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for_each_item(args, |item| f(item.parse(args)))
}

/// Like [`for_each`], but hands lines over unparsed, so the caller can parse them in
/// parallel with [`Item::parse`].
///
/// # Errors
/// Only what `f` returns.
pub fn for_each_item(
    args: &InputArgs,
    mut f: impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let stdin = [PathBuf::from("-")];
    let paths: &[PathBuf] = if args.files.is_empty() {
        &stdin
    } else {
        &args.files
    };
    for path in paths {
        if path.is_dir() {
            read_directory(path, &mut f)?;
        } else {
            read_path(path, args, &mut f)?;
        }
    }
    Ok(())
}

/// Total bytes of the named regular files (for a progress bar); `None` with stdin.
pub fn total_bytes(args: &InputArgs) -> Option<u64> {
    if args.files.is_empty() || args.files.iter().any(|p| p == Path::new("-")) {
        return None;
    }
    let mut total = 0;
    let mut stack: Vec<PathBuf> = args.files.clone();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()));
            }
        } else if let Ok(m) = std::fs::metadata(&p) {
            total += m.len();
        }
    }
    Some(total)
}

fn reject_file(
    name: &str,
    reason: String,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    f(Item::Done(Err(Reject {
        origin: Origin {
            file: name.to_owned(),
            line: None,
        },
        reason,
    })))
}

fn open(path: &Path) -> Result<Box<dyn BufRead>, String> {
    if path == Path::new("-") {
        return Ok(Box::new(BufReader::new(io::stdin())));
    }
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    Ok(match ext.as_str() {
        "gz" => Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::read::MultiGzDecoder::new(file),
        )),
        "zst" => Box::new(BufReader::with_capacity(
            1 << 16,
            zstd::stream::read::Decoder::new(file).map_err(|e| format!("cannot open: {e}"))?,
        )),
        "bz2" | "xz" | "lz4" | "lzma" | "br" | "z" | "zip" | "7z" => {
            return Err(format!(
                "unknown compression .{ext}: use plain, .gz or .zst input"
            ))
        }
        _ => Box::new(BufReader::with_capacity(1 << 18, file)),
    })
}

fn read_path(
    path: &Path,
    args: &InputArgs,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let name = if path == Path::new("-") {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    };
    let reader = match open(path) {
        Ok(r) => r,
        Err(reason) => return reject_file(&name, reason, f),
    };
    if args.jsonl || args.lines {
        read_lines(reader, &name, f)
    } else {
        let html = is_html(path);
        read_document(reader, name.clone(), name, html, f)
    }
}

fn is_html(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("html" | "htm")
    )
}

fn read_directory(
    dir: &Path,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) => {
                reject_file(
                    &d.display().to_string(),
                    format!("cannot read directory: {e}"),
                    f,
                )?;
                continue;
            }
        };
        for e in entries.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension()
                    .and_then(|e| e.to_str())
                    .map(str::to_ascii_lowercase)
                    .as_deref(),
                Some("txt" | "html" | "htm")
            ) {
                files.push(p);
            }
        }
    }
    files.sort();
    for p in files {
        let name = p.display().to_string();
        let id = p
            .strip_prefix(dir)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        match open(&p) {
            Ok(reader) => read_document(reader, name, id, is_html(&p), f)?,
            Err(reason) => reject_file(&name, reason, f)?,
        }
    }
    Ok(())
}

fn read_document(
    mut reader: Box<dyn BufRead>,
    name: String,
    id: String,
    html: bool,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let origin = Origin {
        file: name,
        line: None,
    };
    let mut bytes = Vec::new();
    if let Err(e) = reader.read_to_end(&mut bytes) {
        return f(Item::Done(Err(Reject {
            origin,
            reason: format!("cannot read: {e}"),
        })));
    }
    match String::from_utf8(bytes) {
        Ok(text) => {
            let (field, text) = if html {
                ("html", neardup::text::html_to_text(&text))
            } else {
                ("text", text)
            };
            f(Item::Done(Ok(Record {
                origin,
                id,
                fields: vec![(field.to_owned(), text)],
                url: None,
                host: None,
                first_seen: None,
                retention_class: None,
                object: None,
            })))
        }
        Err(e) => f(Item::Done(Err(Reject {
            origin,
            reason: invalid_utf8(e.utf8_error()),
        }))),
    }
}

fn invalid_utf8(e: std::str::Utf8Error) -> String {
    // Lines are read as bytes and checked here, so the error names the line's own offset.
    format!("invalid UTF-8 at byte {}", e.valid_up_to())
}

fn read_lines(
    mut reader: Box<dyn BufRead>,
    name: &str,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut line_no = 0u64;
    let file: std::sync::Arc<str> = std::sync::Arc::from(name);
    loop {
        let mut buf = Vec::new();
        match read_line(&mut *reader, &mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) => {
                return f(Item::Done(Err(Reject {
                    origin: Origin {
                        file: file.to_string(),
                        line: Some(line_no + 1),
                    },
                    reason: format!("cannot read: {e}"),
                })))
            }
        }
        line_no += 1;
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue; // a blank line is no record
        }
        f(Item::Line {
            file: file.clone(),
            line: line_no,
            bytes: buf,
        })?;
    }
}

/// Reads one line (with its `\n`, if any) into `buf` like [`BufRead::read_until`], but a line
/// that lies whole in the reader's buffer is copied once into an exactly sized vector instead
/// of growing `buf` by doubling.
fn read_line(reader: &mut dyn BufRead, buf: &mut Vec<u8>) -> io::Result<usize> {
    let available = loop {
        match reader.fill_buf() {
            Ok(b) => break b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    match memchr::memchr(b'\n', available) {
        Some(i) => {
            buf.reserve_exact(i + 1);
            buf.extend_from_slice(&available[..=i]);
            reader.consume(i + 1);
            Ok(i + 1)
        }
        None => reader.read_until(b'\n', buf),
    }
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
        bytes: Vec<u8>,
    },
    /// A finished record or reject.
    Done(Result<Record, Reject>),
}

impl Item {
    /// The record or reject this item stands for.
    pub fn parse(self, args: &InputArgs) -> Result<Record, Reject> {
        match self {
            Item::Done(r) => r,
            Item::Line { file, line, bytes } => {
                let origin = Origin {
                    file: file.to_string(),
                    line: Some(line),
                };
                let text = match String::from_utf8(bytes) {
                    Ok(s) => s,
                    Err(e) => {
                        return Err(Reject {
                            origin,
                            reason: invalid_utf8(e.utf8_error()),
                        })
                    }
                };
                if args.jsonl {
                    parse_json_record(&text, origin, args)
                } else {
                    Ok(Record {
                        origin,
                        id: line.to_string(),
                        fields: vec![("text".to_owned(), text)],
                        url: None,
                        host: None,
                        first_seen: None,
                        retention_class: None,
                        object: None,
                    })
                }
            }
        }
    }
}

fn optional_string(
    obj: &Map<String, Value>,
    field: &str,
    reject: &dyn Fn(String) -> Reject,
) -> Result<Option<String>, Reject> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(reject(format!(
            "field {field:?} must be a string, not {}",
            kind(other)
        ))),
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
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
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
        if let Some(text) = optional_string(&obj, name, &reject)? {
            fields.push(((*name).to_owned(), text));
        }
    }
    for name in &args.html_fields {
        if let Some(html) = optional_string(&obj, name, &reject)? {
            fields.push((name.clone(), neardup::text::html_to_text(&html)));
        }
    }
    if fields.is_empty() {
        let all: Vec<String> = named
            .iter()
            .map(|n| format!("{n:?}"))
            .chain(args.html_fields.iter().map(|n| format!("{n:?}")))
            .collect();
        return Err(reject(format!(
            "missing text: none of the fields {} is present",
            all.join(", ")
        )));
    }
    Ok(Record {
        id,
        fields,
        url: optional_string(&obj, &args.url_field, &reject)?,
        host: optional_string(&obj, &args.host_field, &reject)?,
        first_seen: optional_string(&obj, &args.time_field, &reject)?,
        retention_class: optional_string(&obj, &args.class_field, &reject)?,
        object: Some(obj),
        origin,
    })
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

/// The host of a JSONL line (its host field, else its URL's host), read without building the
/// whole object: the boilerplate pass needs only this for the pages it does not sample.
pub fn probe_host(bytes: &[u8], args: &InputArgs) -> Option<String> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

    struct Probe<'a> {
        url_field: &'a str,
        host_field: &'a str,
    }
    impl<'de> Visitor<'de> for Probe<'_> {
        type Value = (Option<String>, Option<String>);
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let (mut url, mut host) = (None, None);
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == self.host_field {
                    host = map.next_value::<Option<String>>().ok().flatten();
                } else if key == self.url_field {
                    url = map.next_value::<Option<String>>().ok().flatten();
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok((url, host))
        }
    }
    impl<'de> DeserializeSeed<'de> for Probe<'_> {
        type Value = (Option<String>, Option<String>);
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let (url, host) = Probe {
        url_field: &args.url_field,
        host_field: &args.host_field,
    }
    .deserialize(&mut de)
    .ok()?;
    host.map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .or_else(|| url.as_deref().and_then(neardup::record::host_of))
}
