//! `neardup erase` and `neardup expire`: erasure requests and retention (seed 000).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use neardup::Timestamp;

use crate::args::ScoringArgs;

/// Arguments of `neardup erase`.
#[derive(Debug, Args)]
pub struct EraseArgs {
    /// The store.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// Ids of the records to erase: each record, its fingerprint, its index entries and its
    /// shingles are removed, and the merge log keeps nothing of it.
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub scoring: ScoringArgs,
}

/// Arguments of `neardup expire`.
#[derive(Debug, Args)]
pub struct ExpireArgs {
    /// The store.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// The retention class to expire.
    #[arg(long, value_name = "CLASS")]
    pub class: String,
    /// Erase records of the class first seen before this time (RFC 3339).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub before: Timestamp,
    #[command(flatten)]
    pub scoring: ScoringArgs,
}

fn parse_time(s: &str) -> Result<Timestamp, String> {
    Timestamp::parse_rfc3339(s).map_err(|e| e.to_string())
}

/// The deduper of a store, and its writer lock (held while the deduper writes).
type Locked = (
    neardup::Deduper<Box<dyn neardup::Store>>,
    Option<neardup::store::WriterLock>,
);

fn open(store: &std::path::Path, scoring: &ScoringArgs, command: &str) -> anyhow::Result<Locked> {
    if !super::is_redis_url(store) && !store.exists() {
        anyhow::bail!("store {} does not exist", store.display());
    }
    let lock = super::lock_store(store, command, false)?;
    let deduper = super::open_deduper(store, &scoring.profile, &scoring.rule, 0)
        .with_context(|| format!("opening store {}", store.display()))?;
    Ok((deduper, lock))
}

/// Exit 0 when every id was erased, 1 when some were not stored.
pub fn run_erase(args: &EraseArgs) -> anyhow::Result<ExitCode> {
    let (mut deduper, _lock) = open(&args.store, &args.scoring, "neardup erase")?;
    let ids: Vec<&str> = args.ids.iter().map(String::as_str).collect();
    let erased = deduper.erase(&ids)?;
    let mut out = std::io::stdout().lock();
    for id in &erased {
        writeln!(out, "erased\t{id}")?;
    }
    let mut missing = 0;
    for id in &args.ids {
        if !erased.contains(id) {
            eprintln!("neardup: {id}: not in the store");
            missing += 1;
        }
    }
    Ok(if missing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::NO_MATCH)
    })
}

pub fn run_expire(args: &ExpireArgs) -> anyhow::Result<ExitCode> {
    let (mut deduper, _lock) = open(&args.store, &args.scoring, "neardup expire")?;
    let erased = deduper.expire(&args.class, args.before)?;
    let mut out = std::io::stdout().lock();
    for id in &erased {
        writeln!(out, "expired\t{id}")?;
    }
    eprintln!(
        "neardup: {} records of class {:?} first seen before {} erased",
        erased.len(),
        args.class,
        args.before.to_rfc3339()
    );
    Ok(ExitCode::SUCCESS)
}
