//! `neardup label`: a file of pairs to label, sampled from a corpus per distance bucket.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use neardup::tune::{sample_pairs, RecordFacts, DEFAULT_GRID_MAX_DISTANCE};
use neardup::verify::id_jaccard;
use neardup::Field;

use crate::args::{InputArgs, ProfileArgs};
use crate::input;

/// Arguments of `neardup label`.
#[derive(Debug, Args)]
#[command(after_long_help = LABEL_HELP)]
pub struct LabelArgs {
    /// Corpus file, repeatable (like a PATH argument: files named .jsonl, .ndjson or .json,
    /// compressed or not, are read as JSON Lines).
    #[arg(long = "input", value_name = "FILE")]
    pub input_files: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Pairs to sample in all, shared round-robin among the distance buckets.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub sample: usize,
    /// One bucket per distance 0..=BITS, and one for everything further.
    #[arg(long, value_name = "BITS", default_value_t = DEFAULT_GRID_MAX_DISTANCE)]
    pub max_distance: u32,
    /// A first cut: label pairs with Jaccard >= J duplicates and the rest not. Check them:
    /// tuning on labels made by a Jaccard rule only finds that rule again.
    #[arg(long, value_name = "J")]
    pub auto_jaccard: Option<f64>,
    /// Where to write the pairs (`-`: standard output).
    #[arg(long, short, value_name = "FILE", default_value = "pairs.jsonl")]
    pub out: PathBuf,
    /// Seed of the sample: the same corpus and seed give the same file.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Read at most this many records of the corpus.
    #[arg(long, value_name = "N")]
    pub max_records: Option<usize>,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

const LABEL_HELP: &str = "\
Most pairs of a corpus are far apart, so a uniform sample holds almost no near pair. This
samples per distance bucket instead: every pair within --max-distance bits is found by an
all-pairs join, the far pairs are sampled at random, and --sample is shared round-robin among
the buckets. Each line says how many corpus pairs it stands for (\"weight\"), so `neardup tune`
estimates precision and recall for the whole corpus, not the sample.

Each line is
  {\"a_id\", \"b_id\", \"distance\", \"jaccard\", \"bucket\", \"weight\", \"duplicate\", \"a\", \"b\"}
with \"duplicate\": null until labelled (true or false), or set by --auto-jaccard. Lines are
sorted by distance. The corpus is held in memory, and the join costs about n^2/2 popcounts at
16 bits: keep a labelling corpus to tens of thousands of records (--max-records).

Exit status: 0 on success, 2 on an error.";

struct Doc {
    id: String,
    text: String,
    facts: RecordFacts,
}

/// One line of the pairs file: `neardup tune` reads it once a person (or `--auto-jaccard`)
/// has set `duplicate`.
#[derive(serde::Serialize)]
struct PairLine<'a> {
    a_id: &'a str,
    b_id: &'a str,
    distance: u32,
    /// Rounded to four decimals.
    jaccard: f64,
    /// The distance bucket the pair was sampled from, or `"far"`.
    bucket: serde_json::Value,
    /// The sampling weight (pairs of its bucket per pair sampled).
    weight: f64,
    duplicate: Option<bool>,
    a: &'a str,
    b: &'a str,
}

pub fn run(args: &LabelArgs) -> anyhow::Result<ExitCode> {
    if let Some(j) = args.auto_jaccard {
        if !(0.0..=1.0).contains(&j) {
            bail!("--auto-jaccard {j} must be between 0 and 1");
        }
    }
    if args.sample == 0 {
        bail!("--sample must be at least 1");
    }
    if args.max_distance > 64 {
        bail!(
            "--max-distance {} is beyond 64 bits: distances further than that are one bucket anyway",
            args.max_distance
        );
    }
    let hasher = super::hasher(&args.profile)?;
    let mut corpus = args.input.clone();
    corpus.files.extend(args.input_files.iter().cloned());
    corpus.resolve()?;
    input::print_skipped_note(&corpus);
    let mut docs: Vec<Doc> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let (mut rejects, mut empty, mut repeated) = (0u64, 0u64, 0u64);
    let limit = args.max_records.unwrap_or(usize::MAX);
    input::for_each(&corpus, |r| {
        if docs.len() >= limit {
            return Ok(());
        }
        let record = match r {
            Ok(record) => record,
            Err(reject) => {
                rejects += 1;
                if rejects <= 5 {
                    eprintln!("neardup: skipped {reject}");
                }
                return Ok(());
            }
        };
        let fields: Vec<Field<'_>> = record
            .fields
            .iter()
            .map(|(n, t)| Field::weighted(t, corpus.weight_of(n)))
            .collect();
        let facts = match RecordFacts::of_fields(&hasher, &fields, None) {
            Ok(f) => f,
            Err(neardup::Error::EmptyFeatureBag { .. }) => {
                empty += 1;
                return Ok(());
            }
            Err(e) => return Err(e).with_context(|| format!("{}", record.origin)),
        };
        if seen.insert(record.id.clone(), docs.len()).is_some() {
            repeated += 1;
        }
        let text: Vec<&str> = record.fields.iter().map(|(_, t)| t.as_str()).collect();
        docs.push(Doc {
            id: record.id,
            text: text.join("\n\n"),
            facts,
        });
        Ok(())
    })?;
    if rejects > 5 {
        eprintln!("neardup: skipped {rejects} unusable records in all");
    }
    if empty > 0 {
        eprintln!("neardup: skipped {empty} records without words");
    }
    if repeated > 0 {
        eprintln!(
            "neardup: warning: {repeated} record ids occur more than once; pairs name records by id"
        );
    }
    if docs.len() < 2 {
        bail!(
            "the corpus has {} usable record{}: pairs need at least 2",
            docs.len(),
            if docs.len() == 1 { "" } else { "s" }
        );
    }
    let fingerprints: Vec<u128> = docs.iter().map(|d| d.facts.fingerprint).collect();
    let pairs = sample_pairs(&fingerprints, args.max_distance, args.sample, args.seed)?;
    let to_stdout = args.out == Path::new("-");
    let mut out: Box<dyn Write> = if to_stdout {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(BufWriter::new(
            File::create(&args.out).with_context(|| format!("creating {}", args.out.display()))?,
        ))
    };
    let mut per_bucket: Vec<(Option<u32>, u64, u64)> = Vec::new();
    let mut auto_duplicates = 0;
    for p in &pairs {
        let (a, b) = (&docs[p.a as usize], &docs[p.b as usize]);
        let j = id_jaccard(&a.facts.shingle_ids, &b.facts.shingle_ids);
        let duplicate = args.auto_jaccard.map(|t| j >= t);
        auto_duplicates += usize::from(duplicate == Some(true));
        let line = PairLine {
            a_id: &a.id,
            b_id: &b.id,
            distance: p.distance,
            jaccard: (j * 1e4).round() / 1e4,
            bucket: p.bucket.map_or_else(|| "far".into(), Into::into),
            weight: p.weight(),
            duplicate,
            a: &a.text,
            b: &b.text,
        };
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
        match per_bucket.last_mut() {
            Some(last) if last.0 == p.bucket => last.1 += 1,
            _ => per_bucket.push((p.bucket, 1, p.weight_numerator)),
        }
    }
    out.flush()?;
    drop(out);
    let buckets: Vec<String> = per_bucket
        .iter()
        .map(|(b, n, pop)| {
            format!(
                "{}: {n} of {pop}",
                b.map_or_else(|| format!(">{}", args.max_distance), |b| b.to_string())
            )
        })
        .collect();
    eprintln!(
        "neardup: {} pairs from {} records{}; by distance (sampled of all pairs): {}",
        pairs.len(),
        docs.len(),
        if to_stdout {
            String::new()
        } else {
            format!(" written to {}", args.out.display())
        },
        buckets.join(", ")
    );
    match args.auto_jaccard {
        Some(j) => eprintln!(
            "neardup: {auto_duplicates} labelled duplicate by Jaccard >= {j}, the rest not: check them before tuning"
        ),
        None => eprintln!(
            "neardup: set \"duplicate\" to true or false on every line, then run `neardup tune --pairs FILE`"
        ),
    }
    Ok(ExitCode::SUCCESS)
}
