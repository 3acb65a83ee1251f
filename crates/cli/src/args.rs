//! Command-line arguments (clap derive): global structure and options shared by subcommands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Find near-duplicate text at scale with SimHash.
#[derive(Debug, Parser)]
#[command(name = "neardup", version, about, long_about = None, propagate_version = true, after_help = crate::exit::TABLE)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the SimHash fingerprint of each document.
    ///
    /// Reads plain-text files (one document per file, or per line with --lines) or JSON Lines
    /// (files named .jsonl, .ndjson or .json, or --jsonl) and writes one line per document: its id (file name, line number or the
    /// --id-field value) and the fingerprint as 16 (or 32) lowercase hex digits, separated by
    /// a tab. A document that cannot be read or has no words is reported on stderr with its
    /// file and line; the others are still printed, and the exit code is then 2.
    Fingerprint(crate::cmd::fingerprint::FingerprintArgs),
    /// Build an IDF table (shingle document frequencies) from a corpus, for --weighting idf.
    Idf(crate::cmd::idf::IdfArgs),
    /// Deduplicate records against each other and everything in the store (the main job).
    ///
    /// Reads JSON Lines (files named .jsonl, .ndjson or .json, plain, .gz or .zst; or
    /// --jsonl), plain-text files (a document per file, or per line with --lines) or
    /// directories of .txt and .html files (of JSON Lines files with JSON Lines input). Exact duplicates are caught first by a content hash; records of at least
    /// --min-words words then get SimHash candidates within --max-distance bits, verified by
    /// the exact Jaccard similarity of their shingles (--min-jaccard). Writes kept.jsonl,
    /// clusters.jsonl, merges.jsonl, rejects.jsonl and report.json to --out, and keeps
    /// everything in --store so the next run deduplicates against it.
    #[command(after_help = crate::exit::TABLE)]
    Dedup(crate::cmd::dedup::DedupArgs),
    /// Find stored near duplicates of a text; exit 0 when one is found, 1 when none.
    Query(crate::cmd::query::QueryArgs),
    /// Erase records: their fingerprints, index entries and shingles go, and the merge log
    /// keeps nothing of them.
    Erase(crate::cmd::erase::EraseArgs),
    /// Erase every record of a retention class first seen before a time.
    Expire(crate::cmd::erase::ExpireArgs),
    /// Re-decide past merges under new thresholds from their stored scores (no
    /// fingerprint is recomputed); prints what would change, --apply applies it.
    Reevaluate(crate::cmd::review::ReevaluateArgs),
    /// A sample of merges near the Jaccard threshold, as CSV, for people to check.
    Review(crate::cmd::review::ReviewArgs),
    /// Thresholds from evidence: precision, recall and F1 of labelled pairs per radius and
    /// Jaccard threshold, the recommended pair and the index layout it needs.
    Tune(crate::cmd::tune::TuneArgs),
    /// Sample pairs of a corpus, spread over fingerprint distances, into a file to label for
    /// `neardup tune`.
    Label(crate::cmd::label::LabelArgs),
    /// Pairwise precision, recall and F1 of a dedup run against labelled truth pairs.
    Eval(crate::cmd::eval::EvalArgs),
    /// Why two records are or are not near-duplicates; exit 0 when they are, 1 when not.
    Explain(crate::cmd::explain::ExplainArgs),
    /// Index layouts that answer a radius exactly for a collection size, with their costs.
    Plan(crate::cmd::plan::PlanArgs),
    /// Serve the store over HTTP: insert and query records one at a time or in batches,
    /// with the decisions of `dedup`, durably, for many concurrent clients.
    ///
    /// JSON API under /v1 (records, query, clusters, merges; OpenAPI at /v1/openapi.json),
    /// /healthz and Prometheus /metrics. Listens on loopback unless --listen says otherwise.
    /// Stops cleanly on SIGTERM or Ctrl-C, after answering the requests in flight.
    Serve(crate::cmd::serve::ServeArgs),
}

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

