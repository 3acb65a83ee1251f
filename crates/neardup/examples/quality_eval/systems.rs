//! The systems scored: the library's `Deduper` under several rules, and `neardup dedup`
//! outputs.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Instant;

use neardup::{Decision, Deduper, MemoryStore, Record, Rule, Timestamp};
use serde_json::Value;

use crate::args::Args;
use crate::score::Ctx;
use crate::truth::key;
use crate::AnyResult;

pub(crate) struct RunResult {
    pub(crate) name: String,
    pub(crate) rule: Option<Rule>,
    pub(crate) clusters: Vec<Vec<u32>>,
    pub(crate) edges: Vec<(u32, u32)>,
    pub(crate) seconds: f64,
    /// For a CLI run: the boilerplate its store learned (every host's, together).
    pub(crate) furniture: Option<HashSet<u64>>,
}

fn run_deduper(ctx: &Ctx, texts: &[String], name: &str, rule: Rule) -> AnyResult<RunResult> {
    let t0 = Instant::now();
    let min_words = rule.min_words;
    let mut d = Deduper::builder().rule(rule).open(MemoryStore::new())?;
    let index = ctx.index();
    let now = Timestamp::now();
    let mut edges = Vec::new();
    for chunk in (0..ctx.ids.len()).collect::<Vec<_>>().chunks(4096) {
        let records: Vec<Record> = chunk
            .iter()
            .map(|&i| Record::new(ctx.ids[i].clone(), texts[i].clone()))
            .collect();
        for (o, &i) in d.process(&records, now)?.into_iter().zip(chunk) {
            // A record under the rule's minimum word count gets the short-text (character)
            // fingerprint, not the word fingerprint computed for the context.
            let word_fingerprint = ctx.tokens[i] >= min_words;
            if let (Some(fp), true) = (&o.fingerprint, word_fingerprint) {
                debug_assert_eq!(u64::from_str_radix(fp, 16).ok(), Some(ctx.fps[i]));
                if u64::from_str_radix(fp, 16).ok() != Some(ctx.fps[i]) {
                    eprintln!(
                        "warning: fingerprint of {} differs from SimHasher::fingerprint",
                        ctx.ids[i]
                    );
                }
            }
            let matched = match &o.decision {
                Decision::Merged { matched, .. } => Some(matched.clone()),
                Decision::Kept {
                    joined: Some((_, _, matched)),
                    ..
                } => Some(matched.clone()),
                Decision::Rejected { reason } => {
                    eprintln!("{name}: rejected {}: {reason}", o.id);
                    None
                }
                _ => None,
            };
            if let Some(m) = matched {
                edges.push(key(i as u32, index[m.as_str()]));
            }
        }
    }
    let clusters = d
        .clusters()
        .into_iter()
        .filter(|c| c.members.len() >= 2)
        .map(|c| c.members.iter().map(|m| index[m.as_str()]).collect())
        .collect();
    Ok(RunResult {
        name: name.into(),
        rule: Some(rule),
        clusters,
        edges,
        seconds: t0.elapsed().as_secs_f64(),
        furniture: None,
    })
}

fn read_cli_clusters(ctx: &Ctx, dir: &Path) -> AnyResult<RunResult> {
    let index = ctx.index();
    let mut clusters = Vec::new();
    for line in BufReader::new(File::open(dir.join("clusters.jsonl"))?).lines() {
        let v: Value = serde_json::from_str(&line?)?;
        let members: Vec<u32> = v["members"]
            .as_array()
            .ok_or("cluster without members")?
            .iter()
            .filter_map(|m| index.get(m.as_str()?).copied())
            .collect();
        if members.len() >= 2 {
            clusters.push(members);
        }
    }
    let report: Value = std::fs::read_to_string(dir.join("report.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    // The boilerplate the run learned, from the store its report names.
    let furniture = match report["store"]["path"].as_str() {
        Some(path) if Path::new(path).exists() => {
            let conn = rusqlite::Connection::open_with_flags(
                path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )?;
            let mut stmt = conn.prepare("SELECT shingles FROM boilerplate")?;
            let mut all = HashSet::new();
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let blob: Vec<u8> = row.get(0)?;
                all.extend(
                    blob.chunks_exact(8)
                        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))),
                );
            }
            Some(all)
        }
        _ => None,
    };
    Ok(RunResult {
        name: format!("neardup dedup CLI ({})", dir.display()),
        rule: None,
        clusters,
        edges: Vec::new(),
        seconds: report["timings_seconds"]["total"]
            .as_f64()
            .unwrap_or(f64::NAN),
        furniture,
    })
}

/// The library under `Rule::default()` (first) and, unless `--only-default`, other rules,
/// then every `--cli-out` run.
pub(crate) fn run_all(ctx: &Ctx, texts: &[String], args: &Args) -> AnyResult<Vec<RunResult>> {
    let mut runs = Vec::new();
    let default = Rule::default();
    runs.push(run_deduper(
        ctx,
        texts,
        "neardup library, Rule::default()",
        default,
    )?);
    let others = [
        (
            "neardup k=3 J=0.82 (seed 000's thresholds)",
            3,
            0.82,
            default.min_words,
        ),
        ("neardup k=8 J=0.8", 8, 0.8, default.min_words),
        ("neardup k=14 J=0.8", 14, 0.8, default.min_words),
        ("neardup k=16 J=0.8", 16, 0.8, default.min_words),
        (
            "neardup default, min_words=4",
            default.max_distance,
            default.min_jaccard,
            4,
        ),
        (
            "neardup default, J=0.85",
            default.max_distance,
            0.85,
            default.min_words,
        ),
    ];
    if !args.flag("only-default") {
        // Complete linkage at a threshold (no quorum), then quorums over the default floor.
        for link in [0.0, 0.7, 0.77, 0.8] {
            let rule = Rule {
                min_cluster_jaccard: link,
                cluster_quorum: 0.0,
                ..default
            };
            let name = format!("neardup default, complete linkage J>={link}");
            runs.push(run_deduper(ctx, texts, &name, rule)?);
        }
        for quorum in [0.5, 0.8] {
            let rule = Rule {
                cluster_quorum: quorum,
                ..default
            };
            let name = format!("neardup default, cluster quorum {quorum}");
            runs.push(run_deduper(ctx, texts, &name, rule)?);
        }
        for (name, k, j, w) in others {
            let rule = Rule {
                max_distance: k,
                min_jaccard: j,
                min_words: w,
                ..default
            };
            runs.push(run_deduper(ctx, texts, name, rule)?);
        }
    }
    for dir in args.all("cli-out") {
        runs.push(read_cli_clusters(ctx, Path::new(dir))?);
    }
    Ok(runs)
}
