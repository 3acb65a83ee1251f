//! `neardup query`: near duplicates of a text among stored records.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use neardup::{Record, TextField};

use crate::args::{ProfileArgs, RuleArgs};

/// Arguments of `neardup query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The store to search.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// The text to look up.
    #[arg(long, value_name = "TEXT", conflicts_with = "file")]
    pub text: Option<String>,
    /// A file whose content is the text to look up (.html files are reduced to their text).
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[command(flatten)]
    pub rule: RuleArgs,
}

/// Exit codes like grep's: 0 when something matched, 1 when nothing did, 2 on error.
pub fn run(args: &QueryArgs) -> anyhow::Result<ExitCode> {
    let text = match (&args.text, &args.file) {
        (Some(t), None) => t.clone(),
        (None, Some(f)) => {
            let raw = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
            let text = String::from_utf8(raw).map_err(|e| {
                anyhow::anyhow!(
                    "{}: invalid UTF-8 at byte {}",
                    f.display(),
                    e.utf8_error().valid_up_to()
                )
            })?;
            if f.extension().is_some_and(|e| e == "html" || e == "htm") {
                neardup::text::html_to_text(&text)
            } else {
                text
            }
        }
        _ => bail!("give the text to look up with --text or --file"),
    };
    if !super::is_redis_url(&args.store) && !args.store.exists() {
        bail!(
            "store {} does not exist: run `neardup dedup` first",
            args.store.display()
        );
    }
    let deduper = super::open_deduper(&args.store, &args.profile, &args.rule, 0)
        .with_context(|| format!("opening store {}", args.store.display()))?;
    let mut record = Record::new("<query>", text);
    record.fields = vec![TextField {
        name: "text".into(),
        text: record.fields.remove(0).text,
        weight: 1,
    }];
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
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
