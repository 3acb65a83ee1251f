//! Detection-quality evaluation of the dedup pipeline against an exact brute-force Jaccard
//! ground truth, on real text from this machine (plus real-looking edits of it), and the
//! corpus builders of the quality and throughput benches.
//!
//! ```text
//! quality_eval corpus --out DIR [--man-pages 400] [--seed 7]
//!     DIR/corpus.jsonl: every /usr/share/doc/*/copyright, every licence in
//!     /usr/share/common-licenses, --man-pages English man pages rendered with `man -l`,
//!     and deterministic edited versions of a random subset, shuffled; {"id","body_text"}.
//! quality_eval eval --corpus FILE --out DIR [--cli-out DIR]... [--threads N]
//!     Exact Jaccard over the pipeline's 4-word shingle sets for ALL pairs, the Hamming
//!     distance distribution of the pairs with J >= 0.8, and pairwise P/R/F1 of the library
//!     `Deduper` (default rule and a few others) and of `neardup dedup` outputs (--cli-out,
//!     its clusters.jsonl restricted to the corpus' ids). Writes DIR/shingles.jsonl,
//!     DIR/truth.jsonl (every pair with J >= 0.5) and DIR/results.json for the Python peers.
//! quality_eval big-corpus --out FILE --gb 1 [--sample-out FILE --sample-every 128]
//!     The >= 1 GB throughput corpus: all text of /usr/share/doc (gzip included), every man
//!     page of every language rendered with groff, then passes of deterministic variants
//!     (edited near-duplicates, verbatim republications, splices of neighbours) until the
//!     size is reached. --sample-out gets whole families (a base document and all its
//!     variants) for a brute-force labelled sample.
//! ```
//!
//! Nothing here is tuned to the targets: the corpus recipe is fixed before measuring and the
//! pipeline runs with `Rule::default()` (other rules are printed for context only).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use neardup::verify::{intersection_len, shingle_ids};
use neardup::{Decision, Deduper, Field, MemoryStore, Record, Rule, Scratch, SimHasher, Timestamp};
use rayon::prelude::*;
use serde_json::{json, Value};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

// ---------------------------------------------------------------------------------------
// Deterministic RNG (splitmix64) and text edits.

#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

