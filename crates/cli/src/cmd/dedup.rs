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
use neardup::{Decision, Deduper, Outcome, Record, Store, TextField, Timestamp};
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::args::{InputArgs, ProfileArgs, RuleArgs};
use crate::input::{self, Reject};
use crate::output::UncachedFile;

/// Arguments of `neardup dedup`.
#[derive(Debug, Args)]
pub struct DedupArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[command(flatten)]
    pub rule: RuleArgs,
    /// The store: an SQLite file, created if missing. A second run with the same store
    /// deduplicates its input against everything stored.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// Directory for kept.jsonl, clusters.jsonl, merges.jsonl, rejects.jsonl, report.json.
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

/// What a record's outcome is written with: its JSON object for kept.jsonl and where it
/// came from.
type Kept = (Option<SpoolObject>, String);

/// The command line's input for [`Runner`]: lines of JSON, or of text, or whole documents,
/// parsed on the analysis threads.
struct Input<'a>(&'a InputArgs);

impl pipeline::Source for Input<'_> {
    type Item = input::Item;
    type Extra = Kept;
    type Reject = Reject;

    fn parse(&self, item: input::Item) -> Result<Pending, Reject> {
        item.parse(self.0).and_then(|r| convert(r, self.0))
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
        (object, origin): Kept,
        outcome: Outcome,
    ) -> anyhow::Result<()> {
        self.record_outcome(record, object, &origin, outcome)
    }

    fn stops_at(&mut self, reject: &Reject) -> Option<anyhow::Error> {
        self.strict.then(|| anyhow::anyhow!("{reject} (--strict)"))
    }

    fn progress(&mut self, items: u64) {
        self.progress.set_position(items);
    }
}

/// A record's JSON object for kept.jsonl: its line as read, or the line's members but those
/// whose keys kept.jsonl sets.
enum SpoolObject {
    AsRead(input::LineBytes),
    Members(input::LineBytes, Vec<std::ops::Range<usize>>),
}

impl SpoolObject {
    /// The object (valid, as read) for kept.jsonl: kept as read, only trimmed, unless it has
    /// members kept.jsonl sets (see [`input::Record::kept_members`]); then only its other
    /// members.
    fn new(object: input::LineBytes, kept_members: Option<Vec<std::ops::Range<usize>>>) -> Self {
        match kept_members {
            None => SpoolObject::AsRead(object.trimmed()),
            Some(kept) => SpoolObject::Members(object, kept),
        }
    }
}

/// Counts for the report.
#[derive(Debug, Default)]
struct Counts {
    input: u64,
    new: u64,
    too_short: u64,
    exact: u64,
    near: u64,
    short_near: u64,
    displaced_survivor: u64,
    /// Clusters a record bridged fused with its own (their survivors merged).
    fused: u64,
    already_stored: u64,
    /// Records whose id an earlier record of this input has (rejected).
    duplicate_ids: u64,
    rejected: u64,
    text_bytes: u64,
    verify_rejections: u64,
}

impl Counts {
    fn count(&mut self, rule: MergeRule) {
        match rule {
            MergeRule::Exact => self.exact += 1,
            MergeRule::SimhashJaccard => self.near += 1,
            MergeRule::CharsJaccard => self.short_near += 1,
        }
    }
}

struct HostShare {
    shingles: u64,
    removed: u64,
}

