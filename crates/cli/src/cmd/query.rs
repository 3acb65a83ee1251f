//! `neardup query`: near duplicates of a text among stored records.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use neardup::{Record, TextField};

use crate::args::{InputArgs, InputFormat, ScoringArgs};
use crate::input;

/// Arguments of `neardup query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The store to search.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
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
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub scoring: ScoringArgs,
}

/// Exit codes like grep's: 0 when something matched, 1 when nothing did, 2 on error.
pub fn run(args: &QueryArgs) -> anyhow::Result<ExitCode> {
    let fields = match (&args.text, &args.file) {
        (Some(t), None) => vec![("text".to_owned(), t.clone())],
        (None, Some(f)) => fields_of_file(f, args.format.unwrap_or(InputFormat::Auto))?,
        _ => bail!("give the text to look up with --text or --file"),
    };
    if !super::is_redis_url(&args.store) && !args.store.exists() {
        bail!(
            "store {} does not exist: run `neardup dedup` first",
            args.store.display()
        );
    }
    let deduper = super::open_deduper(&args.store, &args.scoring.profile, &args.scoring.rule, 0)
        .with_context(|| format!("opening store {}", args.store.display()))?;
    let mut record = Record::new("<query>", String::new());
    record.fields = fields
        .into_iter()
        .map(|(name, text)| TextField {
            name,
            text,
            weight: 1,
        })
        .collect();
    let hits = deduper.query(&record)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let rows: Vec<serde_json::Value> = hits
            .iter()
            .map(|(id, s)| {
                let cluster = deduper.cluster_of(id);
                serde_json::json!({"id": id, "distance": s.distance, "jaccard": s.jaccard,
                    "survivor": cluster.map(|c| c.survivor)})
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
    } else if !hits.is_empty() {
        writeln!(
            out,
            "{:<40} {:>8} {:>8}  survivor",
            "id", "distance", "jaccard"
        )?;
        for (id, s) in &hits {
            let survivor = deduper
                .cluster_of(id)
                .map(|c| c.survivor)
                .unwrap_or_default();
            writeln!(
                out,
                "{:<40} {:>8} {:>8.4}  {}",
                id, s.distance, s.jaccard, survivor
            )?;
        }
    }
    Ok(if hits.is_empty() {
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
