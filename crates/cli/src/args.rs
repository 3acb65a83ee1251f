//! Command-line arguments (clap derive): global structure and options shared by subcommands.

use clap::{Parser, Subcommand};

mod input;
mod profile;
mod rule;
mod scoring;
mod semantic;
mod size;

pub use self::input::{
    parse_field_weight, InputArgs, InputFormat, DEFAULT_CLASS_FIELD, DEFAULT_HOST_FIELD,
    DEFAULT_ID_FIELD, DEFAULT_TIME_FIELD, DEFAULT_URL_FIELD,
};
pub use self::profile::{
    CodeChoice, FeaturesName, ProfileArgs, ProfileName, TokensName, WeightingName,
};
pub use self::rule::{LinkageName, RuleArgs, ShortTextName};
pub use self::scoring::ScoringArgs;
pub use self::semantic::{load_model, SemanticArgs};
pub use self::size::parse_size;

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
    /// Watchlists of known content (content farms, leaked or banned text): `watch add`
    /// fills one; `query`, `dedup` and `serve` check records against it with
    /// --watchlist and raise alerts graded by distance.
    Watch(crate::cmd::watch::WatchCmdArgs),
}
