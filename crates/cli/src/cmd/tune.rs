//! `neardup tune`: thresholds from labelled pairs. Reads the pairs file (shared with `label`
//! and `eval`), scores every pair with the current profile, prints the precision/recall
//! tables, the recommended thresholds and the layout they need, answers the inverse question
//! and draws the plots.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};
use clap::Args;
use neardup::index::LayoutPlan;
use neardup::tune::{
    evaluate, layout_for, radius_for, score_rule, Cell, Grid, GridSpec, LabelledPair, RadiusAnswer,
    RecordFacts, DEFAULT_GRID_JACCARD_STEP, DEFAULT_GRID_MAX_DISTANCE, DEFAULT_GRID_MIN_JACCARD,
    DEFAULT_MIN_PRECISION,
};
use neardup::verify::Scores;
use neardup::{Field, SimHasher, SqliteStore, Store};
use serde_json::{json, Value};

use crate::args::{InputArgs, ScoringArgs};
use crate::input;

mod pairs;
pub(crate) mod plot;

pub use self::pairs::{read_pairs, PairLine, Side};

/// Records a layout is planned for when neither --records nor a store says.
pub const DEFAULT_PLAN_RECORDS: u64 = 1_000_000;

/// Arguments of `neardup tune`.
#[derive(Debug, Args)]
#[command(after_long_help = TUNE_HELP)]
pub struct TuneArgs {
    /// Labelled pairs. JSON Lines: `{"a": TEXT, "b": TEXT, "duplicate": true}` (or `"a_id"`
    /// and `"b_id"` instead of the texts, resolved against --input or --store; an optional
    /// `"weight"` says how many pairs one stands for, as `neardup label` writes). Or
    /// tab-separated: `a<TAB>b<TAB>duplicate` with true/false or 1/0, with an optional header
    /// line naming the columns (a, b, a_id, b_id, duplicate, weight).
    #[arg(long, value_name = "FILE")]
    pub pairs: PathBuf,
    /// Resolve `a_id`/`b_id` against this store (it keeps fingerprints and shingle ids, not
    /// text); its size is also the default --records.
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Corpus to resolve `a_id`/`b_id` against, repeatable (like a PATH argument; a name
    /// ending in .jsonl, .jsonl.gz or .jsonl.zst implies --jsonl).
    #[arg(long = "input", value_name = "FILE")]
    pub input_files: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Precision floor of the recommendation.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_MIN_PRECISION)]
    pub min_precision: f64,
    /// Tabulate radii 0..=BITS.
    #[arg(long, value_name = "BITS", default_value_t = DEFAULT_GRID_MAX_DISTANCE)]
    pub grid_max_distance: u32,
    /// The lowest Jaccard threshold tabulated (up to 1.0).
    #[arg(long, value_name = "J", default_value_t = DEFAULT_GRID_MIN_JACCARD)]
    pub grid_min_jaccard: f64,
    /// The step between tabulated Jaccard thresholds.
    #[arg(long, value_name = "STEP", default_value_t = DEFAULT_GRID_JACCARD_STEP)]
    pub grid_jaccard_step: f64,
    /// Plan the index layout for this many records (default: the store's size, else
    /// 1,000,000).
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,
    /// Draw precision/recall curves and the distance and Jaccard histograms of duplicates
    /// and non-duplicates to FILE (.png or .svg), repeatable. Labels need a TrueType font:
    /// NEARDUP_FONT=FILE.ttf, else DejaVu Sans or another font under /usr/share/fonts.
    #[arg(long, value_name = "FILE")]
    pub plot: Vec<PathBuf>,
    /// The inverse question: which radius finds --target-recall of the pairs whose Jaccard
    /// is at least J, with which layout, at what cost per query. Labels are not needed for
    /// it: a file of unlabelled pairs (`"duplicate": null`) answers only this.
    #[arg(long, value_name = "J")]
    pub target_jaccard: Option<f64>,
    /// The recall the inverse question asks for.
    #[arg(
        long,
        value_name = "R",
        default_value_t = 0.95,
        requires = "target_jaccard"
    )]
    pub target_recall: f64,
    /// Print the full grid and everything else as JSON.
    #[arg(long)]
    pub json: bool,
    /// The profile, and the current thresholds, shown against the recommendation.
    #[command(flatten)]
    pub scoring: ScoringArgs,
}

