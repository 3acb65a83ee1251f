//! `dedup`'s report: report.json, the summary on stderr, the sampled check of the largest
//! groups, and the accounting that decides the exit code.

use super::*;
use crate::cmd::review::{ReviewInput, REVIEW_INPUT_KEY};

/// What a finished run hands to its report.
pub(super) struct Run<'a> {
    pub args: &'a DedupArgs,
    pub deduper: &'a mut Deduper<Box<dyn Store>>,
    pub state: &'a mut RunState,
    pub kept: u64,
    pub merged: u64,
    /// Records merged without a merge-log entry (none, when the run balances).
    pub unlogged_left: u64,
    pub skipped: &'a [PathBuf],
    pub total_bytes: Option<u64>,
    pub started: Instant,
    pub learned_at: std::time::Duration,
    pub deduped_at: std::time::Duration,
    pub defaults_note: Option<String>,
}

/// Writes report.json, prints the summary and checks the accounting: exit 0 (or 2 with
/// rejects) when every record is accounted for, [`crate::exit::Unbalanced`] if not.
pub(super) fn finish(run: Run<'_>) -> anyhow::Result<ExitCode> {
    let Run {
        args,
        deduper,
        state,
        kept,
        merged,
        unlogged_left,
        skipped,
        total_bytes,
        started,
        learned_at,
        deduped_at,
        defaults_note,
    } = run;
    let stats = deduper.stats();
    let check = check_clusters(
        deduper,
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
    let mut report = json!({
        "input_records": c.input,
        "kept": kept,
        "merged": merged,
        "rejected": c.rejected,
        "accounting_balanced": balanced,
        "accepted_records": accepted,
        "merged_without_merge_log_entry": unlogged_left,
        "decisions": {
            "new": c.new, "too_short": c.too_short, "exact": c.exact, "near": c.near, "short_near": c.short_near,
            "semantic": c.semantic,
            "displaced_survivors": c.displaced_survivor, "already_stored": c.already_stored,
            "duplicate_ids": c.duplicate_ids,
            "fused_clusters": c.fused,
        },
        "verification_rejections": c.verify_rejections,
        "code_fallbacks": c.code_fallbacks,
        "rule": {
            "max_distance": deduper.rule().max_distance,
            "min_jaccard": deduper.rule().min_jaccard,
            "min_words": deduper.rule().min_words,
            "linkage": deduper.rule().linkage.as_str(),
            "profile": deduper.hasher().profile().to_string(),
            "semantic": deduper.rule().semantic.map(|s| serde_json::json!({
                "model": args.model.as_ref().map(|m| m.display().to_string()),
                "radius": s.radius,
                "threshold": s.threshold,
                "simhash_weight": s.weights.simhash_weight,
                "cosine_weight": s.weights.cosine_weight,
            })),
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
    if let Some(watchlist) = &args.watch.watchlist {
        report["alerts"] = json!({
            "watchlist": watchlist.display().to_string(),
            "bands": args.watch.alert_bands.to_string(),
            "records": state.alerted.values().sum::<u64>(),
            "by_level": state.alerted,
        });
    }
    state.out.finish(&report)?;
    deduper
        .set_store_meta(DEFAULTS_KEY, DEFAULTS_VERSION)
        .context("recording the defaults in the store")?;
    // Where the texts are, for the review page of `neardup serve`.
    let earlier = deduper.store().meta(REVIEW_INPUT_KEY)?;
    if let Some(input) = ReviewInput::record(&args.input, earlier.as_deref()) {
        let value = serde_json::to_string(&input).expect("paths serialise");
        deduper
            .set_store_meta(REVIEW_INPUT_KEY, &value)
            .context("recording the input in the store")?;
    }
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
        if args.watch.watchlist.is_some() {
            let levels: Vec<String> = args
                .watch
                .alert_bands
                .levels()
                .map(|l| format!("{l} {}", state.alerted.get(l).copied().unwrap_or(0)))
                .collect();
            eprintln!(
                "neardup: {} records raised watchlist alerts ({}); see alerts.jsonl",
                state.alerted.values().sum::<u64>(),
                levels.join(", ")
            );
        }
        if let Some(note) = defaults_note {
            eprintln!("neardup: {note}");
        }
        if let Some(note) = input::skipped_note(skipped, &args.input) {
            eprintln!("neardup: {note}");
        }
        if c.code_fallbacks > 0 {
            eprintln!(
                "neardup: {} records did not parse as {} and were read as words (code_fallbacks in report.json)",
                c.code_fallbacks,
                match args.profile.code() {
                    Some(crate::args::CodeChoice::Lang(lang)) => lang.name(),
                    _ => "code of their language (or have none code mode parses)",
                }
            );
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

fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
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
