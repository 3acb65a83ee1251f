//! Fingerprint throughput driver: MB/s and docs/s on one thread, side by side with the
//! seed-004 reference program, on real text from this machine.
//!
//! ```text
//! cargo run --release -p neardup --example fingerprint_bench -- \
//!     [--english-bytes 8388608] [--doc-bytes 2000] [--man-pages 200] \
//!     [--reps 5] [--min-secs 0.25] [--dump-corpus english.jsonl] [--json out.json]
//! ```
//!
//! Engines: neardup's default profile (xxh3, 4-word shingles, tf), neardup's `blake2b`
//! profile, and the seed-004 reference `simhash(text, 4, |_| 1)` (copied verbatim below).
//! Corpora: English prose from `/usr/share/doc` and the licences, Chinese (`zh_CN`) and
//! Russian (`ru`) man pages rendered with `man -l` (see `benches/corpus.rs`).
//!
//! Every MB/s and docs/s figure is the best of `--reps` repetitions by the wall clock; one
//! repetition is as many passes over the whole corpus as fill `--min-secs`. Beside it, `cpu
//! MB/s` divides by this thread's CPU time over all repetitions (`/proc/thread-self/stat`),
//! and `cpu/wall` says how much of the core the thread got: on a shared machine the wall
//! figure drops while the CPU figure holds. The XOR of all fingerprints is printed as a
//! checksum so that nothing is optimised away. `--dump-corpus` writes the English documents
//! as JSON Lines (one JSON string per line) for the Python peers in
//! `scripts/bench_fingerprint/peers.py`; `--json` writes the results as JSON.

#[path = "../benches/corpus.rs"]
mod corpus;

use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

use neardup::{HashAlgo, Scratch, SimHasher};

/// The reference program of seed 004 (`/work/shared/seeds/004_870cb925be248ea3.txt`,
/// section "Code"): `fnv1a`, `tokens` and `simhash` copied verbatim, formatting included.
#[rustfmt::skip]
mod seed004 {
fn fnv1a(b: &[u8]) -> u64 {
    let mut h = 0xcbf29ce484222325u64;
    for &x in b { h = (h ^ x as u64).wrapping_mul(0x100000001b3); }
    // splitmix64 finalizer: FNV's high bits mix poorly, and every bit is a vote here
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d049bb133111eb);
    h ^ (h >> 31)
}

/// Lowercase alphanumeric tokens.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| w.to_lowercase()).collect()
}

/// 64-bit simhash of the w-word shingles; `weight` maps a shingle hash to its weight (1 = plain tf).
pub fn simhash(text: &str, w: usize, weight: impl Fn(u64) -> i32) -> u64 {
    let toks = tokens(text);
    let mut v = [0i64; 64];
    let n = toks.len();
    let windows = if n >= w { n - w + 1 } else { usize::from(n > 0) }; // short text: one shingle
    for i in 0..windows {
        let h = fnv1a(toks[i..(i + w).min(n)].join(" ").as_bytes());
        let wt = weight(h) as i64;
        for (b, vb) in v.iter_mut().enumerate() {
            *vb += if h >> b & 1 == 1 { wt } else { -wt };
        }
    }
    v.iter().enumerate().fold(0u64, |fp, (b, &x)| fp | ((x > 0) as u64) << b)
}
}

struct Args {
    english_bytes: usize,
    doc_bytes: usize,
    man_pages: usize,
    reps: usize,
    min_secs: f64,
    dump_corpus: Option<String>,
    json: Option<String>,
}

fn parse_args() -> Args {
    let mut a = Args {
        english_bytes: 8 << 20,
        doc_bytes: 2000,
        man_pages: 200,
        reps: 5,
        min_secs: 0.25,
        dump_corpus: None,
        json: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let flag = argv[i].as_str();
        let val = || -> &str {
            argv.get(i + 1).map(String::as_str).unwrap_or_else(|| {
                eprintln!("{flag} needs a value");
                std::process::exit(2)
            })
        };
        let num = |s: &str| -> f64 {
            s.parse().unwrap_or_else(|_| {
                eprintln!("{flag}: not a number: {s}");
                std::process::exit(2)
            })
        };
        match flag {
            "--english-bytes" => a.english_bytes = num(val()) as usize,
            "--doc-bytes" => a.doc_bytes = num(val()) as usize,
            "--man-pages" => a.man_pages = num(val()) as usize,
            "--reps" => a.reps = (num(val()) as usize).max(1),
            "--min-secs" => a.min_secs = num(val()),
            "--dump-corpus" => a.dump_corpus = Some(val().to_string()),
            "--json" => a.json = Some(val().to_string()),
            "-h" | "--help" => {
                eprintln!(
                    "usage: fingerprint_bench [--english-bytes N] [--doc-bytes N] \
                     [--man-pages N] [--reps N] [--min-secs S] [--dump-corpus PATH] \
                     [--json PATH]"
                );
                std::process::exit(0)
            }
            other => {
                eprintln!("unknown argument {other}; try --help");
                std::process::exit(2)
            }
        }
        i += 2;
    }
    a
}