const TUNE_HELP: &str = "\
A pair is predicted a near-duplicate at (k, J) when its fingerprints are within k bits and the
Jaccard similarity of its shingle sets is at least J, exactly as `neardup dedup` decides.

Recommendation rule: among all (k, J) with precision >= --min-precision, the highest recall;
ties go to the higher F1, then the smaller k (a smaller radius is cheaper to query), then the
middle of the tied J values. When no (k, J) reaches the floor, the best F1 is shown instead
and flagged. Pairs shorter than --min-words are scored all the same (the pipeline gives them
only the exact tier); the summary counts them.

Weighted pairs (from `neardup label`, which samples per distance bucket) are counted with
their weight, so precision and recall estimate the whole corpus's pairs.

Exit status: 0 on success, 2 on an error (a bad pairs file names the file and line).";

/// The corpus options with `--input FILE`s added, resolved (JSON Lines by their names).
pub fn corpus_args(input: &InputArgs, extra: &[PathBuf]) -> anyhow::Result<InputArgs> {
    let mut args = input.clone();
    args.files.extend(extra.iter().cloned());
    // The same format rules as every command that reads input.
    args.resolve()?;
    Ok(args)
}

/// Turns record ids and texts into the facts verification sees.
pub struct Resolver<'h> {
    hasher: &'h SimHasher,
    corpus: HashMap<String, RecordFacts>,
    stored: HashMap<String, RecordFacts>,
    store_records: Option<u64>,
    sources: &'static str,
}

impl<'h> Resolver<'h> {
    /// Loads the records named by `ids` from the corpus and the store.
    ///
    /// # Errors
    /// An unreadable store, a store of another profile, a corpus that cannot be read.
    pub fn load(
        hasher: &'h SimHasher,
        ids: &HashSet<String>,
        corpus: Option<&InputArgs>,
        store: Option<&Path>,
    ) -> anyhow::Result<Resolver<'h>> {
        let mut resolver = Resolver {
            hasher,
            corpus: HashMap::new(),
            stored: HashMap::new(),
            store_records: None,
            sources: match (corpus.is_some(), store.is_some()) {
                (true, true) => "--input or --store",
                (true, false) => "--input",
                (false, true) => "--store",
                (false, false) => "",
            },
        };
        if let Some(args) = corpus {
            let mut rejects = 0u64;
            input::for_each(args, |r| {
                match r {
                    Ok(record) if ids.contains(&record.id) => {
                        let fields: Vec<Field<'_>> = record
                            .fields
                            .iter()
                            .map(|(n, t)| Field::weighted(t, args.weight_of(n)))
                            .collect();
                        let facts =
                            RecordFacts::of_fields(hasher, &fields, None).with_context(|| {
                                format!("{}: record {:?}", record.origin, record.id)
                            })?;
                        resolver.corpus.insert(record.id, facts);
                    }
                    Ok(_) => {}
                    Err(reject) => {
                        rejects += 1;
                        if rejects <= 5 {
                            eprintln!("neardup: skipped {reject}");
                        }
                    }
                }
                Ok(())
            })?;
            if rejects > 5 {
                eprintln!("neardup: skipped {rejects} unusable corpus records in all");
            }
        }
        if let Some(path) = store {
            let (stored, total) = load_stored(path, hasher, ids)?;
            resolver.stored = stored;
            resolver.store_records = Some(total);
        }
        Ok(resolver)
    }

    /// Records in the store, when one was given.
    pub fn store_records(&self) -> Option<u64> {
        self.store_records
    }

    /// The facts of one side: its text when given, else its id in the corpus, else in the
    /// store.
    ///
    /// # Errors
    /// A text without words, an id found nowhere.
    pub fn facts(&self, side: &Side, which: &str) -> anyhow::Result<RecordFacts> {
        if let Some(text) = &side.text {
            return RecordFacts::of_text(self.hasher, text, None)
                .map_err(|e| anyhow!("side {which}: {e}"));
        }
        let id = side.id.as_deref().expect("a side has a text or an id");
        if let Some(f) = self.corpus.get(id).or_else(|| self.stored.get(id)) {
            return Ok(f.clone());
        }
        if self.sources.is_empty() {
            bail!("side {which} is id {id:?}: give --input CORPUS or --store PATH to resolve ids");
        }
        bail!("side {which}: id {id:?} is not in {}", self.sources)
    }
}

