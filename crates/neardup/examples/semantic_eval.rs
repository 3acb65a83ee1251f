//! Paraphrases from real documentation: what the semantic score adds to SimHash + Jaccard,
//! and what it costs (`scripts/bench_semantic.sh` builds the corpora and runs this).
//!
//! ```text
//! semantic_eval --model DIR --corpus NAME=OLD.jsonl,NEW.jsonl [--corpus ...] [--min-words 8]
//! ```
//!
//! Each corpus is the documentation of one thing in two releases, `{"key", "text"}` a line:
//! Python's standard library's docstrings in two interpreter versions, or doc comments of
//! Rust crates in two releases. The same key in both releases is the same documented item:
//! its two texts are a true pair whether reworded or not; every other pair of an old and a
//! new text is not. A key whose text another key of its release shares is left out (it
//! cannot be told apart), and so are texts under `--min-words` words. A key is its
//! qualified name alone (`JSONDecoder.decode`) where that is unique in both releases, so
//! that items of a moved module still pair up.
//!
//! Every old/new pair within 24 bits (64-bit fingerprints, the default profile) is a
//! candidate; each gets the shingle Jaccard the pipeline computes and the cosine of the
//! two texts' embeddings. Rules compared, per corpus, pairwise precision and recall (over
//! all true pairs, and over the reworded ones, whose texts differ):
//! - `jaccard`: within `k` bits and Jaccard >= 0.8 (dedup's default rule);
//! - `+semantic W R T`: that, or within `R` bits and a combined score >= `T` (`W` times
//!   SimHash similarity plus 1 - `W` times the cosine; seed 002's `W` is 0.7).
//!
//! Prints a JSON summary: per corpus and rule the counts and scores, the leave-one-corpus-out
//! choice of (R, T) (best worst-corpus F1 over the other corpora) and its held-out result,
//! and the cost: documents per second for fingerprints and for embeddings.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use neardup::semantic::{cosine, Combined, Embedder};
use neardup::verify::id_jaccard;
use neardup::{Field, Scratch, SimHasher};
use rayon::prelude::*;
use serde_json::{json, Value};

const MAX_DISTANCE: u32 = 24;
const RADII: [u32; 5] = [16, 18, 20, 22, 24];
const THRESHOLDS: [f64; 12] = [
    0.72, 0.74, 0.76, 0.78, 0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94,
];
/// SimHash weights (the cosine's is 1 minus it): seed 002's 0.7, and more to the cosine.
const WEIGHTS: [f64; 3] = [0.7, 0.5, 0.3];
/// Rules of the grid: the Jaccard rule, then every (weight, radius, threshold).
const RULES: usize = 1 + WEIGHTS.len() * RADII.len() * THRESHOLDS.len();

struct Corpus {
    name: String,
    /// (key, text) of each release.
    old: Vec<(String, String)>,
    new: Vec<(String, String)>,
}