/// One measured engine on one corpus.
struct Row {
    engine: &'static str,
    corpus: &'static str,
    docs: usize,
    bytes: u64,
    passes: usize,
    best_secs: f64,
    /// Mean CPU seconds per pass over all repetitions (None where /proc is unreadable).
    cpu_secs: Option<f64>,
    /// CPU seconds per wall second over the repetitions: below 1 when other work shared
    /// the core.
    cpu_per_wall: Option<f64>,
    checksum: u64,
    errors: usize,
}

impl Row {
    fn mb_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.best_secs
    }
    fn docs_s(&self) -> f64 {
        self.docs as f64 / self.best_secs
    }
    fn cpu_mb_s(&self) -> Option<f64> {
        self.cpu_secs.map(|c| self.bytes as f64 / 1e6 / c)
    }
}

/// Times `f` (one pass over `docs`, returning (xor of fingerprints, errors)) on this thread:
/// best of `reps` repetitions of `passes` passes, `passes` chosen to fill `min_secs`.
fn measure(
    engine: &'static str,
    corpus: &'static str,
    docs: &[String],
    reps: usize,
    min_secs: f64,
    mut f: impl FnMut(&[String]) -> (u64, usize),
) -> Row {
    // Warm-up pass, which also calibrates the number of passes per repetition.
    let t = Instant::now();
    let (checksum, errors) = f(black_box(docs));
    let one = t.elapsed().as_secs_f64().max(1e-6);
    let passes = ((min_secs / one).ceil() as usize).max(1);
    let mut best = f64::INFINITY;
    let (wall0, cpu0) = (Instant::now(), thread_cpu_secs());
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..passes {
            let (c, _) = f(black_box(docs));
            assert_eq!(
                c, checksum,
                "{engine}/{corpus}: fingerprints changed between passes"
            );
        }
        best = best.min(t.elapsed().as_secs_f64() / passes as f64);
    }
    let wall = wall0.elapsed().as_secs_f64();
    let cpu = thread_cpu_secs().zip(cpu0).map(|(b, a)| b - a);
    Row {
        engine,
        corpus,
        docs: docs.len(),
        bytes: corpus::bytes(docs),
        passes,
        best_secs: best,
        cpu_secs: cpu.map(|c| c / (reps * passes) as f64),
        cpu_per_wall: cpu.map(|c| c / wall),
        checksum,
        errors,
    }
}

/// CPU time of this thread (user + system) from `/proc/thread-self/stat`, in seconds; its
/// resolution is one clock tick (10 ms), so it is only read around all repetitions together.
fn thread_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: f64 = fields.next()?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    Some((utime + stime) / CLOCK_TICKS_PER_SEC)
}

/// `sysconf(_SC_CLK_TCK)`: 100 on every Linux ABI this runs on.
const CLOCK_TICKS_PER_SEC: f64 = 100.0;

fn neardup_pass(hasher: &SimHasher) -> impl FnMut(&[String]) -> (u64, usize) + '_ {
    let mut scratch = Scratch::default();
    move |docs| {
        let (mut acc, mut errors) = (0u64, 0usize);
        for d in docs {
            match hasher.fingerprint_with(d, &mut scratch) {
                Ok(fp) => acc ^= fp.as_u64(),
                Err(_) => errors += 1,
            }
        }
        (black_box(acc), errors)
    }
}

fn seed004_pass(docs: &[String]) -> (u64, usize) {
    let mut acc = 0u64;
    for d in docs {
        acc ^= seed004::simhash(d, 4, |_| 1);
    }
    (black_box(acc), 0)
}

fn ascii_share(docs: &[String]) -> f64 {
    let total = corpus::bytes(docs).max(1);
    let ascii: usize = docs
        .iter()
        .map(|d| d.bytes().filter(u8::is_ascii).count())
        .sum();
    ascii as f64 / total as f64
}

