//! Which format the input is read in, and which files below named directories are read.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::open::{io_reason, COMPRESSED};
use crate::args::{
    CodeChoice, InputArgs, InputFormat, DEFAULT_CLASS_FIELD, DEFAULT_HOST_FIELD, DEFAULT_ID_FIELD,
    DEFAULT_TIME_FIELD, DEFAULT_URL_FIELD,
};

/// Whether `path` is named as a JSON Lines file: .jsonl, .ndjson or .json, compressed or not.
pub fn is_jsonl_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let name = name.to_ascii_lowercase();
    let inner = match name.rsplit_once('.') {
        Some((stem, ext)) if COMPRESSED.contains(&ext) => stem,
        _ => &name,
    };
    matches!(
        inner.rsplit_once('.'),
        Some((stem, "jsonl" | "ndjson" | "json")) if !stem.is_empty()
    )
}

/// How a format reads, for messages.
fn describe(format: InputFormat) -> &'static str {
    match format {
        InputFormat::Jsonl => "JSON Lines",
        InputFormat::Lines => "one document per line (--lines)",
        InputFormat::Text | InputFormat::Auto => "one document per file",
    }
}

impl InputArgs {
    /// Settles how the input is read, before any of it is: `--format`, `--jsonl` or
    /// `--lines` when given, else JSON Lines when every named file is named so (.jsonl,
    /// .ndjson, .json, compressed or not; with only directories named, when they hold such
    /// files and no .txt or .html), else one document per file. Sets `format` to the format
    /// and `jsonl`/`lines` to match, so calling it again changes nothing.
    ///
    /// # Errors
    /// A named file or directory that does not exist or cannot be opened (named, with the
    /// system's reason); named files of both kinds without a flag (the message says which
    /// flag to pass); a JSON field flag (`--id-field`, `--text-field`, ...) with input that
    /// is not JSON Lines.
    pub fn resolve(&mut self) -> anyhow::Result<()> {
        let named: Vec<&PathBuf> = self.files.iter().filter(|p| *p != Path::new("-")).collect();
        for path in &named {
            check_openable(path)?;
        }
        let format = match (self.format, self.jsonl, self.lines) {
            (_, true, _) => InputFormat::Jsonl,
            (_, _, true) => InputFormat::Lines,
            (Some(f), ..) if f != InputFormat::Auto => f,
            _ => self.detect_format(&named)?,
        };
        self.format = Some(format);
        self.jsonl = format == InputFormat::Jsonl;
        self.lines = format == InputFormat::Lines;
        if !self.jsonl {
            if let Some(flag) = self.json_field_flag() {
                anyhow::bail!(
                    "{flag} names a JSON field, but the input is read as {}: pass --jsonl to \
                     read it as JSON Lines",
                    describe(format)
                );
            }
        }
        Ok(())
    }

    /// The format of `--format auto` for the named paths.
    fn detect_format(&self, named: &[&PathBuf]) -> anyhow::Result<InputFormat> {
        let files: Vec<&PathBuf> = named.iter().copied().filter(|p| !p.is_dir()).collect();
        let jsonl = files.iter().find(|p| is_jsonl_name(p));
        let other = files.iter().find(|p| !is_jsonl_name(p));
        match (jsonl, other) {
            (Some(j), Some(o)) => anyhow::bail!(
                "the input mixes JSON Lines ({}) and other files ({}): pass --jsonl to read \
                 every file as JSON Lines, or --format text (one document per file) or \
                 --lines (one per line) to read every file as text",
                j.display(),
                o.display()
            ),
            (Some(_), None) => return Ok(InputFormat::Jsonl),
            (None, Some(_)) => return Ok(InputFormat::Text),
            (None, None) => {}
        }
        // Only directories (or stdin): JSON Lines when they hold JSON Lines and no document.
        let below: Vec<PathBuf> = named.iter().flat_map(|dir| walk(dir).0).collect();
        let has_jsonl = below.iter().any(|p| is_jsonl_name(p));
        let has_documents = below.iter().any(|p| is_document(p, self.code_lang));
        Ok(if has_jsonl && !has_documents {
            InputFormat::Jsonl
        } else {
            InputFormat::Text
        })
    }

    /// The first JSON field flag given (set to something other than its default), as
    /// written on the command line.
    fn json_field_flag(&self) -> Option<String> {
        let named = [
            ("--id-field", &self.id_field, DEFAULT_ID_FIELD),
            ("--url-field", &self.url_field, DEFAULT_URL_FIELD),
            ("--host-field", &self.host_field, DEFAULT_HOST_FIELD),
            ("--time-field", &self.time_field, DEFAULT_TIME_FIELD),
            ("--class-field", &self.class_field, DEFAULT_CLASS_FIELD),
        ];
        self.text_fields
            .first()
            .map(|f| format!("--text-field {f}"))
            .or_else(|| {
                self.html_fields
                    .first()
                    .map(|f| format!("--html-field {f}"))
            })
            .or_else(|| {
                named
                    .iter()
                    .find(|(_, value, default)| value.as_str() != *default)
                    .map(|(flag, value, _)| format!("{flag} {value}"))
            })
    }

