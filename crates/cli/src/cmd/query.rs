//! `neardup query`: near duplicates of a text among stored records.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use neardup::{Record, TextField};

use crate::args::{InputArgs, InputFormat, ScoringArgs};
use crate::cmd::watch::WatchArgs;
use crate::input;

/// Arguments of `neardup query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The store to search (default: neardup.db; with --watchlist, none unless given).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// The text to look up.
    #[arg(long, value_name = "TEXT", conflicts_with = "file")]
    pub text: Option<String>,
    /// A file whose content is the text to look up (.html files are reduced to their text;
    /// a file named .jsonl, .ndjson or .json holds one JSON object, whose text fields are
    /// looked up).
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// How to read --file: `auto` (by its name, as above), `jsonl` (one JSON object) or
    /// `text` (the whole file). Default: auto.
    #[arg(long, value_enum, value_name = "FORMAT", requires = "file")]
    pub format: Option<InputFormat>,
    /// Print JSON instead of a table: the matches as an array, or with --watchlist an
    /// object with `matches` (when a store is searched) and `alerts`.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub scoring: ScoringArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
}

/// Exit codes like grep's: 0 when something matched (a stored record or, with --watchlist,
/// an alert), 1 when nothing did.
pub fn run(args: &QueryArgs) -> anyhow::Result<ExitCode> {
    let fields = match (&args.text, &args.file) {
        (Some(t), None) => vec![("text".to_owned(), t.clone())],
        (None, Some(f)) => fields_of_file(f, args.format.unwrap_or(InputFormat::Auto))?,
        _ => bail!("give the text to look up with --text or --file"),
    };
    let store = match (&args.store, &args.watch.watchlist) {
        (Some(store), _) => Some(store.clone()),
        (None, None) => Some(PathBuf::from("neardup.db")),
        (None, Some(_)) => None,
    };
    if let Some(store) = &store {
        if !super::is_redis_url(store) && !store.exists() {
            bail!(
                "store {} does not exist: run `neardup dedup` first",
                store.display()
            );
        }
    }
    let watchlist = args.watch.open(&args.scoring.profile, None)?;
    let mut record = Record::new("<query>", String::new());
    record.fields = fields
        .into_iter()
        .map(|(name, text)| TextField {
            name,
            text,
            weight: 1,
        })
        .collect();
    let alerts = match &watchlist {
        Some(w) => Some(w.check(&record)?),
        None => None,
    };
    let mut hits = Vec::new();
    let mut rows = Vec::new();
    if let Some(store) = &store {
        let deduper = super::open_deduper(store, &args.scoring.profile, &args.scoring.rule, 0)
            .with_context(|| format!("opening store {}", store.display()))?;
        hits = deduper.query(&record)?;
        rows = hits
            .iter()
            .map(|(id, s)| {
                let survivor = deduper.cluster_of(id).map(|c| c.survivor);
                (id.clone(), *s, survivor)
            })
            .collect();
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let matches: Vec<serde_json::Value> = rows
            .iter()
            .map(|(id, s, survivor)| {
                serde_json::json!({"id": id, "distance": s.distance, "jaccard": s.jaccard,
                    "survivor": survivor})
            })
            .collect();
        let value = match &alerts {
            None => serde_json::json!(matches),
            Some(alerts) => {
                let mut object = serde_json::json!({ "alerts": alerts });
                if store.is_some() {
                    object["matches"] = serde_json::json!(matches);
                }
                object
            }
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        if !rows.is_empty() {
            writeln!(
                out,
                "{:<40} {:>8} {:>8}  survivor",
                "id", "distance", "jaccard"
            )?;
            for (id, s, survivor) in &rows {
                writeln!(
                    out,
                    "{:<40} {:>8} {:>8.4}  {}",
                    id,
                    s.distance,
                    s.jaccard,
                    survivor.as_deref().unwrap_or_default()
                )?;
            }
        }
        if let Some(alerts) = alerts.as_ref().filter(|a| !a.is_empty()) {
            if !rows.is_empty() {
                writeln!(out)?;
            }
            writeln!(
                out,
                "{:<8} {:<16} {:<40} {:>8} {:>8}",
                "alert", "class", "watched", "distance", "jaccard"
            )?;
            for a in alerts {
                writeln!(
                    out,
                    "{:<8} {:<16} {:<40} {:>8} {:>8.4}",
                    a.level,
                    a.class.as_deref().unwrap_or("-"),
                    a.watched,
                    a.distance,
                    a.jaccard
                )?;
            }
        }
    }
    Ok(if hits.is_empty() && alerts.is_none_or(|a| a.is_empty()) {
        ExitCode::from(crate::exit::NO_MATCH)
    } else {
        ExitCode::SUCCESS
    })
}

/// The text fields of the one document of `file`, read as `format` says (as every command
/// reads its input; see [`InputArgs::resolve`]).
fn fields_of_file(
    file: &std::path::Path,
    format: InputFormat,
) -> anyhow::Result<Vec<(String, String)>> {
    if format == InputFormat::Lines {
        bail!("--format lines reads a document per line: query looks up one text");
    }
    let mut input_args = InputArgs::for_files(vec![file.to_owned()], format);
    input_args.resolve()?;
    let mut records = Vec::new();
    input::for_each(&input_args, |item| {
        records.push(item.map_err(|reject| anyhow::anyhow!("{reject}"))?);
        Ok(())
    })?;
    match records.len() {
        1 => Ok(records.remove(0).fields),
        0 => bail!("{} holds no document to look up", file.display()),
        n => bail!(
            "{} holds {n} records: query looks up one (`neardup dedup` compares many)",
            file.display()
        ),
    }
}