pub fn run(args: &DedupArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let now = Timestamp::now();
    if args.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating output directory {}", args.out.display()))?;
    let _lock = super::lock_store(&args.store, "neardup dedup", args.no_wait)?;
    let skipped = input::skipped_files(&args.input);
    let total_bytes = input::total_bytes(&args.input);
    let expected = total_bytes.map_or(0, |b| b / 2048);
    let mut deduper = super::open_deduper_with(
        &args.store,
        &args.profile,
        &args.rule,
        expected,
        !args.no_language,
        true,
    )
    .with_context(|| format!("opening store {}", args.store.display()))?;
    deduper.collect_pairs(args.pairs);
    let defaults_note = changed_defaults_note(&deduper)?;
    let show = !args.quiet && std::io::stderr().is_terminal();

    // Analysis gets a pool of its own (see `Runner::analysis_pool`), below the priority of
    // the thread that decides (see `lower_thread_priority`).
    let analysis_pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("neardup-analysis-{i}"))
        .start_handler(|_| lower_thread_priority())
        .build()
        .context("starting the analysis threads")?;
    let source = Input(&args.input);
    let mut runner = Runner::new(&mut deduper)?
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
        out: Outputs::create(&args.out, args.pairs)?,
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
            let mut deduper = super::open_deduper_with(
                &args.store,
                &args.profile,
                &args.rule,
                expected,
                !args.no_language,
                true,
            )
            .with_context(|| format!("reopening store {}", args.store.display()))?;
            deduper.collect_pairs(args.pairs);
            Ok(deduper)
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
    let stats = deduper.stats();
    let check = check_clusters(
        &deduper,
        &state.run_ids,
        stats.largest_cluster_survivor.as_deref(),
    )?;
    let c = &state.counts;
    let accepted = state.run_ids.len() as u64;
    let balanced =
        c.input == kept + merged + c.rejected && accepted == kept + merged && unlogged_left == 0;
    let elapsed = started.elapsed().as_secs_f64();
    let largest_warning = stats.largest_cluster >= 1000
        || (stats.records > 100 && stats.largest_cluster * 20 > stats.records)
        || check
            .suspicious
            .iter()
            .any(|g| Some(g.survivor.as_str()) == stats.largest_cluster_survivor.as_deref());
    let hosts: Vec<Value> = deduper
        .boilerplate_hosts()
        .into_iter()
        .map(|(host, pages, shingles)| {
            let share = state.hosts.get(&host).map_or(0.0, |s| {
                s.removed as f64 / (s.removed + s.shingles).max(1) as f64
            });
            json!({"host": host, "pages_learned_from": pages, "boilerplate_shingles": shingles,
                   "share_of_shingles_removed": round(share, 4)})
        })
        .collect();
    let report = json!({
        "input_records": c.input,
        "kept": kept,
        "merged": merged,
        "rejected": c.rejected,
        "accounting_balanced": balanced,
        "accepted_records": accepted,
        "merged_without_merge_log_entry": unlogged_left,
        "decisions": {
            "new": c.new, "too_short": c.too_short, "exact": c.exact, "near": c.near, "short_near": c.short_near,
            "displaced_survivors": c.displaced_survivor, "already_stored": c.already_stored,
            "duplicate_ids": c.duplicate_ids,
            "fused_clusters": c.fused,
        },
        "verification_rejections": c.verify_rejections,
        "rule": {
            "max_distance": deduper.rule().max_distance,
            "min_jaccard": deduper.rule().min_jaccard,
            "min_words": deduper.rule().min_words,
            "linkage": deduper.rule().linkage.as_str(),
            "profile": deduper.hasher().profile().to_string(),
        },
        "store": {
            "path": args.store.display().to_string(),
            "records": stats.records,
            "clusters": stats.clusters,
        },
        "largest_group": {
            "size": stats.largest_cluster,
            "survivor": stats.largest_cluster_survivor,
            "suspicious": largest_warning,
        },
        "cluster_check": check.to_json(),
        "index": {
            "layout": stats.index.layout,
            "largest_bucket": stats.index.largest_bucket,
            "memory_bytes": stats.index.memory_bytes,
        },
        "boilerplate_hosts": hosts,
        // Files below input directories that are not read (not documents of the input's
        // format): named, so that nothing is left out unsaid.
        "skipped_files": skipped.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "timings_seconds": {
            "boilerplate": round(learned_at.as_secs_f64(), 3),
            "dedup": round((deduped_at - learned_at).as_secs_f64(), 3),
            "total": round(elapsed, 3),
        },
        "text_bytes": c.text_bytes,
        "throughput_mb_per_s": round(c.text_bytes as f64 / 1e6 / elapsed.max(1e-9), 2),
        // The input files' bytes as stored (compressed where they are; markup included):
        // HTML pages hold several times their text.
        "input_bytes": total_bytes,
        "input_mb_per_s": total_bytes.map(|b| round(b as f64 / 1e6 / elapsed.max(1e-9), 2)),
    });
    state.out.finish(&report)?;
    deduper
        .set_store_meta(DEFAULTS_KEY, DEFAULTS_VERSION)
        .context("recording the defaults in the store")?;
    if !args.quiet {
        eprintln!(
            "neardup: {} records: {} kept, {} merged ({} exact, {} near, {} short near, {} fused), {} rejected; {:.1} MB in {:.1}s ({:.0} MB/s); store {} holds {} records in {} clusters",
            c.input, kept, merged, c.exact, c.near, c.short_near, c.fused, c.rejected,
            c.text_bytes as f64 / 1e6, elapsed, c.text_bytes as f64 / 1e6 / elapsed.max(1e-9),
            args.store.display(), stats.records, stats.clusters
        );
        eprintln!(
            "neardup: largest group {} (survivor {}), largest index bucket {}; outputs in {}",
            stats.largest_cluster,
            stats.largest_cluster_survivor.as_deref().unwrap_or("-"),
            stats.index.largest_bucket,
            args.out.display()
        );
        if let Some(note) = defaults_note {
            eprintln!("neardup: {note}");
        }
        if let Some(note) = input::skipped_note(&skipped, &args.input) {
            eprintln!("neardup: {note}");
        }
        for g in &check.suspicious {
            eprintln!("neardup: warning: {}", g.describe());
        }
        if check.below_half > 0 {
            eprintln!(
                "neardup: {} of {} member pairs sampled in the {} largest groups are under Jaccard 0.5 (chains of near-duplicates; --linkage guarded keeps them apart): see cluster_check in report.json",
                check.below_half, check.pairs, check.clusters
            );
        }
        if largest_warning {
            eprintln!("neardup: warning: the largest group holds {} records: that is usually an empty identity field or an extraction failure, not real duplication", stats.largest_cluster);
        }
    }
    if !balanced {
        let mut detail = Vec::new();
        if accepted != kept + merged {
            detail.push(format!(
                "{accepted} records accepted, {} of them kept or merged",
                kept + merged
            ));
        }
        if c.input != accepted + c.rejected {
            detail.push(format!(
                "{} records read, {} accepted or rejected",
                c.input,
                accepted + c.rejected
            ));
        }
        if unlogged_left > 0 {
            detail.push(format!(
                "{unlogged_left} merged records without a merge-log entry"
            ));
        }
        return Err(crate::exit::Unbalanced {
            input: c.input,
            kept,
            merged,
            rejected: c.rejected,
            sum: kept + merged + c.rejected,
            detail: detail.join("; "),
        }
        .into());
    }
    Ok(crate::exit::done(c.rejected))
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

fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
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
    let first_seen = match &r.first_seen {
        None => None,
        Some(t) => Some(Timestamp::parse_rfc3339(t).map_err(|e| Reject {
            origin: r.origin.clone(),
            id: Some(r.id.clone()),
            reason: format!("field {:?}: {e}", args.time_field),
        })?),
    };
    let object = r
        .object
        .take()
        .map(|o| SpoolObject::new(o, r.kept_members.take()));
    let record = Record {
        id: r.id,
        url: r.url,
        host: r.host,
        first_seen,
        retention_class: r.retention_class,
        fields: weighted(r.fields, args),
    };
    Ok((record, (object, r.origin.to_string())))
}

/// An input record's content fields with their `--field-weight`s.
fn weighted(fields: Vec<(String, String)>, args: &InputArgs) -> Vec<TextField> {
    fields
        .into_iter()
        .map(|(name, text)| TextField {
            weight: args.weight_of(&name),
            name,
            text,
        })
        .collect()
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

/// A survivor's kept.jsonl line: its object as read, up to before the closing brace
/// (`body` of `source`), followed by `tail` (the cluster's keys and the closing brace).
struct KeptLine {
    id: String,
    source: Source,
    body: Body,
    tail: Vec<u8>,
}

/// What a kept line's object is, in its source.
enum Body {
    /// The object up to its closing brace.
    Whole(std::ops::Range<usize>),
    /// An opening brace, then these members.
    Members(Vec<std::ops::Range<usize>>),
}

impl Body {
    fn write(&self, source: &[u8], out: &mut impl Write) -> std::io::Result<()> {
        match self {
            Body::Whole(range) => out.write_all(&source[range.clone()]),
            Body::Members(members) => {
                out.write_all(b"{")?;
                for (i, member) in members.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    out.write_all(&source[member.clone()])?;
                }
                Ok(())
            }
        }
    }

    /// Where in its source it ends.
    fn end(&self) -> usize {
        match self {
            Body::Whole(range) => range.end,
            Body::Members(members) => members.iter().map(|m| m.end).max().unwrap_or(0),
        }
    }
}

/// Where a kept line's object is: in the spool line, or in a mapped input file.
#[derive(Clone, Copy)]
enum Source {
    Spool,
    Mapped(usize),
}

/// The mapped input files spooled objects refer to (`@map:start:end` in the spool, instead
/// of a copy of the object): a 1 GB run spooled 700 MB of objects, copied from the input into
/// the spool, through the page cache and back.
#[derive(Default)]
struct SpoolMaps {
    maps: Vec<Arc<memmap2::Mmap>>,
    by_address: HashMap<usize, usize>,
    /// Per map, the end of what kept.jsonl has been written from: pages before it are
    /// unmapped again, so the run does not end with its kept objects resident.
    released: Vec<usize>,
}

impl SpoolMaps {
    fn index_of(&mut self, map: &Arc<memmap2::Mmap>) -> usize {
        let address = Arc::as_ptr(map) as usize;
        *self.by_address.entry(address).or_insert_with(|| {
            self.maps.push(map.clone());
            self.released.push(0);
            self.maps.len() - 1
        })
    }

    /// The map and the members `map[start..end]`, ... named by a spooled
    /// `&map:start:end:start:end...`.
    fn resolve_members(
        &self,
        reference: &str,
    ) -> anyhow::Result<(usize, Vec<std::ops::Range<usize>>)> {
        let bad = || anyhow::anyhow!("a bad object reference {reference:?}");
        let numbers = reference
            .split(':')
            .map(str::parse::<usize>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| bad())?;
        let (&map, offsets) = numbers.split_first().ok_or_else(bad)?;
        let len = self.maps.get(map).ok_or_else(bad)?.len();
        if offsets.len() % 2 != 0 {
            return Err(bad());
        }
        let members: Vec<std::ops::Range<usize>> =
            offsets.chunks_exact(2).map(|p| p[0]..p[1]).collect();
        if members.iter().any(|m| m.start > m.end || m.end > len) {
            bail!("an object reference out of range {reference:?}");
        }
        Ok((map, members))
    }