fn fnv(s: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// Words with their trailing whitespace: "word " pieces, so edits keep the layout.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_ws = false;
    for c in text.chars() {
        let ws = c.is_whitespace();
        if !ws && in_ws {
            out.push(std::mem::take(&mut cur));
        }
        in_ws = ws;
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn split_ws(piece: &str) -> (&str, &str) {
    let end = piece
        .char_indices()
        .find(|(_, c)| c.is_whitespace())
        .map_or(piece.len(), |(i, _)| i);
    piece.split_at(end)
}

/// `k` random word substitutions, insertions and deletions (2:1:1), with words of the corpus.
fn word_edits(text: &str, k: usize, rng: &mut Rng, vocab: &[String]) -> String {
    let mut p = pieces(text);
    for _ in 0..k {
        if p.len() < 2 {
            break;
        }
        let i = rng.below(p.len());
        let word = &vocab[rng.below(vocab.len())];
        match rng.below(4) {
            0 | 1 => {
                let (_, ws) = split_ws(&p[i]);
                let ws = if ws.is_empty() { "" } else { ws };
                p[i] = format!("{word}{ws}");
            }
            2 => p.insert(i, format!("{word} ")),
            _ => {
                let (_, ws) = split_ws(&p[i]);
                let ws = ws.to_owned();
                p.remove(i);
                if i > 0 && ws.contains('\n') {
                    let (w, _) = split_ws(&p[i - 1]);
                    let w = w.to_owned();
                    p[i - 1] = w + &ws;
                }
            }
        }
    }
    p.concat()
}

/// Moves one paragraph (or, with fewer than three, one sentence) elsewhere.
fn move_block(text: &str, rng: &mut Rng) -> String {
    let mut paras: Vec<&str> = text.split("\n\n").collect();
    if paras.len() >= 3 {
        let from = rng.below(paras.len());
        let p = paras.remove(from);
        let mut to = rng.below(paras.len() + 1);
        if to == from {
            to = (to + 1) % (paras.len() + 1);
        }
        paras.insert(to, p);
        return paras.join("\n\n");
    }
    let mut sents: Vec<&str> = text.split_inclusive(". ").collect();
    if sents.len() >= 3 {
        let from = rng.below(sents.len());
        let s = sents.remove(from);
        let to = rng.below(sents.len() + 1);
        sents.insert(to, s);
        return sents.concat();
    }
    text.to_owned()
}

const NAMES: [&str; 12] = [
    "Maria Garcia",
    "John Smith",
    "Wei Zhang",
    "Olga Petrova",
    "Ahmed Hassan",
    "Laura Rossi",
    "Kenji Sato",
    "Fatima Diallo",
    "Peter Novak",
    "Ana Silva",
    "David Cohen",
    "Ingrid Larsen",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn date(rng: &mut Rng) -> String {
    format!(
        "{} {}, {}",
        MONTHS[rng.below(12)],
        1 + rng.below(28),
        2003 + rng.below(22)
    )
}

/// A byline or date on top, a trailer at the bottom, or changed years.
fn byline(text: &str, rng: &mut Rng) -> String {
    let name = NAMES[rng.below(NAMES.len())];
    match rng.below(3) {
        0 => format!("By {name}\n{}\n\n{text}", date(rng)),
        1 => format!(
            "{}\n\n--\nPosted by {name} on {}. Last updated {}.\n",
            text.trim_end(),
            date(rng),
            date(rng)
        ),
        _ => {
            // Change every year-looking token (copyright years, release dates).
            let mut out = String::with_capacity(text.len());
            let mut changed = false;
            for p in pieces(text) {
                let (w, ws) = split_ws(&p);
                let digits: String = w.chars().filter(|c| c.is_ascii_digit()).collect();
                if digits.len() == 4
                    && (digits.starts_with("19") || digits.starts_with("20"))
                    && w.contains(digits.as_str())
                {
                    let y = 1990 + rng.below(35);
                    out.push_str(&w.replace(digits.as_str(), &y.to_string()));
                    out.push_str(ws);
                    changed = true;
                } else {
                    out.push_str(&p);
                }
            }
            if changed {
                out
            } else {
                format!("{}\n\nRevised {}.\n", text.trim_end(), date(rng))
            }
        }
    }
}

/// Cuts the last 5-15%, at a word boundary.
fn truncate(text: &str, rng: &mut Rng) -> String {
    let keep = (text.len() as f64 * (1.0 - rng.range(0.05, 0.15))) as usize;
    let mut cut = keep.min(text.len());
    while cut > 0 && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind(char::is_whitespace).unwrap_or(cut);
    text[..cut].to_owned()
}

/// The same words with changed whitespace, case and punctuation.
fn cosmetic(text: &str, rng: &mut Rng) -> String {
    let mode = rng.below(3);
    let mut out = String::with_capacity(text.len() + 64);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            // Reflow: join some lines, double some breaks.
            out.push_str(match (mode, rng.below(4)) {
                (0, 0) | (0, 1) => " ",
                (_, 0) => "\n\n",
                _ => "\n",
            });
        }
        let line = if mode == 1 && rng.chance(0.3) {
            line.to_uppercase()
        } else if mode == 2 {
            line.replace(", ", " ; ").replace(". ", "!  ")
        } else {
            line.trim_start().to_owned()
        };
        out.push_str(&line);
    }
    out
}

fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// One edited version of `text`; returns (kind label, text).
fn edit(text: &str, rng: &mut Rng, vocab: &[String]) -> (String, String) {
    let kind = rng.below(100);
    let one = |kind: usize, text: &str, rng: &mut Rng| -> (String, String) {
        match kind {
            0..=44 => {
                let n = word_count(text).max(1);
                let k = if rng.chance(0.2) {
                    1 + rng.below(3)
                } else {
                    let f = (rng.range((0.002f64).ln(), (0.12f64).ln())).exp();
                    ((f * n as f64).round() as usize).max(1)
                };
                (format!("words{k}"), word_edits(text, k, rng, vocab))
            }
            45..=54 => ("move".into(), move_block(text, rng)),
            55..=66 => ("byline".into(), byline(text, rng)),
            67..=78 => ("truncate".into(), truncate(text, rng)),
            _ => ("cosmetic".into(), cosmetic(text, rng)),
        }
    };
    if kind < 90 {
        one(kind, text, rng)
    } else {
        let (a, t) = one(rng.below(89), text, rng);
        let (b, t) = one(rng.below(89), &t, rng);
        (format!("{a}+{b}"), t)
    }
}

fn vocabulary(docs: &[(String, String)]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut v = Vec::new();
    for (_, t) in docs {
        for w in t.split_whitespace() {
            if (3..=12).contains(&w.len())
                && w.chars().all(|c| c.is_ascii_alphabetic())
                && seen.insert(w.to_ascii_lowercase())
            {
                v.push(w.to_ascii_lowercase());
            }
        }
    }
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------
// Real text on this machine.

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&p, out);
        } else if ft.is_file() || ft.is_symlink() {
            out.push(p);
        }
    }
}

fn strip_overstrike(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    text
}

/// `man -l FILE` as plain text, 80 columns.
fn render_man(path: &Path) -> Option<String> {
    let out = Command::new("man")
        .arg("-l")
        .arg(path)
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "0")
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = strip_overstrike(&String::from_utf8_lossy(&out.stdout));
    (text.trim().len() > 200).then_some(text)
}

/// Faster rendering for the big corpus: groff directly (preconv, tbl), 80 columns.
fn render_groff(path: &Path) -> Option<String> {
    let cat = if path.extension().is_some_and(|e| e == "gz") {
        "gzip -dc"
    } else {
        "cat"
    };
    let script = format!("{cat} \"$1\" | groff -k -t -mandoc -Tutf8 -P-cbou -rLL=80n 2>/dev/null");
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(path)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = strip_overstrike(&String::from_utf8_lossy(&out.stdout));
    (text.trim().len() > 200).then_some(text)
}

fn read_text(path: &Path) -> Option<String> {
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        let out = Command::new("gzip")
            .arg("-dc")
            .arg(path)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.stdout
    } else {
        let mut b = Vec::new();
        File::open(path).ok()?.read_to_end(&mut b).ok()?;
        b
    };
    if bytes.contains(&0) {
        return None;
    }
    let text = String::from_utf8(bytes).ok()?;
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    (letters * 2 > text.chars().count() && text.trim().len() > 100).then_some(text)
}

fn write_jsonl(path: &Path, docs: &[(String, String)]) -> AnyResult<u64> {
    let mut w = BufWriter::new(File::create(path)?);
    let mut bytes = 0;
    for (id, text) in docs {
        serde_json::to_writer(&mut w, &json!({"id": id, "body_text": text}))?;
        w.write_all(b"\n")?;
        bytes += text.len() as u64;
    }
    w.flush()?;
    Ok(bytes)
}

