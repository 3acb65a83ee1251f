//! The walk over the inputs: named files, stdin and directories, handed on as [`Item`]s.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::discover::{is_html, reads_in_directory, walk};
use super::lines::{emit_mapped_lines, read_lines_in_blocks, BLOCK_BYTES};
use super::mmap::map_plain_file;
use super::open::{io_reason, open, OpenError};
use super::{Item, Origin, Record, Reject};
use crate::args::InputArgs;

/// Whether `bytes` (the start of a file read as plain text) look like JSON: the first byte
/// that is not white space (or a byte-order mark) is `{`.
pub(super) fn looks_like_json(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Warns, once per file and process (input is read twice by some commands), that `file`
/// is read as plain text though it looks like JSON Lines.
fn warn_json_read_as_text(file: &str, lines: bool) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let first = match WARNED.lock() {
        Ok(mut warned) => warned
            .get_or_insert_with(HashSet::new)
            .insert(file.to_owned()),
        Err(_) => true,
    };
    if first {
        let how = if lines {
            "one document per line"
        } else {
            "one document"
        };
        eprintln!(
            "neardup: warning: {file} starts with '{{' but is read as plain text ({how}): \
             pass --jsonl to read it as JSON Lines"
        );
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
/// A named input that cannot be opened (checked by [`InputArgs::resolve`] before, unless
/// it went since), or what `f` returns.
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
            read_directory(path, args, &mut f)?;
        } else {
            read_path(path, args, true, &mut f)?;
        }
    }
    Ok(())
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
        id: None,
        reason,
    })))
}

/// Reads the file at `path` (or stdin), `named` on the command line (an error when it
/// cannot be opened) or found in a directory (a reject then).
fn read_path(
    path: &Path,
    args: &InputArgs,
    named: bool,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let name = if path == Path::new("-") {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    };
    // A file of one document per line that looks like JSON Lines is named once, at its
    // first line.
    let mut unchecked = args.lines;
    let mut f = |item: Item| {
        if unchecked {
            if let Item::Line { file, bytes, .. } = &item {
                unchecked = false;
                if looks_like_json(bytes) {
                    warn_json_read_as_text(file, true);
                }
            }
        }
        f(item)
    };
    if (args.jsonl || args.lines) && !args.no_mmap {
        if let Some(map) = map_plain_file(path) {
            emit_mapped_lines(map, &name, BLOCK_BYTES, &mut f)?;
            return Ok(());
        }
    }
    let reader = match open(path) {
        Ok(r) => r,
        Err(OpenError::Io(e)) if named => {
            anyhow::bail!("cannot open input {name}: {}", io_reason(&e))
        }
        Err(e) => return reject_file(&name, e.to_string(), &mut f),
    };
    if args.jsonl || args.lines {
        read_lines_in_blocks(reader, &name, BLOCK_BYTES, &mut f)
    } else {
        let html = is_html(path);
        read_document(reader, name.clone(), name, html, &mut f)
    }
}

/// Reads the files below `dir` that it contributes ([`reads_in_directory`]), in order of
/// their paths: JSON Lines files line by line with JSON Lines input, else documents whole.
/// What cannot be opened or listed below it is a reject.
fn read_directory(
    dir: &Path,
    args: &InputArgs,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let (files, unreadable) = walk(dir);
    for (d, e) in unreadable {
        reject_file(
            &d.display().to_string(),
            format!("cannot read directory: {}", io_reason(&e)),
            f,
        )?;
    }
    for p in files {
        if !reads_in_directory(&p, args) {
            continue;
        }
        if args.jsonl {
            read_path(&p, args, false, f)?;
            continue;
        }
        let name = p.display().to_string();
        let id = p
            .strip_prefix(dir)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        match open(&p) {
            Ok(reader) => read_document(reader, name, id, is_html(&p), f)?,
            Err(e) => reject_file(&name, e.to_string(), f)?,
        }
    }
    Ok(())
}

fn read_document(
    mut reader: Box<dyn Read>,
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
            id: None,
            reason: format!("cannot read: {e}"),
        })));
    }
    if !html && looks_like_json(&bytes) {
        warn_json_read_as_text(&origin.file, false);
    }
    // Decoded (and HTML reduced to text) where the item is parsed, in parallel: here, on
    // the reader's thread, a directory of pages was read one page at a time.
    f(Item::Document {
        origin,
        id,
        html,
        bytes,
    })
}
