//! `neardup reevaluate` and `neardup review`: past decisions under new thresholds, and a
//! sample of borderline decisions for people to check (seed 000), and their labels out.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use neardup::pipeline::Change;
use neardup::store::Label;
use neardup::tune::review::{self, Queue, QueueSpec, Stratum};
use neardup::{Store, Timestamp};

use crate::args::{InputArgs, InputFormat, ScoringArgs, SemanticArgs};

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
    /// Also re-judge the semantic stage's merges, and merge rejected candidates whose logged
    /// cosine passes the semantic rule (--semantic-radius, --semantic-threshold and the
    /// weights); the output then has `cosine` and `rule` columns. Without it, merges of
    /// rule simhash+semantic are left as they are.
    #[arg(long)]
    pub semantic: bool,
    #[command(flatten)]
    pub semantic_rule: SemanticArgs,
    #[command(flatten)]
    pub scoring: ScoringArgs,
}

/// Arguments of `neardup review`.
#[derive(Debug, Args)]
#[command(after_long_help = REVIEW_HELP)]
pub struct ReviewArgs {
    /// The store.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// How many merges near the threshold to sample, and as many rejected candidates.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub sample: usize,
    /// How many merges away from the threshold to sample uniformly (for an unbiased
    /// precision estimate).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub random: usize,
    /// Pairs whose Jaccard is within this of the threshold are near the boundary.
    #[arg(long, value_name = "M", default_value_t = 0.03)]
    pub margin: f64,
    /// The Jaccard threshold the merges were made with.
    #[arg(long, value_name = "J", default_value_t = neardup::pipeline::DEFAULT_MIN_JACCARD)]
    pub threshold: f64,
    /// Seed of the sample (the same seed gives the same sample; change it each week).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Instead of the sample, write the labels stored with the store (from the review page
    /// of `neardup serve`) to FILE as the pairs file `neardup tune` reads (`-`: standard
    /// output).
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
}

const REVIEW_HELP: &str = "\
The sample is drawn in three disjoint strata: `boundary` (merges whose Jaccard is within
--margin of --threshold), `rejected` (candidates that failed verification within --margin
under it) and `random` (the other merges). It is printed as CSV:
  stratum,a,b,distance,jaccard,kept,at,verdict
where a is the stored record and b the arriving one, and verdict is the pair's stored label
(duplicate, not_duplicate or unsure), empty when there is none. The review page of
`neardup serve` (/review) shows the same queue with the texts side by side and stores the
labels.

--export writes the stored labels as JSON Lines for `neardup tune --pairs FILE --store STORE`:
  {\"a_id\", \"b_id\", \"duplicate\", \"weight\", \"distance\", \"jaccard\", \"source\", \"by\", \"at\"}
Each label weighs its stratum's pairs over the stratum's labels, so tune's figures estimate
the store's pairs; unsure labels are left out.

Exit status: 0 on success, 2 on an error.";

pub fn run_reevaluate(args: &ReevaluateArgs) -> anyhow::Result<ExitCode> {
    if !args.semantic {
        args.semantic_rule.refuse_without("--semantic")?;
    }
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
    let semantic = args.semantic.then(|| args.semantic_rule.rule());
    let changes = deduper.reevaluate_semantic(args.distance, args.jaccard, semantic)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if semantic.is_some() {
        writeln!(
            out,
            "change\trecord\tother\tdistance\tjaccard\tcosine\trule\tnote"
        )?;
    } else {
        writeln!(out, "change\trecord\tother\tdistance\tjaccard\tnote")?;
    }
    for c in &changes {
        let s = c.scores();
        let note = if c.applicable() {
            ""
        } else {
            "record heads a cluster: not merged automatically"
        };
        let semantic_columns = match (semantic, c) {
            (None, _) => String::new(),
            (Some(_), Change::Merge { rule, .. }) => format!(
                "{}\t{}\t",
                s.cosine.map_or_else(String::new, |c| format!("{c:.4}")),
                rule.as_str()
            ),
            (Some(_), _) => format!(
                "{}\t\t",
                s.cosine.map_or_else(String::new, |c| format!("{c:.4}"))
            ),
        };
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{:.4}\t{semantic_columns}{note}",
            c.name(),
            c.record(),
            c.other(),
            s.distance,
            s.jaccard
        )?;
    }
    let (splits, merges, blocked) = Change::counts(&changes);
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

/// The store meta key under which `neardup dedup` records how it read its input, so that the
/// review page of `neardup serve` can show the texts without being told where they are.
pub const REVIEW_INPUT_KEY: &str = "cli.review_input";

/// How `neardup dedup` read its input: the files (absolute) and the options that decide
/// records' ids and texts. Runs on one store add their files (the options of the latest
/// run hold for all).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReviewInput {
    /// Input files and directories, absolute.
    pub files: Vec<PathBuf>,
    /// `jsonl`, `lines` or `text`.
    pub format: String,
    /// `--id-field`.
    pub id_field: String,
    /// `--text-field`s.
    pub text_fields: Vec<String>,
    /// `--html-field`s.
    pub html_fields: Vec<String>,
    /// `--code-lang` of a code-mode run (directories hold that language's files).
    #[serde(default)]
    pub code_lang: Option<String>,
}

