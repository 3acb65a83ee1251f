//! Opening an input file: plain, gzip or zstd by its name, and why one cannot be opened.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// A file's extensions that say it is compressed (the readers take .gz and .zst; the
/// others are named in a reject).
pub(super) const COMPRESSED: [&str; 10] = [
    "gz", "zst", "bz2", "xz", "lz4", "lzma", "br", "z", "zip", "7z",
];

/// An I/O error's reason without the `(os error N)` the standard library appends.
pub(super) fn io_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_owned(),
        _ => text,
    }
}

/// Why an input could not be opened.
#[derive(Debug)]
pub(super) enum OpenError {
    /// The file could not be opened or its compressed stream not started.
    Io(io::Error),
    /// A compression the readers do not take.
    Unsupported(String),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Io(e) => write!(f, "cannot open: {}", io_reason(e)),
            OpenError::Unsupported(ext) => write!(
                f,
                "unknown compression .{ext}: use plain, .gz or .zst input"
            ),
        }
    }
}

/// How a file is compressed, by its name.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Compression {
    Plain,
    Gzip,
    Zstd,
    /// A compression the readers do not take (its extension).
    Unsupported(String),
}

pub(super) fn compression(path: &Path) -> Compression {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "gz" => Compression::Gzip,
        "zst" => Compression::Zstd,
        _ if COMPRESSED.contains(&ext.as_str()) => Compression::Unsupported(ext),
        _ => Compression::Plain,
    }
}

/// Opens an input for reading. No buffer of its own: lines are read in large blocks and
/// documents whole, and the decompressors buffer their compressed input themselves.
pub(super) fn open(path: &Path) -> Result<Box<dyn Read>, OpenError> {
    if path == Path::new("-") {
        return Ok(Box::new(io::stdin()));
    }
    let compression = compression(path);
    if let Compression::Unsupported(ext) = compression {
        return Err(OpenError::Unsupported(ext));
    }
    let file = File::open(path).map_err(OpenError::Io)?;
    Ok(match compression {
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(file)),
        Compression::Zstd => {
            Box::new(zstd::stream::read::Decoder::new(file).map_err(OpenError::Io)?)
        }
        Compression::Plain | Compression::Unsupported(_) => Box::new(file),
    })
}
