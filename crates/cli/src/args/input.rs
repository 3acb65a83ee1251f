//! Where documents come from and how they are laid out: `InputArgs` and its defaults.

use std::path::PathBuf;

use super::profile::CodeChoice;
use clap::{Args, ValueEnum};

/// Where documents come from and how they are laid out.
///
/// Commands that read input call [`InputArgs::resolve`] first: it settles the format (by the
/// files' names unless a flag says), checks that every named path can be opened and that
/// the JSON field flags apply.
#[derive(Debug, Args, Clone)]
pub struct InputArgs {
    /// Input files or directories; `-` or none reads standard input. Files named .jsonl,
    /// .ndjson or .json (one object a line) are JSON Lines, others one document per file;
    /// files ending in .gz or .zst are decompressed. A directory contributes every .txt,
    /// .html and .htm file below it, one document per file, named by its path (with JSON
    /// Lines input: its .jsonl, .ndjson and .json files); files it skips are named.
    #[arg(value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// How to read the input: `auto` (by the files' names, as above), `jsonl` (one JSON
    /// object a line), `lines` (one document a line) or `text` (one document a file).
    /// Default: auto.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<InputFormat>,
    /// One document per line: the same as --format lines.
    #[arg(long, conflicts_with_all = ["jsonl", "format"])]
    pub lines: bool,
    /// JSON Lines input, one object per line, whatever the files' names: the same as
    /// --format jsonl.
    #[arg(long, conflicts_with = "format")]
    pub jsonl: bool,
    /// Read input files as streams instead of mapping them into memory (plain files are
    /// mapped, which saves copying them; a mapped file must not be truncated while it is
    /// read).
    #[arg(long)]
    pub no_mmap: bool,
    /// JSONL field holding the record id (default `id`; a record without it is named by its
    /// line number).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_ID_FIELD)]
    pub id_field: String,
    /// JSONL field holding text, repeatable, in order (default: `title`, `description`,
    /// `body_text` and `text`, whichever are present).
    #[arg(long = "text-field", value_name = "NAME")]
    pub text_fields: Vec<String>,
    /// JSONL field holding raw HTML, repeatable: its visible text is extracted with an HTML
    /// parser (script, style, nav, header, footer and aside dropped; `<main>`/`<article>`
    /// preferred) and used as content after the text fields. Markup is never fingerprinted.
    #[arg(long = "html-field", value_name = "NAME")]
    pub html_fields: Vec<String>,
    /// JSONL field holding the source URL.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_URL_FIELD)]
    pub url_field: String,
    /// JSONL field holding the host (default: derived from the URL).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_HOST_FIELD)]
    pub host_field: String,
    /// JSONL field holding the first-seen time, RFC 3339 (records without it are stamped
    /// with the time they are processed).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_TIME_FIELD)]
    pub time_field: String,
    /// JSONL field holding the retention class the fingerprint inherits.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_CLASS_FIELD)]
    pub class_field: String,
    /// Weight of a field's shingles, as NAME=N (N >= 1), e.g. `--field-weight title=3`.
    #[arg(long = "field-weight", value_name = "NAME=N", value_parser = parse_field_weight)]
    pub field_weights: Vec<(String, u32)>,
    /// With `--features code`: the language whose source files are the documents of input
    /// directories (instead of .txt and .html files); with `auto`, every language's.
    #[arg(skip)]
    pub code_lang: Option<CodeChoice>,
}

/// The default of --id-field.
pub const DEFAULT_ID_FIELD: &str = "id";
/// The default of --url-field.
pub const DEFAULT_URL_FIELD: &str = "url";
/// The default of --host-field.
pub const DEFAULT_HOST_FIELD: &str = "host";
/// The default of --time-field.
pub const DEFAULT_TIME_FIELD: &str = "first_seen";
/// The default of --class-field.
pub const DEFAULT_CLASS_FIELD: &str = "retention_class";

/// How input is read (--format).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// By the files' names: .jsonl, .ndjson and .json (also .gz, .zst) are JSON Lines,
    /// anything else one document per file.
    Auto,
    /// JSON Lines: one object per line.
    Jsonl,
    /// One document per line.
    Lines,
    /// One document per file.
    Text,
}

impl InputArgs {
    /// Input of `files` in `format`, every other option at its default.
    pub fn for_files(files: Vec<PathBuf>, format: InputFormat) -> InputArgs {
        InputArgs {
            files,
            format: Some(format),
            lines: false,
            jsonl: false,
            no_mmap: false,
            id_field: DEFAULT_ID_FIELD.to_owned(),
            text_fields: Vec::new(),
            html_fields: Vec::new(),
            url_field: DEFAULT_URL_FIELD.to_owned(),
            host_field: DEFAULT_HOST_FIELD.to_owned(),
            time_field: DEFAULT_TIME_FIELD.to_owned(),
            class_field: DEFAULT_CLASS_FIELD.to_owned(),
            field_weights: Vec::new(),
            code_lang: None,
        }
    }

    /// The weight of a field's shingles.
    pub fn weight_of(&self, field: &str) -> u32 {
        self.field_weights
            .iter()
            .find(|(n, _)| n == field)
            .map_or(1, |(_, w)| *w)
    }
}

/// A `--field-weight` value: `NAME=N`, N a whole number of at least 1.
///
/// # Errors
/// Not `NAME=N`, or N not a whole number of at least 1.
pub fn parse_field_weight(s: &str) -> Result<(String, u32), String> {
    let (name, weight) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=N, got {s:?}"))?;
    let weight: u32 = weight
        .parse()
        .map_err(|_| format!("weight {weight:?} of field {name:?} is not a whole number"))?;
    if weight == 0 {
        return Err(format!("weight of field {name:?} must be at least 1"));
    }
    Ok((name.to_owned(), weight))
}