    /// The map, start and bytes `map[start..end]` named by a spooled `@map:start:end`.
    fn resolve(&self, reference: &str) -> anyhow::Result<(usize, usize, &[u8])> {
        let mut parts = reference.split(':').map(str::parse::<usize>);
        let (Some(Ok(map)), Some(Ok(start)), Some(Ok(end)), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            bail!("a bad object reference {reference:?}");
        };
        let bytes = self
            .maps
            .get(map)
            .and_then(|m| m.get(start..end))
            .with_context(|| format!("an object reference out of range {reference:?}"))?;
        Ok((map, start, bytes))
    }
}

/// A spooled record's kept.jsonl line, when it survives: its object with the cluster's keys
/// added. The object itself is not copied: the caller writes it from the spool's line.
fn render_kept(
    line: &str,
    maps: &SpoolMaps,
    deduper: &Deduper<Box<dyn Store>>,
) -> anyhow::Result<Option<KeptLine>> {
    let mut parts = line.splitn(4, '\t');
    let (Some(id), Some(origin), Some(language), Some(object)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        bail!("a line has fewer than 4 fields");
    };
    let id: String = serde_json::from_str(id)?;
    // Only survivors are written: the cheap check first, the cluster's view after.
    if deduper
        .survivor_of(&id)
        .is_none_or(|(survivor, _)| survivor != id)
    {
        return Ok(None);
    }
    let Some(cluster) = deduper.cluster_of(&id) else {
        return Ok(None);
    };
    let mut tail = Vec::with_capacity(256);
    let (source, body) = if object == "null" {
        write!(
            tail,
            "{{\"id\":{},\"source\":{origin},",
            serde_json::to_string(&id)?
        )?;
        (Source::Spool, Body::Whole(0..0))
    } else if let Some(reference) = object.strip_prefix('&') {
        // The members of an object kept.jsonl sets some keys of, then ours.
        let (map, members) = maps.resolve_members(reference)?;
        if !members.is_empty() {
            tail.push(b',');
        }
        (Source::Mapped(map), Body::Members(members))
    } else {
        // The object as read (its own copies of the added keys were removed before it was
        // spooled): up to its closing brace, then ours.
        let (source, start, bytes) = match object.strip_prefix('@') {
            Some(reference) => {
                let (map, start, bytes) = maps.resolve(reference)?;
                (Source::Mapped(map), start, bytes)
            }
            None => (Source::Spool, line.len() - object.len(), object.as_bytes()),
        };
        let body = bytes
            .strip_suffix(b"}")
            .context("a spooled object is not a JSON object")?
            .trim_ascii_end();
        if !body.ends_with(b"{") {
            tail.push(b',');
        }
        (source, Body::Whole(start..start + body.len()))
    };
    write!(
        tail,
        "\"source_urls\":{},\"first_seen\":{},\"cluster_size\":{},\"neardup_fingerprint\":{}",
        serde_json::to_string(&cluster.source_urls)?,
        serde_json::to_string(&cluster.first_seen.to_rfc3339())?,
        cluster.members.len(),
        serde_json::to_string(&deduper.fingerprint_of(&id))?,
    )?;
    if language != "null" {
        tail.extend_from_slice(b",\"neardup_language\":");
        tail.extend_from_slice(language.as_bytes());
    }
    tail.extend_from_slice(b"}\n");
    Ok(Some(KeptLine {
        id,
        source,
        body,
        tail,
    }))
}

/// The survivors' kept.jsonl lines of a chunk of spool lines, rendered in parallel (`None`
/// for a line whose record does not survive).
fn render_kept_chunk(
    chunk: &[input::LineBytes],
    maps: &SpoolMaps,
    deduper: &Deduper<Box<dyn Store>>,
) -> anyhow::Result<Vec<Option<KeptLine>>> {
    chunk
        .par_iter()
        .map(|line| render_kept(simdutf8::basic::from_utf8(line)?, maps, deduper))
        .collect()
}

/// Writes a rendered chunk's lines in order (each id once) and returns how many it wrote.
fn write_kept_chunk(
    chunk: &[input::LineBytes],
    rendered: Vec<Option<KeptLine>>,
    maps: &SpoolMaps,
    released: &mut [usize],
    out: &mut impl Write,
    written: &mut HashSet<String>,
) -> anyhow::Result<u64> {
    let mut kept = 0;
    let mut read_upto = released.to_vec();
    for (line, k) in chunk.iter().zip(rendered) {
        let Some(k) = k else { continue };
        if written.insert(k.id) {
            match k.source {
                Source::Spool => k.body.write(line, out)?,
                Source::Mapped(map) => {
                    read_upto[map] = read_upto[map].max(k.body.end());
                    k.body.write(&maps.maps[map], out)?;
                }
            }
            out.write_all(&k.tail)?;
            kept += 1;
        }
    }
    // Nothing borrows the objects written: their pages can go (a later reference to them,
    // if any, reads them from the page cache again).
    for (m, upto) in read_upto.into_iter().enumerate() {
        if upto > released[m] {
            input::release_pages(&maps.maps[m], released[m]..upto);
            released[m] = upto;
        }
    }
    Ok(kept)
}