fn json_escape(s: &str) -> String {
    serde_json::to_string(s).expect("string serialises")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args();

    let t = Instant::now();
    let english = corpus::english(args.doc_bytes, args.english_bytes);
    let chinese = corpus::man_pages("zh_CN", args.man_pages);
    let russian = corpus::man_pages("ru", args.man_pages);
    eprintln!("corpora loaded in {:.1} s", t.elapsed().as_secs_f64());
    if english.is_empty() {
        return Err("no English prose found under /usr/share/doc".into());
    }
    let corpora: [(&'static str, &Vec<String>); 3] = [
        ("english", &english),
        ("chinese", &chinese),
        ("russian", &russian),
    ];

    if let Some(path) = &args.dump_corpus {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for d in &english {
            writeln!(out, "{}", json_escape(d))?;
        }
        out.flush()?;
        eprintln!("wrote {} English documents to {path}", english.len());
    }

    let default = SimHasher::builder().build()?;
    let blake = SimHasher::builder().hash(HashAlgo::Blake2b).build()?;
    assert_eq!(default.profile().shingle_width(), 4);
    assert_eq!(blake.profile().shingle_width(), 4);

    let (reps, min_secs) = (args.reps, args.min_secs);
    let mut rows = Vec::new();
    for (name, docs) in corpora {
        if docs.is_empty() {
            eprintln!("no {name} documents on this machine; skipped");
            continue;
        }
        eprintln!("timing {name} ({} docs)", docs.len());
        rows.push(measure(
            "neardup-default",
            name,
            docs,
            reps,
            min_secs,
            neardup_pass(&default),
        ));
        rows.push(measure(
            "neardup-blake2b",
            name,
            docs,
            reps,
            min_secs,
            neardup_pass(&blake),
        ));
        rows.push(measure("seed004", name, docs, reps, min_secs, seed004_pass));
    }

    println!(
        "{:<16} {:<8} {:>6} {:>10} {:>6} {:>9} {:>10} {:>9} {:>9} {:>8} {:>16}",
        "engine",
        "corpus",
        "docs",
        "bytes",
        "ascii",
        "MB/s",
        "docs/s",
        "x seed004",
        "cpu MB/s",
        "cpu/wall",
        "checksum"
    );
    for r in &rows {
        let seed = rows
            .iter()
            .find(|s| s.engine == "seed004" && s.corpus == r.corpus)
            .map_or(f64::NAN, |s| r.mb_s() / s.mb_s());
        let docs = corpora.iter().find(|c| c.0 == r.corpus).map(|c| c.1);
        println!(
            "{:<16} {:<8} {:>6} {:>10} {:>5.1}% {:>9.1} {:>10.0} {:>9.2} {:>9.1} {:>8.2} {:016x}{}",
            r.engine,
            r.corpus,
            r.docs,
            r.bytes,
            docs.map_or(f64::NAN, |d| 100.0 * ascii_share(d)),
            r.mb_s(),
            r.docs_s(),
            seed,
            r.cpu_mb_s().unwrap_or(f64::NAN),
            r.cpu_per_wall.unwrap_or(f64::NAN),
            r.checksum,
            if r.errors > 0 {
                format!("  ({} docs without tokens)", r.errors)
            } else {
                String::new()
            }
        );
    }

    if let Some(path) = &args.json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let docs = corpora.iter().find(|c| c.0 == r.corpus).map(|c| c.1);
                serde_json::json!({
                    "engine": r.engine,
                    "corpus": r.corpus,
                    "docs": r.docs,
                    "bytes": r.bytes,
                    "ascii_share": docs.map_or(0.0, |d| ascii_share(d)),
                    "passes": r.passes,
                    "best_secs_per_pass": r.best_secs,
                    "mb_s": r.mb_s(),
                    "docs_s": r.docs_s(),
                    "cpu_secs_per_pass": r.cpu_secs,
                    "cpu_mb_s": r.cpu_mb_s(),
                    "cpu_docs_s": r.cpu_secs.map(|c| r.docs as f64 / c),
                    "cpu_per_wall": r.cpu_per_wall,
                    "checksum": format!("{:016x}", r.checksum),
                    "errors": r.errors,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "rows": rows,
            "reps": reps,
            "min_secs": min_secs,
            "doc_bytes": args.doc_bytes,
            "english_bytes_requested": args.english_bytes,
        });
        std::fs::write(path, serde_json::to_string_pretty(&doc)? + "\n")?;
        eprintln!("wrote {path}");
    }
    Ok(())
}