fn read_corpus(path: &Path) -> AnyResult<Vec<(String, String)>> {
    let mut docs = Vec::new();
    for line in BufReader::new(File::open(path)?).lines() {
        let v: Value = serde_json::from_str(&line?)?;
        let id = v["id"].as_str().ok_or("record without id")?.to_owned();
        let text = v["body_text"].as_str().unwrap_or_default().to_owned();
        docs.push((id, text));
    }
    Ok(docs)
}

// ---------------------------------------------------------------------------------------
// `corpus`: the quality corpus.

fn cmd_corpus(args: &Args) -> AnyResult<()> {
    let out = PathBuf::from(args.get("out").ok_or("--out DIR")?);
    std::fs::create_dir_all(&out)?;
    let man_pages: usize = args.num("man-pages", 400);
    let seed: u64 = args.num("seed", 7);
    let mut rng = Rng::new(seed);
    let t0 = Instant::now();
    let mut base: Vec<(String, String)> = Vec::new();
    let mut counts = HashMap::new();
    // Every package's copyright file: packages of one source share theirs, and many share
    // licence texts (the same text published under several names).
    let mut dirs: Vec<_> = std::fs::read_dir("/usr/share/doc")?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for d in dirs {
        if let Some(text) = read_text(&d.join("copyright")) {
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            base.push((format!("copyright:{name}"), text));
            *counts.entry("copyright").or_insert(0) += 1;
        }
    }
    // The licences: real versions of each other (GPL-2/3, LGPL-2/2.1/3, GFDL-1.2/1.3).
    let mut lic = Vec::new();
    walk(Path::new("/usr/share/common-licenses"), &mut lic);
    for p in lic {
        if let Some(text) = read_text(&p) {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            base.push((format!("license:{name}"), text));
            *counts.entry("license").or_insert(0) += 1;
        }
    }
    // English man pages, a deterministic random sample, rendered with `man -l`.
    let mut pages = Vec::new();
    for s in ["man1", "man5", "man7", "man8"] {
        walk(&Path::new("/usr/share/man").join(s), &mut pages);
    }
    rng.shuffle(&mut pages);
    pages.truncate(man_pages);
    pages.sort();
    let rendered: Vec<(String, String)> = pages
        .par_iter()
        .filter_map(|p| {
            let name = p
                .file_name()?
                .to_string_lossy()
                .trim_end_matches(".gz")
                .to_owned();
            Some((format!("man:{name}"), render_man(p)?))
        })
        .collect();
    counts.insert("man", rendered.len());
    base.extend(rendered);
    let vocab = vocabulary(&base);

    // Edited versions of a random subset: about half the documents get one, some a second
    // independent one, some an edit of the edit.
    let mut docs = base.clone();
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for (id, text) in &base {
        if !rng.chance(0.5) {
            continue;
        }
        let (k1, v1) = edit(text, &mut rng, &vocab);
        *kinds
            .entry(
                k1.split(|c: char| c.is_ascii_digit())
                    .next()
                    .unwrap()
                    .to_owned(),
            )
            .or_default() += 1;
        docs.push((format!("{id}~1-{k1}"), v1.clone()));
        if rng.chance(0.3) {
            let (k2, v2) = edit(text, &mut rng, &vocab);
            docs.push((format!("{id}~2-{k2}"), v2));
        }
        if rng.chance(0.3) {
            let (k3, v3) = edit(&v1, &mut rng, &vocab);
            docs.push((format!("{id}~1~3-{k3}"), v3));
        }
    }
    let n_variants = docs.len() - base.len();
    rng.shuffle(&mut docs);
    let bytes = write_jsonl(&out.join("corpus.jsonl"), &docs)?;
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort();
    println!(
        "quality corpus: {} documents ({} real: {} copyright files, {} licences, {} man pages; {} edited versions; first-edit kinds {:?}), {:.1} MB, built in {:.1}s -> {}",
        docs.len(),
        base.len(),
        counts.get("copyright").copied().unwrap_or(0),
        counts.get("license").copied().unwrap_or(0),
        counts.get("man").copied().unwrap_or(0),
        n_variants,
        kinds,
        bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64(),
        out.join("corpus.jsonl").display()
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// `eval`: ground truth and scoring.

#[derive(Clone, Copy)]
struct TruthPair {
    a: u32,
    b: u32,
    j: f64,
    d: u32,
}

fn key(a: u32, b: u32) -> (u32, u32) {
    if a < b {
        (a, b)
    } else {
        (b, a)
    }
}

fn jac(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let i = intersection_len(a, b);
    i as f64 / (a.len() + b.len() - i) as f64
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

struct Metrics {
    predicted: usize,
    tp: usize,
    truth: usize,
}

impl Metrics {
    fn p(&self) -> f64 {
        if self.predicted == 0 {
            1.0
        } else {
            self.tp as f64 / self.predicted as f64
        }
    }
    fn r(&self) -> f64 {
        if self.truth == 0 {
            1.0
        } else {
            self.tp as f64 / self.truth as f64
        }
    }
    fn f1(&self) -> f64 {
        let (p, r) = (self.p(), self.r());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

fn pairs_of_clusters(clusters: &[Vec<u32>]) -> HashSet<(u32, u32)> {
    let mut s = HashSet::new();
    for c in clusters {
        for (x, &a) in c.iter().enumerate() {
            for &b in &c[x + 1..] {
                s.insert(key(a, b));
            }
        }
    }
    s
}

struct Ctx {
    ids: Vec<String>,
    sets: Vec<Vec<u64>>,
    fps: Vec<u64>,
    tokens: Vec<usize>,
    truth: HashMap<(u32, u32), TruthPair>,
    truth08: HashSet<(u32, u32)>,
}

impl Ctx {
    fn exact_j(&self, p: (u32, u32)) -> f64 {
        self.truth.get(&p).map_or_else(
            || jac(&self.sets[p.0 as usize], &self.sets[p.1 as usize]),
            |t| t.j,
        )
    }

    fn score(&self, predicted: &HashSet<(u32, u32)>) -> Metrics {
        Metrics {
            predicted: predicted.len(),
            tp: predicted
                .iter()
                .filter(|p| self.truth08.contains(p))
                .count(),
            truth: self.truth08.len(),
        }
    }

    /// J histogram of false-positive pairs.
    fn fp_bands(&self, predicted: &HashSet<(u32, u32)>) -> Value {
        let mut bands = [0usize; 5];
        let mut fps: Vec<(u32, u32)> = predicted
            .iter()
            .filter(|p| !self.truth08.contains(p))
            .copied()
            .collect();
        fps.sort_unstable();
        let js: Vec<f64> = fps.par_iter().map(|&p| self.exact_j(p)).collect();
        for j in js {
            let b = if j >= 0.75 {
                0
            } else if j >= 0.7 {
                1
            } else if j >= 0.6 {
                2
            } else if j >= 0.5 {
                3
            } else {
                4
            };
            bands[b] += 1;
        }
        json!({"[0.75,0.8)": bands[0], "[0.7,0.75)": bands[1], "[0.6,0.7)": bands[2],
               "[0.5,0.6)": bands[3], "<0.5": bands[4]})
    }
}

struct RunResult {
    name: String,
    rule: Option<Rule>,
    clusters: Vec<Vec<u32>>,
    edges: Vec<(u32, u32)>,
    seconds: f64,
    /// For a CLI run: the boilerplate its store learned (every host's, together).
    furniture: Option<HashSet<u64>>,
}

fn run_deduper(ctx: &Ctx, texts: &[String], name: &str, rule: Rule) -> AnyResult<RunResult> {
    let t0 = Instant::now();
    let min_words = rule.min_words;
    let mut d = Deduper::builder().rule(rule).open(MemoryStore::new())?;
    let index: HashMap<&str, u32> = ctx
        .ids
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i as u32))
        .collect();
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
    let index: HashMap<&str, u32> = ctx
        .ids
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i as u32))
        .collect();
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

/// Every pair with exact Jaccard >= `min` over `sets` (sorted), by brute force, with its
/// Jaccard. J <= min/max of the set sizes, so pairs whose sizes differ by more than that
/// cannot reach `min` and are skipped exactly.
fn pairs_at_least(sets: &[Vec<u64>], min: f64) -> Vec<((u32, u32), f64)> {
    let n = sets.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| (sets[i as usize].len(), i));
    (0..n)
        .into_par_iter()
        .flat_map_iter(|x| {
            let a = order[x] as usize;
            let la = sets[a].len();
            let mut v = Vec::new();
            for &b in &order[x + 1..] {
                let lb = sets[b as usize].len();
                if (la as f64) < min * lb as f64 {
                    break;
                }
                let inter = intersection_len(&sets[a], &sets[b as usize]);
                let j = inter as f64 / (la + lb - inter).max(1) as f64;
                if j >= min {
                    v.push((key(a as u32, b), j));
                }
            }
            v
        })
        .collect()
}

fn cmd_eval(args: &Args) -> AnyResult<()> {
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

    // The distance distribution of truth pairs: the evidence for max_distance.
    let mut dist: Vec<u32> = found.iter().filter(|t| t.j >= 0.8).map(|t| t.d).collect();
    dist.sort_unstable();
    let pct: Vec<(f64, u32)> = [50.0, 90.0, 95.0, 99.0, 100.0]
        .iter()
        .map(|&p| (p, percentile(&dist, p)))
        .collect();
    println!();
    println!(
        "Hamming distance (default 64-bit fingerprints) of the {} pairs with J >= 0.8:",
        dist.len()
    );
    println!(
        "  p50 {}  p90 {}  p95 {}  p99 {}  max {}",
        pct[0].1, pct[1].1, pct[2].1, pct[3].1, pct[4].1
    );
    let ks = [3u32, 6, 8, 10, 12, 14, 16];
    let mut within = Vec::new();
    print!("  recall a radius allows:");
    for &k in &ks {
        let r = dist.iter().filter(|&&d| d <= k).count() as f64 / dist.len().max(1) as f64;
        within.push(json!({"k": k, "recall": r}));
        print!("  k={k}: {:.4}", r);
    }
    println!();
    let long: Vec<u32> = found
        .iter()
        .filter(|t| {
            t.j >= 0.8
                && ctx.tokens[t.a as usize] >= neardup::pipeline::DEFAULT_MIN_WORDS
                && ctx.tokens[t.b as usize] >= neardup::pipeline::DEFAULT_MIN_WORDS
        })
        .map(|t| t.d)
        .collect();
    print!(
        "  (pairs of documents with >= 50 words: {}; within k:",
        long.len()
    );
    for &k in &ks {
        print!(
            " {k}: {:.4}",
            long.iter().filter(|&&d| d <= k).count() as f64 / long.len().max(1) as f64
        );
    }
    println!(")");
    println!("  by Jaccard band:      pairs    p50   p95   max   within 3   within 12");
    let bands = [
        (0.8, 0.85),
        (0.85, 0.9),
        (0.9, 0.95),
        (0.95, 1.0),
        (1.0, 1.01),
    ];
    let mut band_json = Vec::new();
    for (lo, hi) in bands {
        let mut d: Vec<u32> = found
            .iter()
            .filter(|t| t.j >= lo && t.j < hi)
            .map(|t| t.d)
            .collect();
        d.sort_unstable();
        let w = |k: u32| d.iter().filter(|&&x| x <= k).count() as f64 / d.len().max(1) as f64;
        let label = if lo >= 1.0 {
            "J = 1".to_owned()
        } else {
            format!("[{lo:.2},{hi:.2})")
        };
        println!(
            "  {label:<18} {:>8} {:>6} {:>5} {:>5} {:>10.4} {:>11.4}",
            d.len(),
            percentile(&d, 50.0),
            percentile(&d, 95.0),
            percentile(&d, 100.0),
            w(3),
            w(12)
        );
        band_json.push(json!({"band": label, "pairs": d.len(), "p50": percentile(&d, 50.0),
            "p95": percentile(&d, 95.0), "max": percentile(&d, 100.0), "within3": w(3), "within12": w(12)}));
    }
    // And the other side: how close do unrelated pairs come?
    let mut near_miss: Vec<u32> = found
        .iter()
        .filter(|t| t.j < 0.8 && t.j >= 0.7)
        .map(|t| t.d)
        .collect();
    near_miss.sort_unstable();
    println!(
        "  pairs with 0.7 <= J < 0.8: {} (distance p50 {}, p5 {})",
        near_miss.len(),
        percentile(&near_miss, 50.0),
        percentile(&near_miss, 5.0)
    );

    // Systems.
    let mut runs = Vec::new();
    let default = Rule::default();
    runs.push(run_deduper(
        &ctx,
        &texts,
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
            runs.push(run_deduper(&ctx, &texts, &name, rule)?);
        }
        for quorum in [0.5, 0.8] {
            let rule = Rule {
                cluster_quorum: quorum,
                ..default
            };
            let name = format!("neardup default, cluster quorum {quorum}");
            runs.push(run_deduper(&ctx, &texts, &name, rule)?);
        }
        for (name, k, j, w) in others {
            let rule = Rule {
                max_distance: k,
                min_jaccard: j,
                min_words: w,
                ..default
            };
            runs.push(run_deduper(&ctx, &texts, name, rule)?);
        }
    }
    for dir in args.all("cli-out") {
        runs.push(read_cli_clusters(&ctx, Path::new(dir))?);
    }

    println!();
    println!(
        "{:<46} {:>9} {:>9} {:>7} {:>7} {:>7} {:>8} {:>8}",
        "system (pairs in one final cluster)",
        "predicted",
        "true",
        "P",
        "R",
        "F1",
        "edge P",
        "seconds"
    );
    let mut systems = Vec::new();
    for r in &runs {
        let predicted = pairs_of_clusters(&r.clusters);
        let m = ctx.score(&predicted);
        let edge_ok = r.edges.iter().filter(|&&e| ctx.exact_j(e) >= 0.8).count();
        let edge_p = if r.edges.is_empty() {
            f64::NAN
        } else {
            edge_ok as f64 / r.edges.len() as f64
        };
        println!(
            "{:<46} {:>9} {:>9} {:>7.4} {:>7.4} {:>7.4} {:>8} {:>8.2}",
            r.name,
            m.predicted,
            m.tp,
            m.p(),
            m.r(),
            m.f1(),
            if edge_p.is_nan() {
                "-".to_owned()
            } else {
                format!("{edge_p:.4}")
            },
            r.seconds
        );
        let largest = r.clusters.iter().map(Vec::len).max().unwrap_or(0);
        systems.push(json!({
            "name": r.name, "precision": m.p(), "recall": m.r(), "f1": m.f1(),
            "predicted_pairs": m.predicted, "true_positives": m.tp, "truth_pairs": m.truth,
            "edges": r.edges.len(), "edge_precision": if edge_p.is_nan() { Value::Null } else { json!(edge_p) },
            "clusters": r.clusters.len(), "largest_cluster": largest,
            "fp_jaccard_bands": ctx.fp_bands(&predicted),
            "seconds": r.seconds,
            "rule": r.rule.map(|x| json!({"max_distance": x.max_distance, "min_jaccard": x.min_jaccard, "min_words": x.min_words})),
        }));
    }

    // The issue's truth for a run that learned boilerplate: pairs whose Jaccard after
    // boilerplate removal is >= 0.8 (the rows above count Jaccard before it).
    for (nth, r) in runs.iter().filter(|r| r.furniture.is_some()).enumerate() {
        let Some(furniture) = &r.furniture else {
            continue;
        };
        let content: Vec<Vec<u64>> = ctx
            .sets
            .iter()
            .map(|s| {
                s.iter()
                    .copied()
                    .filter(|h| !furniture.contains(h))
                    .collect()
            })
            .collect();
        let truth: HashSet<(u32, u32)> = pairs_at_least(&content, 0.8)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        if nth == 0 {
            // This truth, for the peers run over the whole corpus (peers.py full).
            let mut sorted: Vec<&(u32, u32)> = truth.iter().collect();
            sorted.sort_unstable();
            let mut w = BufWriter::new(File::create(out.join("truth_after_boilerplate.jsonl"))?);
            for (a, b) in sorted {
                writeln!(w, "{{\"a\":{a},\"b\":{b}}}")?;
            }
            w.flush()?;
        }
        let predicted = pairs_of_clusters(&r.clusters);
        let tp = predicted.intersection(&truth).count();
        // Every pair the run got wrong under this truth, for a closer look.
        let mut wrong: Vec<Value> = Vec::new();
        for (kind, pairs) in [
            ("missed", truth.difference(&predicted)),
            ("false", predicted.difference(&truth)),
        ] {
            let mut pairs: Vec<&(u32, u32)> = pairs.collect();
            pairs.sort_unstable();
            for &(a, b) in pairs {
                wrong.push(json!({
                    "kind": kind, "a": ctx.ids[a as usize], "b": ctx.ids[b as usize],
                    "j": jac(&content[a as usize], &content[b as usize]),
                    "j_plain": ctx.exact_j((a, b)),
                    "d": (ctx.fps[a as usize] ^ ctx.fps[b as usize]).count_ones(),
                }));
            }
        }
        // One file per CLI run: the first `cli_wrong_pairs.jsonl`, then `-2`, `-3`, ...
        let suffix = if nth == 0 {
            String::new()
        } else {
            format!("-{}", nth + 1)
        };
        let path = out.join(format!("cli_wrong_pairs{suffix}.jsonl"));
        let mut text = String::new();
        for w in &wrong {
            text.push_str(&w.to_string());
            text.push('\n');
        }
        std::fs::write(&path, text)?;
        let (p, rec) = (
            tp as f64 / predicted.len().max(1) as f64,
            tp as f64 / truth.len().max(1) as f64,
        );
        let f1 = if p + rec > 0.0 {
            2.0 * p * rec / (p + rec)
        } else {
            0.0
        };
        println!(
            "{:<46} {:>9} {:>9} {:>7.4} {:>7.4} {:>7.4}",
            "  the same, truth after its boilerplate",
            predicted.len(),
            tp,
            p,
            rec,
            f1
        );
        println!(
            "  ({} pairs with J >= 0.8 once the {} shingles the run learned as boilerplate are left out, against {} before)",
            truth.len(),
            furniture.len(),
            ctx.truth08.len()
        );
        systems.push(json!({
            "name": format!("{} (truth after its boilerplate)", r.name),
            "precision": p, "recall": rec, "f1": f1,
            "predicted_pairs": predicted.len(), "true_positives": tp, "truth_pairs": truth.len(),
            "boilerplate_shingles": furniture.len(), "seconds": r.seconds,
            "clusters": r.clusters.len(),
            "largest_cluster": r.clusters.iter().map(Vec::len).max().unwrap_or(0),
        }));
    }

    // Where the default loses recall, and where its false positives come from.
    let def = &runs[0];
    let rule = def.rule.unwrap();
    let predicted = pairs_of_clusters(&def.clusters);
    let edge_set: HashSet<(u32, u32)> = def.edges.iter().copied().collect();
    let mut cat: [usize; 5] = [0; 5];
    let mut examples: Vec<Vec<String>> = vec![Vec::new(); 5];
    let mut missed: Vec<(u32, u32)> = ctx
        .truth08
        .iter()
        .filter(|p| !predicted.contains(p))
        .copied()
        .collect();
    missed.sort_unstable();
    let mut cluster_of = vec![usize::MAX; ctx.ids.len()];
    for (n, c) in def.clusters.iter().enumerate() {
        for &m in c {
            cluster_of[m as usize] = n;
        }
    }
    for p in &missed {
        let t = ctx.truth[p];
        let (a, b) = (t.a as usize, t.b as usize);
        let c = if ctx.tokens[a] < rule.min_words || ctx.tokens[b] < rule.min_words {
            0
        } else if t.d > rule.max_distance {
            1
        } else {
            let j32 = jac32(&ctx.sets[a], &ctx.sets[b]);
            if j32 < rule.min_jaccard {
                2
            } else if cluster_of[a] != usize::MAX && cluster_of[b] != usize::MAX {
                3
            } else {
                4
            }
        };
        cat[c] += 1;
        if examples[c].len() < 4 {
            examples[c].push(format!(
                "{} ~ {} (J {:.3}, d {}, words {}/{})",
                ctx.ids[a], ctx.ids[b], t.j, t.d, ctx.tokens[a], ctx.tokens[b]
            ));
        }
    }
    println!();
    println!(
        "default rule: {} of {} pairs with J >= 0.8 missed:",
        missed.len(),
        ctx.truth08.len()
    );
    let labels = [
        "a document under min_words (exact tier only)",
        "fingerprints farther apart than max_distance",
        "within max_distance, but J of the 32-bit verification ids < min_jaccard",
        "within max_distance and verifiable, but in two different clusters (a record joins only its best match's cluster; clusters never merge)",
        "within max_distance and verifiable, but one stayed a singleton (its partners arrived later and each joined an exact duplicate or a higher-J match; or the 64-candidate cap)",
    ];
    for (c, l) in labels.iter().enumerate() {
        println!("  {:>6}  {l}", cat[c]);
        for e in &examples[c] {
            println!("            e.g. {e}");
        }
    }
    let fps_pairs: Vec<(u32, u32)> = predicted
        .iter()
        .filter(|p| !ctx.truth08.contains(p))
        .copied()
        .collect();
    let chained = fps_pairs.iter().filter(|p| !edge_set.contains(p)).count();
    println!(
        "default rule: {} false-positive pairs: {} are verified edges (J >= {} on 32-bit ids but < 0.8 exactly), {} come from transitive clustering (A~B, B~C, J(A,C) < 0.8); their exact J: {}",
        fps_pairs.len(),
        fps_pairs.len() - chained,
        rule.min_jaccard,
        chained,
        ctx.fp_bands(&predicted)
    );
    let mut sizes: Vec<usize> = def.clusters.iter().map(Vec::len).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    println!(
        "default rule: {} clusters of 2+, largest {:?}",
        sizes.len(),
        &sizes[..sizes.len().min(8)]
    );

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
        "distance": {"p50": pct[0].1, "p90": pct[1].1, "p95": pct[2].1, "p99": pct[3].1, "max": pct[4].1,
                     "recall_within": within, "bands": band_json},
        "default_misses": {"too_short": cat[0], "beyond_radius": cat[1], "verification_32bit": cat[2], "different_clusters": cat[3], "singleton": cat[4]},
        "default_false_positives": {"total": fps_pairs.len(), "chained": chained},
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

/// Jaccard as the pipeline verifies it: on the upper 32 bits of each shingle hash.
fn jac32(a: &[u64], b: &[u64]) -> f64 {
    let (a, b) = (shingle_ids(a), shingle_ids(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let i = intersection_len(&a, &b);
    i as f64 / (a.len() + b.len() - i) as f64
}

// ---------------------------------------------------------------------------------------
// `big-corpus`: the throughput corpus.

struct BaseDoc {
    host: String,
    path: String,
    text: String,
}

fn split_at_paragraphs(text: &str, rng: &mut Rng, out: &mut Vec<String>) {
    let mut target = 2048 + rng.below(22 * 1024);
    let mut cur = String::new();
    for para in text.split("\n\n") {
        cur.push_str(para);
        cur.push_str("\n\n");
        if cur.len() >= target {
            out.push(std::mem::take(&mut cur));
            target = 2048 + rng.below(22 * 1024);
        }
    }
    if cur.trim().len() > 200 {
        out.push(cur);
    }
}

fn cmd_big_corpus(args: &Args) -> AnyResult<()> {
    let out = PathBuf::from(args.get("out").ok_or("--out FILE")?);
    let gb: f64 = args.num("gb", 1.0);
    let target = (gb * 1e9) as u64;
    let sample_every: u64 = args.num("sample-every", 128);
    let seed: u64 = args.num("seed", 11);
    let mut rng = Rng::new(seed);
    let t0 = Instant::now();

    // /usr/share/doc: every file that is text (gzip decompressed), cut at blank lines.
    let mut files = Vec::new();
    walk(Path::new("/usr/share/doc"), &mut files);
    walk(Path::new("/usr/share/common-licenses"), &mut files);
    let skip = [
        "html", "htm", "png", "gif", "jpg", "svg", "css", "js", "pdf", "c", "h", "py", "pl", "sh",
        "xml", "json", "cocci", "awk", "ico", "woff", "ttf",
    ];
    files.retain(|p| {
        let name = p.to_string_lossy();
        let stem = name.trim_end_matches(".gz");
        let ext = Path::new(stem)
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        !skip.contains(&ext.as_str())
    });
    let doc_texts: Vec<(PathBuf, String)> = files
        .par_iter()
        .filter_map(|p| Some((p.clone(), read_text(p)?)))
        .collect();
    let mut base: Vec<BaseDoc> = Vec::new();
    for (p, text) in &doc_texts {
        let rel = p.strip_prefix("/usr/share").unwrap_or(p);
        let mut comps = rel.components().skip(1);
        let pkg = comps
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let host = format!("{}.docs.example", pkg.replace(['+', '_', '.'], "-"));
        let mut parts = Vec::new();
        split_at_paragraphs(text, &mut rng, &mut parts);
        for (n, t) in parts.into_iter().enumerate() {
            base.push(BaseDoc {
                host: host.clone(),
                path: format!("{}/{n}", rel.display()),
                text: t,
            });
        }
    }
    let doc_bytes: u64 = base.iter().map(|d| d.text.len() as u64).sum();
    eprintln!(
        "big-corpus: /usr/share/doc: {} files, {} documents, {:.0} MB ({:.0}s)",
        doc_texts.len(),
        base.len(),
        doc_bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    drop(doc_texts);

    // Every man page of every language, rendered with groff.
    let mut pages = Vec::new();
    walk(Path::new("/usr/share/man"), &mut pages);
    let t1 = Instant::now();
    let rendered: Vec<(PathBuf, String)> = pages
        .par_iter()
        .filter_map(|p| Some((p.clone(), render_groff(p)?)))
        .collect();
    let before = base.len();
    for (p, text) in rendered {
        let rel = p.strip_prefix("/usr/share/man").unwrap_or(&p);
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let lang = if first.starts_with("man") {
            "en".into()
        } else {
            first
        };
        let host = format!(
            "man-{}.example",
            lang.to_ascii_lowercase().replace('_', "-")
        );
        let mut parts = Vec::new();
        if text.len() > 64 * 1024 {
            split_at_paragraphs(&text, &mut rng, &mut parts);
        } else {
            parts.push(text);
        }
        for (n, t) in parts.into_iter().enumerate() {
            base.push(BaseDoc {
                host: host.clone(),
                path: format!("{}/{n}", rel.display()),
                text: t,
            });
        }
    }
    let man_bytes: u64 = base[before..].iter().map(|d| d.text.len() as u64).sum();
    eprintln!(
        "big-corpus: man pages: {} files, {} documents, {:.0} MB ({:.0}s)",
        pages.len(),
        base.len() - before,
        man_bytes as f64 / 1e6,
        t1.elapsed().as_secs_f64()
    );
    // Interleave sources deterministically, so the file is not all changelogs first.
    rng.shuffle(&mut base);
    let vocab = {
        let sample: Vec<(String, String)> = base
            .iter()
            .step_by(50)
            .map(|d| (String::new(), d.text.clone()))
            .collect();
        vocabulary(&sample)
    };

    let mut e = Emitter {
        w: BufWriter::with_capacity(1 << 20, File::create(&out)?),
        sample: match args.get("sample-out") {
            Some(p) => Some(BufWriter::new(File::create(p)?)),
            None => None,
        },
        sample_every,
        bytes: 0,
        records: 0,
        sample_records: 0,
        kinds: HashMap::new(),
    };
    // Pass 0: the real documents. Passes 1..: per document, an edited near-duplicate (40%),
    // a verbatim republication (10%), or a new document spliced from the second half of it
    // and the first half of the next one (50%). Each pass and kind has its own hosts
    // (rev1.bash.docs.example, mirror1..., part1...), so a host never holds two versions of
    // one document: otherwise, on a host of 20-40 pages, the learner (5% share) would take a
    // document's own near-duplicate text for the site's boilerplate.
    let mut pass = 0usize;
    'outer: loop {
        for (i, d) in base.iter().enumerate() {
            if e.bytes >= target {
                break 'outer;
            }
            if pass == 0 {
                e.emit(
                    i,
                    format!("d{i}"),
                    format!("https://{}/{}", d.host, d.path),
                    &d.text,
                    "original",
                )?;
                continue;
            }
            let r = rng.below(100);
            let id = format!("d{i}~p{pass}");
            if r < 40 {
                let (k, t) = edit(&d.text, &mut rng, &vocab);
                let _ = k;
                e.emit(
                    i,
                    id,
                    format!("https://rev{pass}.{}/{}", d.host, d.path),
                    &t,
                    "edited",
                )?;
            } else if r < 50 {
                e.emit(
                    i,
                    id,
                    format!("https://mirror{pass}.{}/{}", d.host, d.path),
                    &d.text,
                    "republished",
                )?;
            } else {
                let next = &base[(i + 1) % base.len()];
                let a = &d.text[floor_boundary(&d.text, d.text.len() / 2)..];
                let b = &next.text[..floor_boundary(&next.text, next.text.len() / 2)];
                let t = format!("{a}\n\n{b}");
                e.emit(
                    i,
                    id,
                    format!("https://part{pass}.{}/{}", d.host, d.path),
                    &t,
                    "spliced",
                )?;
            }
        }
        pass += 1;
    }
    e.w.flush()?;
    if let Some(s) = e.sample.as_mut() {
        s.flush()?;
    }
    let (records, bytes, sample_records) = (e.records, e.bytes, e.sample_records);
    let mut k: Vec<_> = e.kinds.into_iter().collect();
    k.sort();
    eprintln!(
        "big-corpus: {records} records, {:.3} GB of text ({} passes over {} real documents of {:.0} MB), kinds (records, bytes) {:?}; sample: {sample_records} records; built in {:.0}s -> {}",
        bytes as f64 / 1e9,
        pass + 1,
        base.len(),
        (doc_bytes + man_bytes) as f64 / 1e6,
        k,
        t0.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}

struct Emitter {
    w: BufWriter<File>,
    sample: Option<BufWriter<File>>,
    sample_every: u64,
    bytes: u64,
    records: u64,
    sample_records: u64,
    kinds: HashMap<&'static str, (u64, u64)>,
}

impl Emitter {
    fn emit(
        &mut self,
        family: usize,
        id: String,
        url: String,
        text: &str,
        kind: &'static str,
    ) -> AnyResult<()> {
        let line = serde_json::to_string(&json!({"id": id, "url": url, "body_text": text}))?;
        self.w.write_all(line.as_bytes())?;
        self.w.write_all(b"\n")?;
        if let Some(s) = self.sample.as_mut() {
            if fnv(&family.to_string()).is_multiple_of(self.sample_every) {
                s.write_all(line.as_bytes())?;
                s.write_all(b"\n")?;
                self.sample_records += 1;
            }
        }
        self.bytes += text.len() as u64;
        self.records += 1;
        let k = self.kinds.entry(kind).or_default();
        k.0 += 1;
        k.1 += text.len() as u64;
        Ok(())
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

// ---------------------------------------------------------------------------------------

struct Args(Vec<(String, Option<String>)>);

impl Args {
    fn parse(raw: &[String]) -> Args {
        let mut v = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let k = raw[i].trim_start_matches("--").to_owned();
            if i + 1 < raw.len() && !raw[i + 1].starts_with("--") {
                v.push((k, Some(raw[i + 1].clone())));
                i += 2;
            } else {
                v.push((k, None));
                i += 1;
            }
        }
        Args(v)
    }
    fn get(&self, k: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(x, _)| x == k)
            .and_then(|(_, v)| v.as_deref())
    }
    fn all(&self, k: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(x, _)| x == k)
            .filter_map(|(_, v)| v.as_deref())
            .collect()
    }
    fn flag(&self, k: &str) -> bool {
        self.0.iter().any(|(x, _)| x == k)
    }
    fn num<T: std::str::FromStr>(&self, k: &str, default: T) -> T {
        self.get(k).and_then(|v| v.parse().ok()).unwrap_or(default)
    }
}

fn main() -> AnyResult<()> {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = raw.first() else {
        return Err("usage: quality_eval corpus|eval|big-corpus [--options]".into());
    };
    let args = Args::parse(&raw[1..]);
    if let Some(t) = args.get("threads") {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t.parse()?)
            .build_global()?;
    }
    match cmd.as_str() {
        "corpus" => cmd_corpus(&args),
        "eval" => cmd_eval(&args),
        "big-corpus" => cmd_big_corpus(&args),
        other => Err(format!("unknown command {other:?}").into()),
    }
}
