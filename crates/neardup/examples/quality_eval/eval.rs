//! `eval`: the ground truth, every system's score against it, and the files for the Python
//! peers.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use neardup::{Field, Scratch, SimHasher};
use rayon::prelude::*;
use serde_json::json;

use crate::args::Args;
use crate::score::Ctx;
use crate::sources::read_corpus;
use crate::truth::{pairs_at_least, TruthPair};
use crate::{boilerplate, distance, misses, systems, AnyResult};

pub(crate) fn cmd_eval(args: &Args) -> AnyResult<()> {
    let corpus = PathBuf::from(args.get("corpus").ok_or("--corpus FILE")?);
    let out = PathBuf::from(args.get("out").ok_or("--out DIR")?);
    std::fs::create_dir_all(&out)?;
    let t0 = Instant::now();
    let docs = read_corpus(&corpus)?;
    let hasher = SimHasher::builder().build()?;
    // The pipeline's own analysis of a one-field record: fingerprint, shingle set, tokens.
    let analysed: Vec<Option<(u64, Vec<u64>, usize)>> = docs
        .par_iter()
        .map_init(Scratch::default, |scratch, (_, text)| {
            let a = hasher.analyze(&[Field::new(text)], None, scratch).ok()?;
            Some((a.fingerprint.as_u64(), a.shingles, a.token_count))
        })
        .collect();
    let mut ids = Vec::new();
    let mut texts = Vec::new();
    let mut sets = Vec::new();
    let mut fps = Vec::new();
    let mut tokens = Vec::new();
    let mut skipped = 0;
    for ((id, text), a) in docs.into_iter().zip(analysed) {
        match a {
            Some((fp, set, n)) if !set.is_empty() => {
                ids.push(id);
                texts.push(text);
                sets.push(set);
                fps.push(fp);
                tokens.push(n);
            }
            _ => skipped += 1,
        }
    }
    // The library's shingle_set is the set the ground truth is defined on.
    for i in (0..ids.len()).step_by((ids.len() / 50).max(1)) {
        if hasher.shingle_set(&texts[i]) != sets[i] {
            eprintln!(
                "warning: shingle_set differs from analyze().shingles for {}",
                ids[i]
            );
        }
    }
    let n = ids.len();
    let total_bytes: usize = texts.iter().map(String::len).sum();
    println!(
        "corpus {}: {n} documents ({skipped} without words skipped), {:.1} MB, {} shingles in all; analysed in {:.1}s",
        corpus.display(),
        total_bytes as f64 / 1e6,
        sets.iter().map(Vec::len).sum::<usize>(),
        t0.elapsed().as_secs_f64()
    );

    // Exact Jaccard, brute force over all pairs (see `pairs_at_least`).
    let t1 = Instant::now();
    let found: Vec<TruthPair> = pairs_at_least(&sets, 0.5)
        .into_iter()
        .map(|((a, b), j)| TruthPair {
            a,
            b,
            j,
            d: (fps[a as usize] ^ fps[b as usize]).count_ones(),
        })
        .collect();
    let all_pairs = n * (n - 1) / 2;
    let truth: HashMap<(u32, u32), TruthPair> = found.iter().map(|t| ((t.a, t.b), *t)).collect();
    let truth08: HashSet<(u32, u32)> = found
        .iter()
        .filter(|t| t.j >= 0.8)
        .map(|t| (t.a, t.b))
        .collect();
    println!(
        "ground truth: {all_pairs} pairs checked by brute force in {:.1}s; {} pairs with J >= 0.8 ({} of them J = 1), {} with 0.5 <= J < 0.8",
        t1.elapsed().as_secs_f64(),
        truth08.len(),
        found.iter().filter(|t| t.j >= 1.0).count(),
        found.len() - truth08.len()
    );
    let ctx = Ctx {
        ids,
        sets,
        fps,
        tokens,
        truth,
        truth08,
    };

    let distance = distance::report(&ctx, &found);

    let runs = systems::run_all(&ctx, &texts, args)?;
    let mut systems = ctx.table(&runs);

    boilerplate::score_after_boilerplate(&ctx, &runs, &out, &mut systems)?;

    let misses = misses::explain(&ctx, &runs[0]);

    // For the Python peers.
    let t2 = Instant::now();
    let mut w = BufWriter::new(File::create(out.join("shingles.jsonl"))?);
    for (i, s) in ctx.sets.iter().enumerate() {
        serde_json::to_writer(&mut w, &json!({"id": ctx.ids[i], "s": s}))?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    let mut w = BufWriter::new(File::create(out.join("truth.jsonl"))?);
    let mut sorted = found.clone();
    sorted.sort_by_key(|t| (t.a, t.b));
    for t in &sorted {
        writeln!(
            w,
            "{{\"a\":{},\"b\":{},\"j\":{},\"d\":{}}}",
            t.a, t.b, t.j, t.d
        )?;
    }
    w.flush()?;
    let results = json!({
        "corpus": corpus.display().to_string(),
        "documents": n,
        "bytes": total_bytes,
        "pairs": all_pairs,
        "truth_pairs": ctx.truth08.len(),
        "distance": {"p50": distance.pct[0].1, "p90": distance.pct[1].1, "p95": distance.pct[2].1, "p99": distance.pct[3].1,
                     "max": distance.pct[4].1, "recall_within": distance.within, "bands": distance.bands},
        "default_misses": {"too_short": misses.cat[0], "beyond_radius": misses.cat[1], "verification_32bit": misses.cat[2],
                           "different_clusters": misses.cat[3], "singleton": misses.cat[4]},
        "default_false_positives": {"total": misses.false_positives, "chained": misses.chained},
        "systems": systems,
    });
    std::fs::write(
        out.join("results.json"),
        serde_json::to_string_pretty(&results)?,
    )?;
    println!(
        "wrote {}/{{shingles.jsonl,truth.jsonl,results.json}} in {:.1}s; eval total {:.1}s",
        out.display(),
        t2.elapsed().as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