/// Spool lines rendered together (in parallel) into kept.jsonl lines. Rendering runs a
/// chunk or two ahead of the writer, and what it reads of the input stays mapped until
/// written: chunks of 8,192 lines raised the 1 GB bench run's RSS by 280 MB.
const KEPT_CHUNK: usize = 2048;
/// kept.jsonl's block buffer: each direct write of it waits for the disk (about 4 ms at
/// 2 GB/s) while the next chunk renders.
const KEPT_BUFFER: usize = 8 << 20;

/// Buffer of each output file: records are kilobytes long, so an 8 KiB buffer would write
/// nearly every record with a system call of its own.
const OUTPUT_BUFFER: usize = 1 << 20;

/// The output files.
struct Outputs {
    dir: PathBuf,
    merges: BufWriter<File>,
    rejects: BufWriter<File>,
    /// pairs.jsonl, with --pairs.
    pairs: Option<BufWriter<File>>,
    spool: BufWriter<File>,
}

impl Outputs {
    fn create(dir: &Path, pairs: bool) -> anyhow::Result<Outputs> {
        let open = |name: &str| -> anyhow::Result<BufWriter<File>> {
            let path = dir.join(name);
            Ok(BufWriter::with_capacity(
                OUTPUT_BUFFER,
                File::create(&path).with_context(|| format!("creating {}", path.display()))?,
            ))
        };
        Ok(Outputs {
            dir: dir.to_owned(),
            merges: open("merges.jsonl")?,
            rejects: open("rejects.jsonl")?,
            pairs: if pairs {
                Some(open("pairs.jsonl")?)
            } else {
                // No stale pairs from an earlier run with --pairs beside this run's outputs.
                match std::fs::remove_file(dir.join("pairs.jsonl")) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(e).context("removing an old pairs.jsonl")
                    }
                    _ => None,
                }
            },
            spool: open(".kept.spool")?,
        })
    }

    fn merge(&mut self, e: &MergeLogEntry) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.merges, e)?;
        self.merges.write_all(b"\n")?;
        Ok(())
    }

    fn finish(&mut self, report: &Value) -> anyhow::Result<()> {
        self.merges.flush()?;
        self.rejects.flush()?;
        if let Some(pairs) = &mut self.pairs {
            pairs.flush()?;
        }
        let path = self.dir.join("report.json");
        std::fs::write(&path, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        let _ = std::fs::remove_file(self.dir.join(".kept.spool"));
        Ok(())
    }
}

struct RunState {
    out: Outputs,
    /// `--strict`: a record rejected by its decision (a duplicate id, say) ends the run.
    strict: bool,
    counts: Counts,
    /// Ids of this run's records that were accepted (not rejected), in order.
    run_ids: Vec<String>,
    /// Where each of them came from (`file:line`), by the hash of its id: a later record
    /// of the input with the same id is rejected, naming it.
    run_origins: HashMap<u128, Box<str>>,
    /// The hashes of the merged ids of merges.jsonl's entries so far.
    merge_logged: HashSet<u128>,
    hosts: BTreeMap<String, HostShare>,
    /// The mapped inputs the spool refers to.
    maps: SpoolMaps,
    progress: ProgressBar,
}

impl RunState {
    fn reject(&mut self, origin: &str, id: Option<&str>, reason: &str) -> anyhow::Result<()> {
        self.counts.rejected += 1;
        let (file, line) = match origin.rsplit_once(':') {
            Some((f, l)) if l.parse::<u64>().is_ok() => (f.to_owned(), l.parse::<u64>().ok()),
            _ => (origin.to_owned(), None),
        };
        serde_json::to_writer(
            &mut self.out.rejects,
            &json!({"file": file, "line": line, "id": id, "reason": reason}),
        )?;
        self.out.rejects.write_all(b"\n")?;
        if self.strict {
            self.out.rejects.flush()?;
            bail!("{origin}: {reason} (--strict)");
        }
        Ok(())
    }