/// Files kept in [`ReviewInput`] (the latest runs' files).
const REVIEW_INPUT_FILES: usize = 1000;

impl ReviewInput {
    /// How `args` (resolved) read its input, added to `earlier` (a store's record of earlier
    /// runs); `None` for standard input, which cannot be read again.
    pub fn record(args: &InputArgs, earlier: Option<&str>) -> Option<ReviewInput> {
        if args.files.is_empty() || args.files.iter().any(|f| f.as_os_str() == "-") {
            return None;
        }
        let format = args
            .format
            .and_then(|f| clap::ValueEnum::to_possible_value(&f))
            .map(|v| v.get_name().to_owned())?;
        let mut files: Vec<PathBuf> = earlier
            .and_then(|e| serde_json::from_str::<ReviewInput>(e).ok())
            .map(|e| e.files)
            .unwrap_or_default();
        for f in &args.files {
            let f = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
            files.retain(|g| *g != f);
            files.push(f);
        }
        let excess = files.len().saturating_sub(REVIEW_INPUT_FILES);
        files.drain(..excess);
        Some(ReviewInput {
            files,
            format,
            id_field: args.id_field.clone(),
            text_fields: args.text_fields.clone(),
            html_fields: args.html_fields.clone(),
            code_lang: args.code_lang.map(|l| l.name().to_owned()),
        })
    }

    /// The input arguments that read these files again (those still there), resolved;
    /// `None` when none is left.
    pub fn input_args(&self) -> anyhow::Result<Option<InputArgs>> {
        let files: Vec<PathBuf> = self.files.iter().filter(|f| f.exists()).cloned().collect();
        if files.is_empty() {
            return Ok(None);
        }
        let format = <InputFormat as clap::ValueEnum>::from_str(&self.format, true)
            .map_err(|e| anyhow::anyhow!("the recorded input format {:?}: {e}", self.format))?;
        let mut args = InputArgs::for_files(files, format);
        args.id_field = self.id_field.clone();
        args.text_fields = self.text_fields.clone();
        args.html_fields = self.html_fields.clone();
        args.code_lang = self
            .code_lang
            .as_deref()
            .and_then(crate::args::CodeChoice::parse);
        args.resolve()?;
        Ok(Some(args))
    }
}

/// The labels of `store` as lines of the pairs file `tune` reads, weighted by stratum.
pub fn export_lines(queue: &Queue, labels: &[Label]) -> Vec<serde_json::Value> {
    review::labelled_pairs(queue, labels)
        .into_iter()
        .map(|(l, p)| {
            serde_json::json!({
                "a_id": l.a, "b_id": l.b, "duplicate": p.duplicate, "weight": p.weight,
                "distance": l.distance, "jaccard": l.jaccard, "source": l.source,
                "by": l.by, "at": l.at,
            })
        })
        .collect()
}

pub fn run_review(args: &ReviewArgs) -> anyhow::Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.threshold) || !(0.0..=1.0).contains(&args.margin) {
        bail!("--threshold and --margin must be between 0 and 1");
    }
    if !super::is_redis_url(&args.store) && !args.store.exists() {
        bail!("store {} does not exist", args.store.display());
    }
    let store = super::open_backend(&args.store, false)?;
    let spec = QueueSpec {
        threshold: args.threshold,
        margin: args.margin,
        sample: args.sample,
        random: args.random,
        seed: args.seed,
    };
    let queue = review::review_queue(&*store, &spec)?;
    let mut labels: Vec<Label> = Vec::new();
    store.labels(&mut |l| labels.push(l))?;
    if let Some(path) = &args.export {
        let lines = export_lines(&queue, &labels);
        let mut text = String::new();
        for line in &lines {
            text.push_str(&line.to_string());
            text.push('\n');
        }
        if path.as_os_str() == "-" {
            std::io::stdout().lock().write_all(text.as_bytes())?;
        } else {
            std::fs::write(path, text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        eprintln!(
            "neardup: {} labels exported, {} unsure left out",
            lines.len(),
            labels.len() - lines.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let verdict: HashMap<(&str, &str), &str> = labels
        .iter()
        .map(|l| ((l.a.as_str(), l.b.as_str()), l.verdict.as_str()))
        .collect();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "stratum,a,b,distance,jaccard,kept,at,verdict")?;
    for p in &queue.pairs {
        writeln!(
            out,
            "{},{},{},{},{:.4},{},{},{}",
            p.stratum.as_str(),
            csv(&p.a),
            csv(&p.b),
            p.scores.distance,
            p.scores.jaccard,
            csv(p.kept.as_deref().unwrap_or("")),
            p.at.as_deref().unwrap_or(""),
            verdict
                .get(&(p.a.as_str(), p.b.as_str()))
                .copied()
                .unwrap_or("")
        )?;
    }
    out.flush()?;
    let population = |s: Stratum| queue.populations.get(&s).copied().unwrap_or(0);
    eprintln!(
        "neardup: sampled from {} merges within {} of Jaccard {}, {} rejected candidates under it and {} other merges",
        population(Stratum::Boundary),
        args.margin,
        args.threshold,
        population(Stratum::Rejected),
        population(Stratum::Random)
    );
    Ok(ExitCode::SUCCESS)
}
