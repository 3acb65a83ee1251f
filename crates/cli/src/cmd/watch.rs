//! `neardup watch`: watchlists of known content, and the options with which `query`,
//! `dedup` and `serve` check records against one (seed 002, 6.1).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use neardup::watch::{AlertBands, Watchlist};
use neardup::{Deduper, Record, Rule, Store, Timestamp};

use crate::args::{InputArgs, ProfileArgs};
use crate::input;

/// The options that check records against a watchlist (`query`, `dedup`, `serve`).
#[derive(Debug, Args, Clone)]
pub struct WatchArgs {
    /// Also check every record against this watchlist (a store made with `neardup watch
    /// add`, read with the same profile flags): a match raises an alert graded by
    /// --alert-bands.
    #[arg(long, value_name = "PATH")]
    pub watchlist: Option<PathBuf>,
    /// Alert levels, most severe first, as LEVEL=BITS:JACCARD,...: a match gets the first
    /// level whose distance it is within and whose Jaccard floor it reaches. The default
    /// is seed 002's red at 1-3 bits, then orange and yellow out to dedup's radius, each
    /// where at least half the shingles are shared.
    #[arg(long, value_name = "BANDS", default_value = neardup::watch::DEFAULT_BANDS, value_parser = parse_bands, requires = "watchlist")]
    pub alert_bands: AlertBands,
}

fn parse_bands(s: &str) -> Result<AlertBands, String> {
    s.parse().map_err(|e: neardup::Error| e.to_string())
}

/// A watchlist opened for checking.
pub type Opened = Watchlist<Box<dyn Store>>;

impl WatchArgs {
    /// The watchlist, when one is named, opened with `profile` (the one it was made with),
    /// for a command that writes to `store`.
    ///
    /// # Errors
    /// A missing watchlist, the store itself, another profile, store failures.
    pub fn open(
        &self,
        profile: &ProfileArgs,
        store: Option<&Path>,
    ) -> anyhow::Result<Option<Opened>> {
        let Some(path) = &self.watchlist else {
            return Ok(None);
        };
        if store.is_some_and(|s| same_file(s, path)) {
            bail!(
                "--watchlist {} is the store this command writes to: a watchlist is a store of its own (`neardup watch add`)",
                path.display()
            );
        }
        let what = || format!("opening watchlist {}", path.display());
        if !super::is_redis_url(path) && !path.exists() {
            bail!(
                "watchlist {} does not exist: make it with `neardup watch add --watchlist {} --class CLASS FILE...`",
                path.display(),
                path.display()
            );
        }
        let deduper = open_list(path, profile, self.alert_bands.rule(Rule::default()), false)
            .with_context(what)?;
        Ok(Some(
            Watchlist::new(deduper, self.alert_bands.clone()).with_context(what)?,
        ))
    }
}

/// Whether two paths name one store (the same file, or the same URL).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

fn open_list(
    path: &Path,
    profile: &ProfileArgs,
    rule: Rule,
    bulk: bool,
) -> anyhow::Result<Deduper<Box<dyn Store>>> {
    Ok(Deduper::builder()
        .hasher(
            super::hasher_builder(profile)?
                .detect_language(false)
                .build()?,
        )
        .rule(rule)
        .open(super::open_backend(path, bulk)?)?)
}

/// Arguments of `neardup watch`.
#[derive(Debug, Args)]
pub struct WatchCmdArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: WatchCommand,
}

/// The subcommands of `neardup watch`.
#[derive(Debug, Subcommand)]
pub enum WatchCommand {
    /// Add known content to a watchlist (created if missing), every record under one class.
    ///
    /// Reads input as `dedup` does. A watchlist is a store: `neardup erase --store W ID`
    /// removes a record and `neardup expire --store W --class C --before T` retires a
    /// class's records first seen before T.
    Add(Box<AddArgs>),
    /// The classes of a watchlist and how many records each holds.
    List(ListArgs),
}