    /// Remembers a kept record for kept.jsonl: its id, origin and language as JSON strings
    /// and its object as serialised, tab-separated (serialised JSON holds no raw tab).
    fn spool(
        &mut self,
        id: &str,
        object: Option<SpoolObject>,
        origin: &str,
        language: Option<&str>,
    ) -> anyhow::Result<()> {
        let w = &mut self.out.spool;
        serde_json::to_writer(&mut *w, id)?;
        w.write_all(b"\t")?;
        serde_json::to_writer(&mut *w, origin)?;
        w.write_all(b"\t")?;
        serde_json::to_writer(&mut *w, &language)?;
        w.write_all(b"\t")?;
        match &object {
            Some(SpoolObject::AsRead(line)) => match line.mapped() {
                // A reference, not a copy: the object is read from the input at the end.
                Some((map, range)) => write!(
                    w,
                    "@{}:{}:{}",
                    self.maps.index_of(map),
                    range.start,
                    range.end
                )?,
                None => w.write_all(line)?,
            },
            Some(SpoolObject::Members(line, kept)) => match line.mapped() {
                // References to the members kept, as to a whole object.
                Some((map, range)) => {
                    write!(w, "&{}", self.maps.index_of(map))?;
                    for member in kept {
                        let (start, end) = (range.start + member.start, range.start + member.end);
                        write!(w, ":{start}:{end}")?;
                    }
                }
                None => w.write_all(&input::object_with(line, kept))?,
            },
            None => w.write_all(b"null")?,
        }
        w.write_all(b"\n")?;
        Ok(())
    }

    fn record_outcome(
        &mut self,
        record: &Record,
        object: Option<SpoolObject>,
        origin: &str,
        outcome: neardup::Outcome,
    ) -> anyhow::Result<()> {
        if let Some(host) = &outcome.host {
            let s = self.hosts.entry(host.clone()).or_insert(HostShare {
                shingles: 0,
                removed: 0,
            });
            s.shingles += outcome.shingles as u64;
            s.removed += outcome.boilerplate_removed as u64;
        }
        if let Some(first) = self.run_origins.get(&id_hash(&record.id)) {
            // The same id again in this input: the first record stands, this one is
            // rejected (a rerun's records, stored by an earlier run, are not in the map).
            let reason = match &outcome.decision {
                Decision::AlreadyStored { .. } => Some(format!(
                    "duplicate id {:?}: the same record as {first} (an id is used once per input; the first is kept as decided)",
                    record.id
                )),
                Decision::Rejected { reason } if reason.starts_with("duplicate id") => {
                    Some(format!(
                        "duplicate id with different text: {:?} was first used by {first} (ids must be unique; the first record is kept as it was)",
                        record.id
                    ))
                }
                _ => None,
            };
            if let Some(reason) = reason {
                self.counts.duplicate_ids += 1;
                return self.reject(origin, Some(&record.id), &reason);
            }
        }
        for m in &outcome.merges {
            self.log_merge(m)?;
        }
        if let Some(out) = &mut self.out.pairs {
            for p in &outcome.pairs {
                serde_json::to_writer(
                    &mut *out,
                    &json!({"a": record.id, "b": p.other, "distance": p.scores.distance,
                            "jaccard": p.scores.jaccard, "rule": p.rule.as_str()}),
                )?;
                out.write_all(b"\n")?;
            }
        }
        self.counts.fused += outcome.fused as u64;
        match outcome.decision {
            Decision::Rejected { reason } => {
                return self.reject(origin, Some(&record.id), &reason);
            }
            Decision::Kept {
                too_short,
                displaced,
                joined,
            } => {
                match (joined, displaced) {
                    (Some((rule, _, _)), Some(_)) => {
                        self.counts.displaced_survivor += 1;
                        self.counts.count(rule);
                    }
                    _ if too_short => self.counts.too_short += 1,
                    _ => self.counts.new += 1,
                }
                self.spool(&record.id, object, origin, outcome.language.as_deref())?;
            }
            Decision::Merged { rule, .. } => self.counts.count(rule),
            Decision::AlreadyStored { survivor } => {
                self.counts.already_stored += 1;
                // A merged one's entry comes from the store's merge log at the end.
                if survivor == record.id {
                    self.spool(&record.id, object, origin, outcome.language.as_deref())?;
                }
            }
        }
        self.run_origins.insert(id_hash(&record.id), origin.into());
        self.run_ids.push(record.id.clone());
        Ok(())
    }

    /// Writes a merge-log entry to merges.jsonl.
    fn log_merge(&mut self, e: &MergeLogEntry) -> anyhow::Result<()> {
        self.merge_logged.insert(id_hash(&e.merged));
        self.out.merge(e)
    }