fn parse_field_weight(s: &str) -> Result<(String, u32), String> {
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

/// The fingerprint profile.
#[derive(Debug, Args, Clone)]
pub struct ProfileArgs {
    /// Feature hash: `xxh3` (fast, default) or `blake2b` (bit-for-bit the Python reference
    /// `simhash(text)` of seed 000, for stores made by that pipeline).
    #[arg(long, value_enum, default_value_t = ProfileName::Xxh3)]
    pub profile: ProfileName,
    /// Words per shingle.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub shingle_width: usize,
    /// Fingerprint width in bits: 64 or 128.
    #[arg(long, value_name = "BITS", default_value_t = 64, value_parser = parse_bits)]
    pub bits: u32,
    /// Shingle weighting: `tf` (each occurrence votes), `presence` (each distinct shingle
    /// once) or `idf` (needs --idf).
    #[arg(long, value_enum, default_value_t = WeightingName::Tf)]
    pub weighting: WeightingName,
    /// IDF table made by `neardup idf`, for --weighting idf.
    #[arg(long, value_name = "FILE")]
    pub idf: Option<PathBuf>,
    /// Tokens: `words` (Unicode words; Han, kana and Thai one per character, so shingles are
    /// character n-grams there), `jieba` (Chinese segmented into words) or `chars` (character
    /// n-grams everywhere).
    #[arg(long, value_enum, default_value_t = TokensName::Words)]
    pub tokens: TokensName,
    /// Give shingles made only of stopwords (of each record's detected language) weight 0.
    #[arg(long)]
    pub stopwords: bool,
}

/// Token rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TokensName {
    /// Unicode words.
    Words,
    /// Chinese words by jieba.
    Jieba,
    /// Characters.
    Chars,
}

fn parse_bits(s: &str) -> Result<u32, String> {
    match s {
        "64" => Ok(64),
        "128" => Ok(128),
        _ => Err(format!("fingerprints have 64 or 128 bits, not {s:?}")),
    }
}

/// Thresholds of the near-duplicate rule, and the memory its verification may use.
#[derive(Debug, Args, Clone)]
pub struct RuleArgs {
    /// SimHash candidates are stored records within this many bits (of 64). The default is
    /// measured: pairs with Jaccard >= 0.8 sit up to 9..14 bits apart on real pages.
    #[arg(long, value_name = "BITS", default_value_t = neardup::pipeline::DEFAULT_MAX_DISTANCE)]
    pub max_distance: u32,
    /// A candidate is a near-duplicate when the Jaccard similarity of the shingle sets is at
    /// least this.
    #[arg(long, value_name = "J", default_value_t = neardup::pipeline::DEFAULT_MIN_JACCARD)]
    pub min_jaccard: f64,
    /// A record joins a cluster only if its Jaccard with every member is at least this (and
    /// at least --min-jaccard with the one it matched and with --cluster-quorum of them):
    /// stops chains of near-duplicates from putting dissimilar records together. 0 (with
    /// --cluster-quorum 0) joins on the best match alone.
    #[arg(long, value_name = "J", default_value_t = neardup::pipeline::DEFAULT_MIN_CLUSTER_JACCARD)]
    pub min_cluster_jaccard: f64,
    /// A record joins a cluster only if it verifies (--min-jaccard) against at least this
    /// share of the members, copies counted (clusters fuse when this share of their pairs
    /// across verifies): 1 is complete linkage at --min-jaccard, 0 leaves it to
    /// --min-cluster-jaccard. The default, with --min-cluster-jaccard 0.74, is measured on
    /// both quality benches.
    #[arg(long, value_name = "SHARE", default_value_t = neardup::pipeline::DEFAULT_CLUSTER_QUORUM)]
    pub cluster_quorum: f64,
    /// How verified pairs make clusters: `single` joins a record to its best verified match
    /// and fuses every cluster it verified against (connected components, as MinHash LSH
    /// pipelines do: every verified pair is found, and a chain A~B~C puts A and C together
    /// however unlike they are; the report counts such pairs); `guarded` joins only where
    /// --min-cluster-jaccard and --cluster-quorum hold (no chains, some verified pairs kept
    /// apart).
    #[arg(long, value_enum, default_value_t = LinkageName::from(neardup::pipeline::DEFAULT_LINKAGE))]
    pub linkage: LinkageName,
    /// With --linkage single: a join or a fusion that would put two records under this
    /// Jaccard in one cluster is refused, so a chain of near-duplicates stops before it
    /// holds a pair that is no duplicate at all. 0 makes clusters the pure connected
    /// components (nothing measured; the input's order then changes no cluster).
    #[arg(long, value_name = "J", default_value_t = neardup::pipeline::DEFAULT_CHAIN_FLOOR)]
    pub chain_floor: f64,
    /// Records with fewer words are short: word SimHash of a handful of words is unstable.
    #[arg(long, value_name = "WORDS", default_value_t = neardup::pipeline::DEFAULT_MIN_WORDS)]
    pub min_words: usize,
    /// Short records: `chars` compares character n-grams (measured: F1 0.98 on light edits
    /// of real short texts), `exact` only exact normalised text (F1 0.31).
    #[arg(long, value_enum, default_value_t = ShortTextName::Chars)]
    pub short_text: ShortTextName,
    /// Characters per n-gram for short records.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub short_ngram: usize,
    /// Candidate radius in bits for short records.
    #[arg(long, value_name = "BITS", default_value_t = 16)]
    pub short_max_distance: u32,
    /// Jaccard threshold over character n-grams for short records.
    #[arg(long, value_name = "J", default_value_t = 0.7)]
    pub short_min_jaccard: f64,
    /// Memory for verification sets read back from the store, kept for the next candidate
    /// that needs them (a cluster's members are checked by every record that joins it).
    /// 0 keeps none.
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_cache_size)]
    pub set_cache: u64,
}