/// The stored facts of the records named by `ids`, and the number of stored records.
pub fn load_stored(
    path: &Path,
    hasher: &SimHasher,
    ids: &HashSet<String>,
) -> anyhow::Result<(HashMap<String, RecordFacts>, u64)> {
    if !path.exists() {
        bail!("store {} does not exist", path.display());
    }
    let store =
        SqliteStore::open(path).with_context(|| format!("opening store {}", path.display()))?;
    let current = hasher.profile().to_string();
    if let Some(stored) = store.profile()? {
        if stored != current {
            return Err(neardup::Error::ConfigMismatch { stored, current }.into());
        }
    }
    let mut wanted = Vec::new();
    let mut total = 0u64;
    store.load(&mut |r| {
        total += 1;
        if ids.contains(&r.id) {
            wanted.push(r);
        }
    })?;
    let mut out = HashMap::new();
    for r in wanted {
        let shingle_ids = store.shingles(r.handle)?.unwrap_or_default();
        out.insert(
            r.id.clone(),
            RecordFacts {
                fingerprint: r.fingerprint,
                content_hash: r.content_hash,
                shingle_ids,
                words: r.tokens as usize,
                boilerplate_removed: 0,
            },
        );
    }
    Ok((out, total))
}

/// A layout plan as JSON.
pub fn plan_json(plan: &LayoutPlan) -> Value {
    json!({
        "layout": plan.kind.to_string(),
        "records": plan.fingerprints,
        "max_distance": plan.max_distance,
        "tables": plan.tables,
        "probes_per_query": plan.probes_per_query,
        "candidates_per_query": plan.candidates_per_query,
        "bytes_per_fingerprint": plan.bytes_per_fingerprint,
        "total_bytes": plan.total_bytes,
        "model_ns_per_query": plan.cost_ns_per_query,
    })
}

/// A layout plan in one line.
pub fn plan_line(plan: &LayoutPlan) -> String {
    format!(
        "{} ({} tables): {:.0} probes and {:.1} candidates per query, {:.1} B per record, {} in all, about {} per query (model)",
        plan.kind,
        plan.tables,
        plan.probes_per_query,
        plan.candidates_per_query,
        plan.bytes_per_fingerprint,
        human_bytes(plan.total_bytes),
        human_ns(plan.cost_ns_per_query),
    )
}

/// `bytes` in the largest binary unit (up to TiB) it fills at least once, to one decimal.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    // Each unit is 2^10 of the one before, so the unit is a tenth of the binary logarithm;
    // dividing by a power of two is exact, as repeated halving would be.
    let unit = (bytes.checked_ilog2().unwrap_or(0) / 10).min(4);
    let v = bytes as f64 / (1u64 << (10 * unit)) as f64;
    format!("{v:.1} {}", UNITS[unit as usize])
}

fn human_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.1} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A scored pair with its line.
struct Scored {
    line: u64,
    scores: Scores,
    duplicate: Option<bool>,
    weight: f64,
    short: bool,
}