    /// Writes kept.jsonl (this run's records that survive) and clusters.jsonl (clusters of
    /// two or more touched by this run); returns (kept, merged) counts of this run's records
    /// and the ids of its merged records that merges.jsonl has no entry for yet.
    fn write_kept_and_clusters(
        &mut self,
        deduper: &Deduper<Box<dyn Store>>,
    ) -> anyhow::Result<(u64, u64, Vec<String>)> {
        self.out.spool.flush()?;
        let dir = self.out.dir.clone();
        let kept_path = dir.join("kept.jsonl");
        let mut kept_out = UncachedFile::create(&kept_path, KEPT_BUFFER)
            .with_context(|| format!("creating {}", kept_path.display()))?;
        // Two stages: this thread reads the spool and renders its lines chunk by chunk, in
        // parallel; a writer thread writes the rendered chunks in spool order meanwhile.
        let mut maps = std::mem::take(&mut self.maps);
        let mut released = std::mem::take(&mut maps.released);
        let maps = &maps;
        let run_ids = &self.run_ids;
        let logged = &self.merge_logged;
        let (kept, merged) =
            std::thread::scope(|scope| -> anyhow::Result<(u64, (u64, Vec<String>))> {
                // clusters.jsonl needs only the deduper: it is written meanwhile, on a thread of
                // its own (kept.jsonl's writer spends its time in the kernel, copying).
                let clusters = scope.spawn(|| write_clusters(&dir, run_ids, logged, deduper));
                type Rendered = (Vec<input::LineBytes>, Vec<Option<KeptLine>>);
                let (tx, rx) = std::sync::mpsc::sync_channel::<Rendered>(1);
                let kept_out = &mut kept_out;
                let writer = scope.spawn(move || -> anyhow::Result<u64> {
                    let mut kept = 0u64;
                    let mut written: HashSet<String> = HashSet::new();
                    for (chunk, rendered) in rx {
                        kept += write_kept_chunk(
                            &chunk,
                            rendered,
                            maps,
                            &mut released,
                            kept_out,
                            &mut written,
                        )?;
                    }
                    Ok(kept)
                });
                let mut chunk = Vec::with_capacity(KEPT_CHUNK);
                let read = input::for_each_line(&dir.join(".kept.spool"), |line| {
                    chunk.push(line);
                    if chunk.len() == KEPT_CHUNK {
                        let rendered = render_kept_chunk(&chunk, maps, deduper)?;
                        let full = std::mem::replace(&mut chunk, Vec::with_capacity(KEPT_CHUNK));
                        // A closed channel means the writer failed: its error is reported below.
                        if tx.send((full, rendered)).is_err() {
                            bail!("the writer stopped");
                        }
                    }
                    Ok(())
                })
                .and_then(|()| {
                    let rendered = render_kept_chunk(&chunk, maps, deduper)?;
                    if tx.send((std::mem::take(&mut chunk), rendered)).is_err() {
                        bail!("the writer stopped");
                    }
                    Ok(())
                });
                drop(tx);
                let kept = writer
                    .join()
                    .expect("the kept.jsonl writer does not panic")
                    .with_context(|| format!("writing {} from its spool", kept_path.display()))?;
                read.with_context(|| format!("writing {} from its spool", kept_path.display()))?;
                let merged = clusters
                    .join()
                    .expect("the clusters.jsonl writer does not panic")
                    .with_context(|| format!("writing {}", dir.join("clusters.jsonl").display()))?;
                Ok((kept, merged))
            })?;
        kept_out
            .flush()
            .with_context(|| format!("writing {}", kept_path.display()))?;
        let (merged, unlogged) = merged;
        Ok((kept, merged, unlogged))
    }
}

/// Writes clusters.jsonl: one line per cluster of two or more that this run's records are
/// in, in the order of their first record; answers how many of the run's records were merged,
/// and which of them have no entry in merges.jsonl yet (`logged`: the hashes of those that do).
fn write_clusters(
    dir: &Path,
    run_ids: &[String],
    logged: &HashSet<u128>,
    deduper: &Deduper<Box<dyn Store>>,
) -> anyhow::Result<(u64, Vec<String>)> {
    let mut clusters_out =
        BufWriter::with_capacity(OUTPUT_BUFFER, File::create(dir.join("clusters.jsonl"))?);
    let mut seen: HashSet<&str> = HashSet::new();
    let mut order: Vec<&str> = Vec::new();
    let mut merged = 0u64;
    let mut unlogged = Vec::new();
    // Each run record's survivor (cheap), then one view per cluster of two or more.
    for id in run_ids {
        let Some((survivor, size)) = deduper.survivor_of(id) else {
            continue;
        };
        if survivor != id {
            merged += 1;
            if !logged.contains(&id_hash(id)) {
                unlogged.push(id.clone());
            }
        }
        if size >= 2 && seen.insert(survivor) {
            order.push(survivor);
        }
    }
    let views: Vec<Option<neardup::pipeline::ClusterView>> =
        order.par_iter().map(|s| deduper.cluster_of(s)).collect();
    for (n, c) in views.iter().flatten().enumerate() {
        serde_json::to_writer(
            &mut clusters_out,
            &json!({"cluster": n + 1, "survivor": c.survivor, "members": c.members,
                    "source_urls": c.source_urls, "first_seen": c.first_seen.to_rfc3339()}),
        )?;
        clusters_out.write_all(b"\n")?;
    }
    clusters_out.flush()?;
    Ok((merged, unlogged))
}

/// What a record's id is known by in this run's sets: 128 bits of hash, not the string.
fn id_hash(id: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(id.as_bytes())
}

/// The store meta key naming the release of the CLI's defaults the store was last run with.
const DEFAULTS_KEY: &str = "cli.defaults";
/// This release's defaults (2: single linkage, no short-text rule, radius 16, no
/// boilerplate learning; 1, the key's absence: guarded linkage, character 3-grams under
/// 50 words, radius 14, boilerplate learned).
const DEFAULTS_VERSION: &str = "2";

