//! `neardup reevaluate` and `neardup review`: past decisions under new thresholds, and a
//! sample of borderline merges for people to check (seed 000).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use neardup::pipeline::Change;
use neardup::store::MergeLogEntry;
use neardup::{Store, Timestamp};

use crate::args::ScoringArgs;

/// Arguments of `neardup reevaluate`.
#[derive(Debug, Args)]
pub struct ReevaluateArgs {
    /// The store.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// The new Jaccard threshold.
    #[arg(long, value_name = "J")]
    pub jaccard: f64,
    /// The new Hamming radius in bits.
    #[arg(long, value_name = "BITS")]
    pub distance: u32,
    /// Apply the changes: split merges that fail, merge rejected candidates (of records that
    /// stand alone) that pass. Without it nothing is written.
    #[arg(long)]
    pub apply: bool,
    #[command(flatten)]
    pub scoring: ScoringArgs,
}

/// Arguments of `neardup review`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The store.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// How many merges to sample.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub sample: usize,
    /// Merges whose Jaccard is within this of the threshold are near the boundary.
    #[arg(long, value_name = "M", default_value_t = 0.03)]
    pub margin: f64,
    /// The Jaccard threshold the merges were made with.
    #[arg(long, value_name = "J", default_value_t = neardup::pipeline::DEFAULT_MIN_JACCARD)]
    pub threshold: f64,
    /// Seed of the sample (the same seed gives the same sample; change it each week).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

pub fn run_reevaluate(args: &ReevaluateArgs) -> anyhow::Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.jaccard) {
        bail!("--jaccard {} must be between 0 and 1", args.jaccard);
    }
    if !super::is_redis_url(&args.store) && !args.store.exists() {
        bail!("store {} does not exist", args.store.display());
    }
    // Applying writes: the store's writer lock first, so decisions are made on what holds.
    let _lock = if args.apply {
        super::lock_store(&args.store, "neardup reevaluate --apply", false)?
    } else {
        None
    };
    let mut deduper =
        super::open_deduper(&args.store, &args.scoring.profile, &args.scoring.rule, 0)
            .with_context(|| format!("opening store {}", args.store.display()))?;
    let changes = deduper.reevaluate(args.distance, args.jaccard)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "change\trecord\tother\tdistance\tjaccard\tnote")?;
    let (mut splits, mut merges, mut blocked) = (0, 0, 0);
    for c in &changes {
        match c {
            Change::Split {
                record,
                survivor,
                scores,
            } => {
                splits += 1;
                writeln!(
                    out,
                    "split\t{record}\t{survivor}\t{}\t{:.4}\t",
                    scores.distance, scores.jaccard
                )?;
            }
            Change::Merge {
                record,
                candidate,
                scores,
                applicable,
            } => {
                merges += 1;
                let note = if *applicable {
                    ""
                } else {
                    blocked += 1;
                    "record heads a cluster: not merged automatically"
                };
                writeln!(
                    out,
                    "merge\t{record}\t{candidate}\t{}\t{:.4}\t{note}",
                    scores.distance, scores.jaccard
                )?;
            }
        }
    }
    out.flush()?;
    eprintln!(
        "neardup: under max_distance {} and min_jaccard {}: {splits} merges would split, {merges} rejected candidates would merge ({blocked} not automatically)",
        args.distance, args.jaccard
    );
    if args.apply {
        let applied = deduper.apply_changes(&changes, Timestamp::now())?;
        eprintln!("neardup: applied {applied} changes");
    } else if !changes.is_empty() {
        eprintln!("neardup: nothing written; add --apply to apply");
    }
    Ok(ExitCode::SUCCESS)
}

fn csv(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

pub fn run_review(args: &ReviewArgs) -> anyhow::Result<ExitCode> {
    if !super::is_redis_url(&args.store) && !args.store.exists() {
        bail!("store {} does not exist", args.store.display());
    }
    let store = super::open_backend(&args.store, false)?;
    let mut near: Vec<MergeLogEntry> = Vec::new();
    store.merges(&mut |m| {
        if m.rule == "simhash+jaccard" && (m.jaccard - args.threshold).abs() <= args.margin {
            near.push(m);
        }
    })?;
    // A stable pseudo-random sample: order by a keyed hash of the merged id.
    near.sort_by_key(|m| xxhash_rust::xxh3::xxh3_64_with_seed(m.merged.as_bytes(), args.seed));
    near.truncate(args.sample);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(
        out,
        "kept,merged,rule,distance,jaccard,at,source_urls,verdict"
    )?;
    for m in &near {
        writeln!(
            out,
            "{},{},{},{},{:.4},{},{},",
            csv(&m.kept),
            csv(&m.merged),
            m.rule,
            m.distance,
            m.jaccard,
            m.at,
            csv(&m.source_urls.join(" "))
        )?;
    }
    eprintln!(
        "neardup: {} merges within {} of Jaccard {} sampled",
        near.len(),
        args.margin,
        args.threshold
    );
    Ok(ExitCode::SUCCESS)
}