impl RuleArgs {
    /// The library rule.
    pub fn rule(&self) -> neardup::Rule {
        let short_text = match self.short_text {
            ShortTextName::Exact => neardup::pipeline::ShortText::ExactOnly,
            ShortTextName::Chars => neardup::pipeline::ShortText::CharNgrams {
                width: self.short_ngram,
                max_distance: self.short_max_distance,
                min_jaccard: self.short_min_jaccard,
            },
        };
        neardup::Rule {
            max_distance: self.max_distance,
            min_jaccard: self.min_jaccard,
            min_words: self.min_words,
            min_cluster_jaccard: self.min_cluster_jaccard,
            cluster_quorum: self.cluster_quorum,
            short_text,
            chain_floor: self.chain_floor,
            linkage: match self.linkage {
                LinkageName::Single => neardup::pipeline::Linkage::Single,
                LinkageName::Guarded => neardup::pipeline::Linkage::Guarded,
            },
            ..neardup::Rule::default()
        }
    }
}

/// Linkages (see [`neardup::pipeline::Linkage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinkageName {
    /// Connected components of verified pairs.
    Single,
    /// Joins only where --min-cluster-jaccard and --cluster-quorum hold.
    Guarded,
}

impl From<neardup::pipeline::Linkage> for LinkageName {
    fn from(l: neardup::pipeline::Linkage) -> Self {
        match l {
            neardup::pipeline::Linkage::Single => LinkageName::Single,
            neardup::pipeline::Linkage::Guarded => LinkageName::Guarded,
        }
    }
}

/// Short-text policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShortTextName {
    /// Exact normalised comparison only.
    Exact,
    /// Character n-gram SimHash and Jaccard.
    Chars,
}

/// Feature-hash profile names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileName {
    /// xxh3 token hashes combined per shingle.
    Xxh3,
    /// blake2b of the shingle text (seed 000 compatible).
    Blake2b,
}

/// Weighting names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightingName {
    /// Term frequency.
    Tf,
    /// Presence.
    Presence,
    /// Inverse document frequency.
    Idf,
}

/// A size in bytes: a number with an optional unit (`24GiB`, `512 MB`, `1e9`).
///
/// # Errors
/// Not a positive number with a known unit.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 24GiB, 512MB)"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" => 1e12,
        "tib" => 1024f64.powi(4),
        other => return Err(format!("unknown unit {other:?} in {s:?}")),
    };
    if v.is_nan() || v <= 0.0 {
        return Err(format!("{s:?} must be positive"));
    }
    Ok((v * mult).round() as u64)
}

/// A cache size: 0 or a [`parse_size`] size.
fn parse_cache_size(s: &str) -> Result<u64, String> {
    if s.trim() == "0" {
        Ok(0)
    } else {
        parse_size(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_and_zero_turns_the_cache_off() {
        assert_eq!(parse_cache_size("0"), Ok(0));
        assert_eq!(parse_cache_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_cache_size("1 GB"), Ok(1_000_000_000));
        assert!(parse_cache_size("-1").is_err());
        assert!(parse_cache_size("lots").is_err());
        let cli = Cli::try_parse_from(["neardup", "query", "--text", "x", "--set-cache", "0"])
            .expect("parses");
        let Command::Query(q) = cli.command else {
            panic!("a query");
        };
        assert_eq!(q.rule.set_cache, 0);
    }
}