/// A note for the summary when this run's defaults differ from those the store's records
/// were decided with: their decisions would not all be made again the same way.
fn changed_defaults_note(deduper: &Deduper<Box<dyn Store>>) -> anyhow::Result<Option<String>> {
    if deduper.stats().records == 0
        || deduper.store().meta(DEFAULTS_KEY)?.as_deref() == Some(DEFAULTS_VERSION)
    {
        return Ok(None);
    }
    Ok(Some(
        "the defaults changed since this store's records were decided (now --linkage single, --min-words 1, --max-distance 16, boilerplate learned only with --boilerplate; before: --linkage guarded, --min-words 50 with --short-text chars, --max-distance 14, boilerplate learned): the stored decisions stand, new records are decided under the new defaults; pass the old flags to keep deciding as before".to_owned(),
    ))
}

/// The largest groups a run touched, checked by a sample of their member pairs.
const CHECKED_GROUPS: usize = 50;
/// Distinct texts sampled per group (every pair among them is measured).
const CHECKED_TEXTS: usize = 8;

/// What sampling the pairs inside the largest groups found.
struct ClusterCheck {
    clusters: usize,
    pairs: usize,
    /// Sampled pairs under Jaccard 0.5: chains.
    below_half: usize,
    /// Groups whose sampled pairs mostly fall under the verification threshold.
    suspicious: Vec<SuspiciousGroup>,
}

struct SuspiciousGroup {
    survivor: String,
    size: usize,
    pairs: usize,
    below_threshold: usize,
    threshold: f64,
    weakest: Vec<neardup::pipeline::ClusterPair>,
}

impl SuspiciousGroup {
    fn describe(&self) -> String {
        let weakest: Vec<String> = self
            .weakest
            .iter()
            .map(|p| format!("{} ~ {} {:.2}", p.a, p.b, p.jaccard))
            .collect();
        format!(
            "group of {} (survivor {}) is suspicious: {} of {} sampled member pairs are under Jaccard {} (weakest: {}): usually a shared template or an extraction failure, not duplication",
            self.size,
            self.survivor,
            self.below_threshold,
            self.pairs,
            self.threshold,
            weakest.join(", ")
        )
    }
}

impl ClusterCheck {
    fn to_json(&self) -> Value {
        let groups: Vec<Value> = self
            .suspicious
            .iter()
            .map(|g| {
                json!({"survivor": g.survivor, "size": g.size, "pairs_sampled": g.pairs,
                       "pairs_below_threshold": g.below_threshold,
                       "weakest_pairs": g.weakest.iter().map(|p| json!({"a": p.a, "b": p.b, "jaccard": round(p.jaccard, 4)})).collect::<Vec<_>>()})
            })
            .collect();
        json!({"groups_checked": self.clusters, "pairs_sampled": self.pairs,
               "pairs_below_0_5": self.below_half, "suspicious_groups": groups})
    }
}

/// Samples member pairs of the [`CHECKED_GROUPS`] largest groups of three or more that
/// this run's records are in (and the store's largest group): pairs under 0.5 are chains,
/// and a group whose pairs mostly fall under the verification threshold is suspicious.
fn check_clusters(
    deduper: &Deduper<Box<dyn Store>>,
    run_ids: &[String],
    largest: Option<&str>,
) -> anyhow::Result<ClusterCheck> {
    let mut groups: HashMap<&str, usize> = HashMap::new();
    for id in run_ids.iter().map(String::as_str).chain(largest) {
        if let Some((survivor, size)) = deduper.survivor_of(id) {
            if size >= 3 {
                groups.insert(survivor, size);
            }
        }
    }
    let mut groups: Vec<(&str, usize)> = groups.into_iter().collect();
    groups.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    groups.truncate(CHECKED_GROUPS);
    let sampled: Vec<anyhow::Result<neardup::pipeline::ClusterSample>> = groups
        .par_iter()
        .map(|(survivor, _)| Ok(deduper.sample_cluster_pairs(survivor, CHECKED_TEXTS)?))
        .collect();
    let mut check = ClusterCheck {
        clusters: groups.len(),
        pairs: 0,
        below_half: 0,
        suspicious: Vec::new(),
    };
    for ((survivor, size), pairs) in groups.iter().zip(sampled) {
        let neardup::pipeline::ClusterSample {
            pairs,
            min_jaccard: threshold,
        } = pairs?;
        check.pairs += pairs.len();
        check.below_half += pairs.iter().filter(|p| p.jaccard < 0.5).count();
        let below_threshold = pairs.iter().filter(|p| p.jaccard < threshold).count();
        if pairs.len() >= 3 && below_threshold * 2 > pairs.len() {
            check.suspicious.push(SuspiciousGroup {
                survivor: survivor.to_string(),
                size: *size,
                pairs: pairs.len(),
                below_threshold,
                threshold,
                weakest: pairs.into_iter().take(3).collect(),
            });
        }
    }
    Ok(check)
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
