//! Exact all-pairs ground truth for `scripts/bench_quality_corpora.sh`.
//!
//! ```text
//! corpus_truth --corpus FILE.jsonl --out DIR [--min 0.5] [--threads N]
//! ```
//!
//! For every record of FILE (JSON Lines, `id` and the text fields the CLI reads by default:
//! `title`, `description`, `body_text`, `text`, in that order), the library's own analysis
//! (`SimHasher::builder().build()`, the CLI's default profile: NFKC, lowercase, Unicode
//! words, Han/kana/Thai one token per character, 4-token shingles, xxh3) gives the distinct
//! shingle set. Every pair with exact Jaccard >= --min over those sets is found with an
//! inverted index over prefix-filtered shingles (AllPairs: shingles ordered rarest first,
//! a set of size n indexes its first n - ceil(min*n) + 1; two sets with J >= min share a
//! prefix shingle), so the result is exact over ALL pairs, not sampled.
//!
//! Writes DIR/shingles.jsonl (`{"id","tokens","n"}` per record, in corpus order),
//! DIR/shingles.bin (the sets, u64 little-endian, concatenated in that order: record i's
//! set is the `n` values after the sum of the earlier `n`s) and DIR/truth.jsonl
//! (`{"a","b","j"}`, record indices a < b in corpus order, every pair with J >= --min).
//! A record without tokens gets an empty set and no pairs.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use neardup::verify::intersection_len;
use neardup::{Field, Scratch, SimHasher};
use rayon::prelude::*;
use serde_json::Value;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> AnyResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let corpus = PathBuf::from(arg(&args, "--corpus").ok_or("--corpus FILE")?);
    let out = PathBuf::from(arg(&args, "--out").ok_or("--out DIR")?);
    let min: f64 = arg(&args, "--min").map_or(Ok(0.5), |s| s.parse())?;
    if let Some(t) = arg(&args, "--threads") {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t.parse()?)
            .build_global()?;
    }
    std::fs::create_dir_all(&out)?;
    let t0 = Instant::now();

    let mut ids = Vec::new();
    let mut texts: Vec<Vec<String>> = Vec::new();
    for line in BufReader::new(File::open(&corpus)?).lines() {
        let v: Value = serde_json::from_str(&line?)?;
        ids.push(v["id"].as_str().ok_or("record without id")?.to_owned());
        texts.push(
            ["title", "description", "body_text", "text"]
                .iter()
                .filter_map(|f| v[*f].as_str().map(str::to_owned))
                .collect(),
        );
    }
    let hasher = SimHasher::builder().build()?;
    let analysed: Vec<(Vec<u64>, usize)> = texts
        .par_iter()
        .map_init(Scratch::default, |scratch, fields| {
            let fields: Vec<Field<'_>> = fields.iter().map(|t| Field::new(t)).collect();
            match hasher.analyze(&fields, None, scratch) {
                Ok(a) => (a.shingles, a.token_count),
                Err(_) => (Vec::new(), 0),
            }
        })
        .collect();
    drop(texts);
    let sets: Vec<Vec<u64>> = analysed.iter().map(|(s, _)| s.clone()).collect();
    let n = sets.len();

    let mut meta = BufWriter::new(File::create(out.join("shingles.jsonl"))?);
    let mut bin = BufWriter::new(File::create(out.join("shingles.bin"))?);
    for (i, (set, tokens)) in analysed.iter().enumerate() {
        serde_json::to_writer(
            &mut meta,
            &serde_json::json!({"id": ids[i], "tokens": tokens, "n": set.len()}),
        )?;
        meta.write_all(b"\n")?;
        for h in set {
            bin.write_all(&h.to_le_bytes())?;
        }
    }
    meta.flush()?;
    bin.flush()?;
    drop(analysed);

    // Global order: rarest shingle first (ties by hash), so prefixes hold rare shingles.
    let mut df: HashMap<u64, u32> = HashMap::new();
    for s in &sets {
        for &h in s {
            *df.entry(h).or_default() += 1;
        }
    }
    let prefixes: Vec<Vec<u64>> = sets
        .par_iter()
        .map(|s| {
            if s.is_empty() {
                return Vec::new();
            }
            let mut v = s.clone();
            v.sort_unstable_by_key(|h| (df[h], *h));
            let keep = s.len() - (min * s.len() as f64).ceil() as usize + 1;
            v.truncate(keep.min(s.len()));
            v
        })
        .collect();
    let mut index: HashMap<u64, Vec<u32>> = HashMap::new();
    for (i, p) in prefixes.iter().enumerate() {
        for &h in p {
            index.entry(h).or_default().push(i as u32);
        }
    }
    let mut found: Vec<(u32, u32, f64)> = (0..n)
        .into_par_iter()
        .flat_map_iter(|x| {
            let lx = sets[x].len();
            let mut cands: Vec<u32> = Vec::new();
            for h in &prefixes[x] {
                for &y in &index[h] {
                    if y as usize > x {
                        cands.push(y);
                    }
                }
            }
            cands.sort_unstable();
            cands.dedup();
            let mut v = Vec::new();
            for y in cands {
                let ly = sets[y as usize].len();
                let (small, big) = if lx < ly { (lx, ly) } else { (ly, lx) };
                if (small as f64) < min * big as f64 {
                    continue;
                }
                let inter = intersection_len(&sets[x], &sets[y as usize]);
                let j = inter as f64 / (lx + ly - inter).max(1) as f64;
                if j >= min {
                    v.push((x as u32, y, j));
                }
            }
            v.into_iter()
        })
        .collect();
    found.sort_unstable_by_key(|&(a, b, _)| (a, b));
    let mut w = BufWriter::new(File::create(out.join("truth.jsonl"))?);
    for (a, b, j) in &found {
        writeln!(w, "{{\"a\":{a},\"b\":{b},\"j\":{j}}}")?;
    }
    w.flush()?;
    eprintln!(
        "corpus_truth: {n} records, {} shingles, {} pairs with J >= {min} ({} with J >= 0.8) in {:.1}s -> {}",
        sets.iter().map(Vec::len).sum::<usize>(),
        found.len(),
        found.iter().filter(|t| t.2 >= 0.8).count(),
        t0.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}