    /// These arguments resolved ([`InputArgs::resolve`]), as a copy.
    ///
    /// # Errors
    /// As [`InputArgs::resolve`].
    pub fn resolved(&self) -> anyhow::Result<InputArgs> {
        let mut args = self.clone();
        args.resolve()?;
        Ok(args)
    }
}

/// An error unless `path` (named on the command line) can be opened: a file read, a
/// directory listed.
fn check_openable(path: &Path) -> anyhow::Result<()> {
    let opened = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => std::fs::read_dir(path).map(drop),
        Ok(_) => File::open(path).map(drop),
        Err(e) => Err(e),
    };
    opened.map_err(|e| anyhow::anyhow!("cannot open input {}: {}", path.display(), io_reason(&e)))
}

/// The files below the named directories that the readers do not read (not documents, or
/// not JSON Lines with JSON Lines input), sorted. Call it on resolved arguments.
pub fn skipped_files(args: &InputArgs) -> Vec<PathBuf> {
    let mut skipped: Vec<PathBuf> = args
        .files
        .iter()
        .filter(|p| p.is_dir())
        .flat_map(|dir| walk(dir).0)
        .filter(|p| !reads_in_directory(p, args))
        .collect();
    skipped.sort();
    skipped
}

/// A one-line note on the files [`skipped_files`] found (`None` when there are none): how
/// many, the first few by name, and which flag reads the JSON Lines among them.
pub fn skipped_note(skipped: &[PathBuf], args: &InputArgs) -> Option<String> {
    const NAMED: usize = 3;
    if skipped.is_empty() {
        return None;
    }
    let mut names: Vec<String> = skipped
        .iter()
        .take(NAMED)
        .map(|p| p.display().to_string())
        .collect();
    if skipped.len() > NAMED {
        names.push(format!("and {} more", skipped.len() - NAMED));
    }
    let code;
    let read = match (args.jsonl, args.code_lang) {
        (true, _) => ".jsonl, .ndjson and .json files are read",
        (false, Some(CodeChoice::Lang(lang))) => {
            code = format!("{} source files are read, by --features code", lang.name());
            &code
        }
        (false, Some(CodeChoice::Auto)) => {
            "source files of every language code mode parses are read, by --code-lang auto"
        }
        (false, None) => ".txt, .html and .htm files are read",
    };
    let hint = if !args.jsonl && skipped.iter().any(|p| is_jsonl_name(p)) {
        "; pass --jsonl to read the JSON Lines files instead"
    } else {
        ""
    };
    Some(format!(
        "skipped {} file{} in input directories ({read}{hint}): {}",
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" },
        names.join(", ")
    ))
}

/// Prints [`skipped_note`] on stderr, if there is one.
pub fn print_skipped_note(args: &InputArgs) {
    if let Some(note) = skipped_note(&skipped_files(args), args) {
        eprintln!("neardup: {note}");
    }
}

/// Total bytes of the files the input is read from (for a progress bar and the report): the
/// named files, and the documents of named directories; `None` with stdin.
pub fn total_bytes(args: &InputArgs) -> Option<u64> {
    if args.files.is_empty() || args.files.iter().any(|p| p == Path::new("-")) {
        return None;
    }
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut total = 0;
    for p in &args.files {
        if p.is_dir() {
            let (files, _) = walk(p);
            total += files
                .iter()
                .filter(|f| reads_in_directory(f, args))
                .map(|f| size(f))
                .sum::<u64>();
        } else {
            total += size(p);
        }
    }
    Some(total)
}

/// Whether a file in a directory is a document the directory reader reads as one: a source
/// file of `code`'s language (C headers count for C++), or else text and HTML.
fn is_document(p: &Path, code: Option<CodeChoice>) -> bool {
    match code {
        Some(choice) => choice.reads(&p.to_string_lossy()),
        None => is_html(p) || extension(p).as_deref() == Some("txt"),
    }
}

/// Whether the directory reader reads a file below a named directory: JSON Lines files
/// with JSON Lines input, documents otherwise.
pub(super) fn reads_in_directory(p: &Path, args: &InputArgs) -> bool {
    if args.jsonl {
        is_jsonl_name(p)
    } else {
        is_document(p, args.code_lang)
    }
}

/// The files below `dir`, and the directories below it that could not be listed.
pub(super) fn walk(dir: &Path) -> (Vec<PathBuf>, Vec<(PathBuf, io::Error)>) {
    let (mut files, mut unreadable) = (Vec::new(), Vec::new());
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        match std::fs::read_dir(&d) {
            Ok(entries) => {
                for e in entries.filter_map(|e| e.ok()) {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else {
                        files.push(p);
                    }
                }
            }
            Err(e) => unreadable.push((d, e)),
        }
    }
    files.sort();
    (files, unreadable)
}

pub(super) fn is_html(path: &Path) -> bool {
    matches!(extension(path).as_deref(), Some("html" | "htm"))
}

/// A file's extension, lowercase.
fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}