pub fn run(args: &TuneArgs) -> anyhow::Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.min_precision) {
        bail!(
            "--min-precision {} must be between 0 and 1",
            args.min_precision
        );
    }
    for p in &args.plot {
        plot::plot_format(p)?;
    }
    let spec = GridSpec::new(
        args.grid_max_distance,
        args.grid_min_jaccard,
        args.grid_jaccard_step,
    )?;
    let hasher = super::hasher(&args.scoring.profile)?;
    let rule = args.scoring.rule.rule(&args.scoring.profile);
    let name = args.pairs.display().to_string();
    let lines = read_pairs(&args.pairs)?;
    let ids: HashSet<String> = lines
        .iter()
        .flat_map(|l| [&l.a, &l.b])
        .filter(|s| s.text.is_none())
        .filter_map(|s| s.id.clone())
        .collect();
    let corpus = (!args.input_files.is_empty() || !args.input.files.is_empty())
        .then(|| corpus_args(&args.input, &args.input_files))
        .transpose()?;
    let resolver = if ids.is_empty() {
        Resolver::load(&hasher, &ids, None, None)?
    } else {
        Resolver::load(&hasher, &ids, corpus.as_ref(), args.store.as_deref())?
    };
    let mut scored = Vec::with_capacity(lines.len());
    for l in &lines {
        let a = resolver
            .facts(&l.a, "a")
            .with_context(|| format!("{name}:{}", l.line))?;
        let b = resolver
            .facts(&l.b, "b")
            .with_context(|| format!("{name}:{}", l.line))?;
        scored.push(Scored {
            line: l.line,
            scores: a.scores(&b),
            duplicate: l.duplicate,
            weight: l.weight,
            short: a.words.min(b.words) < rule.min_words,
        });
    }
    let records = args
        .records
        .or(resolver.store_records())
        .unwrap_or(DEFAULT_PLAN_RECORDS)
        .max(1);
    let unlabelled: Vec<&Scored> = scored.iter().filter(|s| s.duplicate.is_none()).collect();
    let inverse = match args.target_jaccard {
        Some(j) => {
            let all: Vec<(Scores, f64)> = scored.iter().map(|s| (s.scores, s.weight)).collect();
            Some(radius_for(&all, j, args.target_recall, records)?)
        }
        None => None,
    };
    let labelled: Vec<LabelledPair> = scored
        .iter()
        .filter_map(|s| {
            s.duplicate.map(|d| LabelledPair {
                scores: s.scores,
                duplicate: d,
                weight: s.weight,
            })
        })
        .collect();
    let report = if unlabelled.is_empty() {
        let grid = evaluate(&labelled, &spec).with_context(|| format!("pairs file {name}"))?;
        Some(grid)
    } else if inverse.is_some() && labelled.is_empty() {
        None // unlabelled pairs: the inverse question only
    } else {
        let first = unlabelled[0];
        bail!(
            "{name}:{}: the pair is not labelled: set \"duplicate\" to true or false ({} of {} pairs are unlabelled; `neardup label --auto-jaccard J` labels a first cut)",
            first.line,
            unlabelled.len(),
            scored.len()
        );
    };
    let short = scored.iter().filter(|s| s.short).count();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let profile = hasher.profile().to_string();
    if let Some(grid) = &report {
        let rec = grid.recommend(args.min_precision);
        let plan = layout_for(records, rec.cell.max_distance)?;
        let current = score_rule(&labelled, rule.max_distance, rule.min_jaccard);
        if args.json {
            let mut v = json!({
                "pairs_file": name,
                "profile": profile,
                "pairs": grid.pairs(),
                "duplicates": grid.duplicates(),
                "non_duplicates": grid.non_duplicates(),
                "short_pairs": short,
                "min_words": rule.min_words,
                "rule": "among (k, J) with precision >= min_precision the highest recall; ties: higher F1, smaller k, middle J",
                "recommended": rec,
                "layout": plan_json(&plan),
                "current": current,
                "grid": grid.cells(),
            });
            if let Some(inv) = &inverse {
                v["inverse"] = inverse_json(inv);
            }
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        } else {
            print_report(
                &mut out, args, grid, &rec, &plan, &current, short, &profile, records,
            )?;
            if let Some(inv) = &inverse {
                print_inverse(&mut out, inv)?;
            }
        }
        for path in &args.plot {
            let data = plot::PlotData {
                grid,
                max_distance: rec.cell.max_distance,
                min_jaccard: rec.cell.min_jaccard,
                pairs: &labelled,
                current: None,
            };
            plot::plot(path, &data).with_context(|| format!("drawing {}", path.display()))?;
            eprintln!("neardup: wrote {}", path.display());
        }
    } else if let Some(inv) = &inverse {
        if !args.plot.is_empty() {
            bail!("--plot needs labelled pairs");
        }
        if args.json {
            let v = json!({"pairs_file": name, "profile": profile, "pairs": scored.len(),
                "inverse": inverse_json(inv)});
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        } else {
            writeln!(
                out,
                "{} unlabelled pairs from {name}, profile {profile}",
                scored.len()
            )?;
            print_inverse(&mut out, inv)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn inverse_json(inv: &RadiusAnswer) -> Value {
    let mut v = serde_json::to_value(inv).unwrap_or(Value::Null);
    v["layout"] = plan_json(&inv.plan);
    v
}

#[allow(clippy::too_many_arguments)]
fn print_report(
    out: &mut impl Write,
    args: &TuneArgs,
    grid: &Grid,
    rec: &neardup::tune::Recommendation,
    plan: &LayoutPlan,
    current: &Cell,
    short: usize,
    profile: &str,
    records: u64,
) -> anyhow::Result<()> {
    let count = |w: f64| {
        if w == w.trunc() {
            format!("{w:.0}")
        } else {
            format!("{w:.1}")
        }
    };
    writeln!(
        out,
        "{} pairs from {} ({} duplicates, {} non-duplicates by weight), profile {profile}",
        grid.pairs(),
        args.pairs.display(),
        count(grid.duplicates()),
        count(grid.non_duplicates()),
    )?;
    if short > 0 {
        writeln!(
            out,
            "note: {short} pairs have a side under --min-words {}: the pipeline gives them only the exact tier",
            args.scoring.rule.min_words
        )?;
    }
    writeln!(out)?;
    let c = &rec.cell;
    writeln!(
        out,
        "recommended: --max-distance {} --min-jaccard {:.2}  (precision {:.3}, recall {:.3}, F1 {:.3})",
        c.max_distance, c.min_jaccard, c.precision, c.recall, c.f1
    )?;
    if rec.meets_min_precision {
        writeln!(
            out,
            "  rule: among (k, J) with precision >= {}, the highest recall; ties: higher F1, smaller k, middle J",
            args.min_precision
        )?;
    } else {
        writeln!(
            out,
            "  no (k, J) reaches precision {}: this is the best F1 instead (ties: smaller k, middle J)",
            args.min_precision
        )?;
    }
    writeln!(
        out,
        "current:     --max-distance {} --min-jaccard {:.2}  (precision {:.3}, recall {:.3}, F1 {:.3})",
        current.max_distance, current.min_jaccard, current.precision, current.recall, current.f1
    )?;
    writeln!(
        out,
        "index: {records} records at max_distance {}: {}",
        c.max_distance,
        plan_line(plan)
    )?;
    writeln!(out)?;
    let j_index = grid
        .jaccard_index(c.min_jaccard)
        .expect("the recommendation is on the grid");
    writeln!(
        out,
        "by max_distance at min_jaccard {:.2} (within k: share of duplicates the index proposes):",
        c.min_jaccard
    )?;
    writeln!(out, "     k  precision  recall     F1  within k")?;
    for cell in grid.by_distance(j_index) {
        let mark = if cell.max_distance == c.max_distance {
            "*"
        } else {
            " "
        };
        writeln!(
            out,
            "{mark} {:>4}  {:>9.3}  {:>6.3}  {:>5.3}  {:>8.3}",
            cell.max_distance, cell.precision, cell.recall, cell.f1, cell.candidate_recall
        )?;
    }
    writeln!(out)?;
    writeln!(out, "by min_jaccard at max_distance {}:", c.max_distance)?;
    writeln!(out, "     J  precision  recall     F1")?;
    for cell in grid.by_jaccard(c.max_distance) {
        let mark = if (cell.min_jaccard - c.min_jaccard).abs() < 1e-9 {
            "*"
        } else {
            " "
        };
        writeln!(
            out,
            "{mark} {:.2}  {:>9.3}  {:>6.3}  {:>5.3}",
            cell.min_jaccard, cell.precision, cell.recall, cell.f1
        )?;
    }
    Ok(())
}

fn print_inverse(out: &mut impl Write, inv: &RadiusAnswer) -> anyhow::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "inverse: to propose {:.0}% of the {} pairs with Jaccard >= {:.2}, use --max-distance {} (reaches {:.3})",
        inv.target_recall * 100.0,
        inv.similar_pairs,
        inv.min_jaccard,
        inv.max_distance,
        inv.recall
    )?;
    let curve: Vec<String> = inv
        .recall_by_distance
        .iter()
        .enumerate()
        .map(|(k, r)| format!("{k}:{r:.2}"))
        .collect();
    writeln!(out, "  recall by radius: {}", curve.join(" "))?;
    writeln!(
        out,
        "index: {} records at max_distance {}: {}",
        inv.records,
        inv.max_distance,
        plan_line(&inv.plan)
    )?;
    if inv.max_distance > 32 {
        writeln!(
            out,
            "  note: dedup refuses --max-distance above 32: at this similarity SimHash no longer separates pairs; raise the Jaccard target"
        )?;
    }
    Ok(())
}