/// Arguments of `neardup watch add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// The watchlist: an SQLite file (created if missing) or a Redis URL.
    #[arg(long, value_name = "PATH")]
    pub watchlist: PathBuf,
    /// The class of the records added (`farm`, `leak`, ...), reported with each alert.
    #[arg(long, value_name = "CLASS", value_parser = parse_class)]
    pub class: String,
    /// No summary on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_class(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("a class is a non-empty name, e.g. farm".into());
    }
    Ok(s.to_owned())
}

/// Arguments of `neardup watch list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The watchlist.
    #[arg(long, value_name = "PATH")]
    pub watchlist: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: WatchCmdArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        WatchCommand::Add(mut args) => {
            super::token_rule(&args.profile)?;
            args.input.code_lang = args.profile.code();
            args.input.resolve()?;
            add(&args)
        }
        WatchCommand::List(args) => list(&args),
    }
}

/// Records per committed batch.
const BATCH: usize = 4096;

/// Exit 0 when every record was added (or was there already), 2 when some were rejected
/// (each named on stderr).
fn add(args: &AddArgs) -> anyhow::Result<ExitCode> {
    let _lock = super::lock_store(&args.watchlist, "neardup watch add", false)?;
    let mut deduper = open_list(&args.watchlist, &args.profile, Rule::default(), true)
        .with_context(|| format!("opening watchlist {}", args.watchlist.display()))?;
    input::print_skipped_note(&args.input);
    let now = Timestamp::now();
    let (mut added, mut present, mut rejected) = (0u64, 0u64, 0u64);
    let mut batch = Vec::with_capacity(BATCH);
    // Returns how many records the pipeline rejected.
    let mut commit = |batch: &mut Vec<Record>| -> anyhow::Result<u64> {
        let mut rejected = 0;
        for outcome in deduper.process(batch, now)? {
            match outcome.decision {
                neardup::Decision::Rejected { reason } => {
                    rejected += 1;
                    eprintln!("neardup: record {:?}: {reason}", outcome.id);
                }
                neardup::Decision::AlreadyStored { .. } => present += 1,
                _ => added += 1,
            }
        }
        batch.clear();
        Ok(rejected)
    };
    input::for_each(&args.input, |item| {
        match item.and_then(|r| r.into_library(&args.input)) {
            Ok(record) => batch.push(record.with_retention_class(args.class.clone())),
            Err(reject) => {
                rejected += 1;
                eprintln!("neardup: {reject}");
            }
        }
        if batch.len() == BATCH {
            rejected += commit(&mut batch)?;
        }
        Ok(())
    })?;
    rejected += commit(&mut batch)?;
    if !args.quiet {
        eprintln!(
            "neardup: {added} records added to {} as class {:?}, {present} there already, {rejected} rejected",
            args.watchlist.display(),
            args.class
        );
    }
    Ok(crate::exit::done(rejected))
}

/// Exit 0, or 1 for an empty watchlist.
fn list(args: &ListArgs) -> anyhow::Result<ExitCode> {
    if !super::is_redis_url(&args.watchlist) && !args.watchlist.exists() {
        bail!("watchlist {} does not exist", args.watchlist.display());
    }
    let store = super::open_backend(&args.watchlist, false)
        .with_context(|| format!("opening watchlist {}", args.watchlist.display()))?;
    let mut classes: BTreeMap<String, u64> = BTreeMap::new();
    store.load(&mut |r| {
        *classes
            .entry(r.retention_class.unwrap_or_default())
            .or_default() += 1;
    })?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let rows: Vec<serde_json::Value> = classes
            .iter()
            .map(|(class, n)| serde_json::json!({"class": class, "records": n}))
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
    } else {
        writeln!(out, "{:<24} {:>10}", "class", "records")?;
        for (class, n) in &classes {
            let shown = if class.is_empty() { "(none)" } else { class };
            writeln!(out, "{shown:<24} {n:>10}")?;
        }
    }
    Ok(if classes.is_empty() {
        ExitCode::from(crate::exit::NO_MATCH)
    } else {
        ExitCode::SUCCESS
    })
}