fn read(path: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            Some((
                v["key"].as_str()?.to_owned(),
                v["text"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// One release's usable (key, text): module docstrings, short texts and texts shared by
/// several keys left out, keys shortened to unique qualified names.
fn usable(docs: Vec<(String, String)>, min_words: usize) -> Vec<(String, String)> {
    let mut by_text: HashMap<String, usize> = HashMap::new();
    for (_, t) in &docs {
        *by_text
            .entry(t.split_whitespace().collect::<Vec<_>>().join(" "))
            .or_default() += 1;
    }
    docs.into_iter()
        .filter(|(k, t)| {
            !k.ends_with(":<module>")
                && t.split_whitespace().count() >= min_words
                && by_text[&t.split_whitespace().collect::<Vec<_>>().join(" ")] == 1
        })
        .collect()
}

/// How often each qualified name occurs in a release.
fn qualname_counts(docs: &[(String, String)]) -> HashMap<String, usize> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for (k, _) in docs {
        *count.entry(qualname(k).to_owned()).or_default() += 1;
    }
    count
}

fn qualname(key: &str) -> &str {
    key.rsplit_once(':').map_or(key, |(_, q)| q)
}

struct Analysed {
    fp: u64,
    set: std::sync::Arc<[u32]>,
}

fn analyse(hasher: &SimHasher, texts: &[(String, String)]) -> Vec<Option<Analysed>> {
    texts
        .par_iter()
        .map_init(Scratch::default, |scratch, (_, t)| {
            hasher
                .analyze_ids(&[Field::new(t)], None, scratch)
                .ok()
                .map(|a| Analysed {
                    fp: a.fingerprint.as_u64(),
                    set: a.shingles,
                })
        })
        .collect()
}

#[derive(Default, Clone, Copy)]
struct Counts {
    tp: u64,
    fp: u64,
    reworded_tp: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut model = None;
    let mut corpora = Vec::new();
    let mut min_words = 8usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--model" => model = args.next().map(PathBuf::from),
            "--min-words" => min_words = args.next().ok_or("--min-words N")?.parse()?,
            "--corpus" => {
                let spec = args.next().ok_or("--corpus NAME=OLD,NEW")?;
                let (name, files) = spec.split_once('=').ok_or("--corpus NAME=OLD,NEW")?;
                let (old, new) = files.split_once(',').ok_or("--corpus NAME=OLD,NEW")?;
                corpora.push(Corpus {
                    name: name.to_owned(),
                    old: usable(read(old), min_words),
                    new: usable(read(new), min_words),
                });
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let model = Embedder::load(&model.ok_or("--model DIR")?)?;
    let hasher = SimHasher::builder().build()?;
    let mut results = Vec::new();
    // Per corpus, the counts of each rule: index 0 the Jaccard rule, then (R, T) in order.
    let mut table: Vec<(String, u64, u64, Vec<Counts>)> = Vec::new();
    let (mut fp_docs, mut fp_secs, mut emb_docs, mut emb_secs) = (0usize, 0f64, 0usize, 0f64);
    for mut c in corpora {
        // Keys: the qualified name where it is unique over both releases.
        let (in_old, in_new) = (qualname_counts(&c.old), qualname_counts(&c.new));
        let unique = |k: &str| {
            let q = qualname(k);
            in_old.get(q).copied().unwrap_or(0) <= 1 && in_new.get(q).copied().unwrap_or(0) <= 1
        };
        for (k, _) in c.old.iter_mut().chain(c.new.iter_mut()) {
            if unique(k) {
                *k = qualname(k).to_owned();
            }
        }
        let started = Instant::now();
        let old = analyse(&hasher, &c.old);
        let new = analyse(&hasher, &c.new);
        fp_secs += started.elapsed().as_secs_f64();
        fp_docs += c.old.len() + c.new.len();
        let new_by_key: HashMap<&str, usize> = c
            .new
            .iter()
            .enumerate()
            .map(|(j, (k, _))| (k.as_str(), j))
            .collect();
        let truth: Vec<(usize, usize)> = c
            .old
            .iter()
            .enumerate()
            .filter_map(|(i, (k, _))| Some((i, *new_by_key.get(k.as_str())?)))
            .filter(|&(i, j)| old[i].is_some() && new[j].is_some())
            .collect();
        let reworded = |i: usize, j: usize| {
            let norm = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            norm(&c.old[i].1) != norm(&c.new[j].1)
        };
        let true_pairs: std::collections::HashSet<(usize, usize)> = truth.iter().copied().collect();
        let n_reworded = truth.iter().filter(|&&(i, j)| reworded(i, j)).count() as u64;
        // Candidates: every old/new pair within MAX_DISTANCE.
        let new_fps: Vec<Option<u64>> = new.iter().map(|a| a.as_ref().map(|a| a.fp)).collect();
        let candidates: Vec<(usize, usize, u32)> = old
            .par_iter()
            .enumerate()
            .flat_map_iter(|(i, a)| {
                let a = a.as_ref().map(|a| a.fp);
                new_fps.iter().enumerate().filter_map(move |(j, b)| {
                    let d = (a? ^ (*b)?).count_ones();
                    (d <= MAX_DISTANCE).then_some((i, j, d))
                })
            })
            .collect();
        // Embeddings of every text in a candidate pair (the stage runs only on those).
        let mut need_old: Vec<usize> = candidates.iter().map(|c| c.0).collect();
        let mut need_new: Vec<usize> = candidates.iter().map(|c| c.1).collect();
        need_old.sort_unstable();
        need_old.dedup();
        need_new.sort_unstable();
        need_new.dedup();
        let started = Instant::now();
        let embed = |texts: &[(String, String)],
                     which: &[usize]|
         -> Result<HashMap<usize, Vec<f32>>, neardup::Error> {
            let mut out = HashMap::new();
            for chunk in which.chunks(64) {
                let t: Vec<&str> = chunk.iter().map(|&i| texts[i].1.as_str()).collect();
                for (&i, e) in chunk.iter().zip(model.embed(&t)?) {
                    out.insert(i, e);
                }
            }
            Ok(out)
        };
        let e_old = embed(&c.old, &need_old)?;
        let e_new = embed(&c.new, &need_new)?;
        emb_secs += started.elapsed().as_secs_f64();
        emb_docs += need_old.len() + need_new.len();
        let mut counts = vec![Counts::default(); RULES];
        for &(i, j, d) in &candidates {
            let (Some(a), Some(b)) = (&old[i], &new[j]) else {
                continue;
            };
            let jac = id_jaccard(&a.set, &b.set);
            let cos = cosine(&e_old[&i], &e_new[&j]);
            let is_true = true_pairs.contains(&(i, j));
            let jaccard_rule = d <= 16 && jac >= 0.8;
            let mut tally = |slot: usize| {
                let c = &mut counts[slot];
                if is_true {
                    c.tp += 1;
                    if reworded(i, j) {
                        c.reworded_tp += 1;
                    }
                } else {
                    c.fp += 1;
                }
            };
            if jaccard_rule {
                tally(0);
            }
            for (slot, (w, r, t)) in grid().enumerate() {
                let combined = Combined {
                    simhash_weight: w,
                    cosine_weight: 1.0 - w,
                };
                if jaccard_rule || (d <= r && combined.score(d, 64, cos) >= t) {
                    tally(1 + slot);
                }
            }
        }
        eprintln!(
            "{}: {} old, {} new, {} true pairs ({} reworded), {} candidates",
            c.name,
            c.old.len(),
            c.new.len(),
            truth.len(),
            n_reworded,
            candidates.len()
        );
        table.push((c.name, truth.len() as u64, n_reworded, counts));
    }
    let f1 = |c: &Counts, n: u64| {
        let p = c.tp as f64 / (c.tp + c.fp).max(1) as f64;
        let r = c.tp as f64 / n.max(1) as f64;
        (
            p,
            r,
            if p + r > 0.0 {
                2.0 * p * r / (p + r)
            } else {
                0.0
            },
        )
    };
    let row = |name: &str, n: u64, nr: u64, c: &Counts, rule: String| {
        let (p, r, f) = f1(c, n);
        json!({"corpus": name, "rule": rule, "true_pairs": n, "found": c.tp + c.fp,
               "precision": round(p), "recall": round(r), "f1": round(f),
               "reworded_recall": round(c.reworded_tp as f64 / nr.max(1) as f64)})
    };
    let rule_name = |slot: usize| match slot.checked_sub(1).and_then(|s| grid().nth(s)) {
        None => "jaccard k16 J0.8".to_owned(),
        Some((w, r, t)) => format!("+semantic W{w:.1}/{:.1} R{r} T{t:.2}", 1.0 - w),
    };
    // Leave one corpus out: the (R, T) with the best worst F1 over the others.
    for held in 0..table.len() {
        let others: Vec<usize> = (0..table.len()).filter(|&o| o != held).collect();
        let best = (1..table[0].3.len())
            .max_by(|&a, &b| {
                let worst = |slot: usize| {
                    others
                        .iter()
                        .map(|&o| f1(&table[o].3[slot], table[o].1).2)
                        .fold(f64::INFINITY, f64::min)
                };
                worst(a).total_cmp(&worst(b))
            })
            .unwrap_or(0);
        let (name, n, nr, counts) = &table[held];
        results.push(json!({
            "held_out": name,
            "chosen": rule_name(best),
            "jaccard": row(name, *n, *nr, &counts[0], rule_name(0)),
            "semantic": row(name, *n, *nr, &counts[best], rule_name(best)),
        }));
    }
    // Over all corpora: the best worst-corpus F1.
    let best = (1..table[0].3.len())
        .max_by(|&a, &b| {
            let worst = |slot: usize| {
                table
                    .iter()
                    .map(|t| f1(&t.3[slot], t.1).2)
                    .fold(f64::INFINITY, f64::min)
            };
            worst(a).total_cmp(&worst(b))
        })
        .unwrap_or(0);
    let all: Vec<Value> = table
        .iter()
        .flat_map(|(name, n, nr, counts)| {
            [
                row(name, *n, *nr, &counts[0], rule_name(0)),
                row(name, *n, *nr, &counts[best], rule_name(best)),
            ]
        })
        .collect();
    let grid: Vec<Value> = (1..table[0].3.len())
        .map(|slot| {
            let worst = table
                .iter()
                .map(|t| f1(&t.3[slot], t.1).2)
                .fold(f64::INFINITY, f64::min);
            json!({"rule": rule_name(slot), "worst_f1": round(worst)})
        })
        .collect();
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "chosen_over_all": rule_name(best),
            "per_corpus": all,
            "leave_one_corpus_out": results,
            "grid_worst_f1": grid,
            "cost": {
                "fingerprint_docs_per_s": round(fp_docs as f64 / fp_secs.max(1e-9)),
                "embedding_docs_per_s": round(emb_docs as f64 / emb_secs.max(1e-9)),
                "threads": rayon::current_num_threads(),
            },
        }))?
    );
    Ok(())
}

/// The semantic rules: (SimHash weight, radius, threshold).
fn grid() -> impl Iterator<Item = (f64, u32, f64)> {
    WEIGHTS.into_iter().flat_map(|w| {
        RADII
            .into_iter()
            .flat_map(move |r| THRESHOLDS.into_iter().map(move |t| (w, r, t)))
    })
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
