//! Index benchmark driver: queries/s and memory for each layout, against the seed-004
//! reference index and the linear scan; all-pairs joins with planted pairs.
//!
//! ```text
//! cargo run --release --example index_bench -- k3    [--n 1000000] [--queries 1000000]
//! cargo run --release --example index_bench -- large [--n 100000000] [--queries 2000000]
//! cargo run --release --example index_bench -- join  [--n 10000000] [--k 3] [--planted 100000]
//! cargo run --release --example index_bench -- radius [--n 1000000] [--queries 20000]
//! cargo run --release --example index_bench -- dump  --n 100000 --out fps.txt
//! cargo run --release --example index_bench -- stream --fps fps.txt [--k 14] [--window 1024]
//! any mode: --fps FILE   read hex fingerprints (one per line) instead of random ones
//!           --clustered C  families of C near-duplicates (0 to 6 bits from a random center)
//! radius, stream: --substrings M  multi-index hashing with M substrings instead of the plan's
//! stream:   the dedup pipeline's pattern: fingerprints in input order, each window of
//!           W queried against the index as it stands, then its new fingerprints inserted;
//!           queries one by one against `query_nearest_batch`, alternately, same answers
//! ```
//!
//! Rates are queries per CPU second of the querying thread (what one core does, even when
//! the machine is shared), with the wall-clock rate alongside.
//!
//! Queries are timed on one thread; half are stored fingerprints with up to `k` random
//! bit flips (each must find its source), half are random.

#[path = "../benches/seeded.rs"]
mod seeded;

use std::io::{BufRead, Write};
use std::time::Instant;

use neardup::index::{
    self_join, AutoIndex, BandIndex, HammingIndex, LinearIndex, Match, MihIndex, PermutedIndex,
};
use seeded::{flip_bits, splitmix};

// ---- The seed-004 reference `Index`, copied verbatim from the seed text (rustfmt-skipped
// so that it stays byte-for-byte comparable). ----

#[rustfmt::skip]
mod reference {
use std::collections::HashMap;

pub fn hamming(a: u64, b: u64) -> u32 { (a ^ b).count_ones() }

/// Finds all stored fingerprints within `k` bits. Pigeonhole: with k+1 blocks, two fingerprints
/// within k bits agree exactly on at least one block, so k+1 exact-match tables suffice.
pub struct Index {
    k: u32,
    tables: Vec<HashMap<u64, Vec<u32>>>, // block value -> ids
    fps: Vec<u64>,
}

impl Index {
    pub fn new(k: u32) -> Self { Index { k, tables: vec![HashMap::new(); k as usize + 1], fps: vec![] } }
    fn block(&self, fp: u64, i: usize) -> u64 {
        let (lo, hi) = (i * 64 / self.tables.len(), (i + 1) * 64 / self.tables.len());
        (fp >> lo) & ((1u64 << (hi - lo)) - 1)
    }
    pub fn insert(&mut self, fp: u64) -> u32 {
        let id = self.fps.len() as u32;
        for i in 0..self.tables.len() { let b = self.block(fp, i); self.tables[i].entry(b).or_default().push(id); }
        self.fps.push(fp);
        id
    }
    /// Returns (id, distance) for every stored fingerprint within k bits of `fp`.
    pub fn query(&self, fp: u64) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = vec![];
        for i in 0..self.tables.len() {
            for &id in self.tables[i].get(&self.block(fp, i)).into_iter().flatten() {
                let d = hamming(fp, self.fps[id as usize]);
                if d <= self.k && !out.iter().any(|o| o.0 == id) { out.push((id, d)); }
            }
        }
        out
    }
}
}
use reference::Index;

// ---- End of the reference. ----

struct Args {
    mode: String,
    n: Option<usize>,
    queries: Option<usize>,
    k: Option<u32>,
    planted: usize,
    fps_file: Option<String>,
    out: Option<String>,
    blocks: Option<u32>,
    substrings: Option<u32>,
    clustered: Option<usize>,
    window: usize,
    quick: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it
        .next()
        .ok_or("usage: index_bench MODE [--n N] [--queries Q] [--k K] [--fps FILE]")?;
    let mut args = Args {
        mode,
        n: None,
        queries: None,
        k: None,
        planted: 100_000,
        fps_file: None,
        out: None,
        blocks: None,
        substrings: None,
        clustered: None,
        window: 1024,
        quick: false,
    };
    while let Some(flag) = it.next() {
        if flag == "--quick" {
            args.quick = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = || -> Result<usize, String> {
            value
                .parse::<f64>()
                .map(|v| v as usize)
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--n" => args.n = Some(number()?),
            "--queries" => args.queries = Some(number()?),
            "--k" => args.k = Some(number()? as u32),
            "--planted" => args.planted = number()?,
            "--fps" => args.fps_file = Some(value),
            "--out" => args.out = Some(value),
            "--blocks" => args.blocks = Some(number()? as u32),
            "--substrings" => args.substrings = Some(number()? as u32),
            "--clustered" => args.clustered = Some(number()?.max(1)),
            "--window" => args.window = number()?.max(1),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

fn load_fps(args: &Args, default_n: usize, seed: u64) -> Result<Vec<u64>, String> {
    if let Some(path) = &args.fps_file {
        let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
        let mut fps = Vec::new();
        for (line_no, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| format!("{path}: {e}"))?;
            let text = line.trim().trim_start_matches("0x");
            if text.is_empty() {
                continue;
            }
            fps.push(
                u64::from_str_radix(text, 16)
                    .map_err(|e| format!("{path}:{}: {e}", line_no + 1))?,
            );
        }
        if let Some(n) = args.n {
            fps.truncate(n);
        }
        return Ok(fps);
    }
    let mut state = seed;
    let n = args.n.unwrap_or(default_n);
    if let Some(size) = args.clustered {
        // Families of `size` near-duplicates: a random center and members 0 to 6 bits away.
        let mut center = 0;
        return Ok((0..n)
            .map(|i| {
                if i % size == 0 {
                    center = splitmix(&mut state);
                }
                let flips = (splitmix(&mut state) % 7) as u32;
                flip_bits(center, flips, &mut state)
            })
            .collect());
    }
    Ok((0..n).map(|_| splitmix(&mut state)).collect())
}

/// Half near queries (a stored fingerprint with up to `k` flips: must find it), half random.
fn make_queries(fps: &[u64], count: usize, k: u32) -> Vec<(u64, Option<u64>)> {
    let mut state = 0xC0FFEE;
    (0..count)
        .map(|i| {
            if i % 2 == 0 && !fps.is_empty() {
                let id = (splitmix(&mut state) % fps.len() as u64) as usize;
                let flips = (splitmix(&mut state) % u64::from(k + 1)) as u32;
                (flip_bits(fps[id], flips, &mut state), Some(id as u64))
            } else {
                (splitmix(&mut state), None)
            }
        })
        .collect()
}

/// CPU time of this thread, in seconds: the machine is shared, and a benchmark that is
/// descheduled for part of its run would otherwise report the other process's load.
fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "thread CPU clock available");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// A stopwatch of wall and thread CPU time; queries/s are reported per CPU second (what
/// one core does), with the wall-clock rate alongside.
struct Timer {
    wall: Instant,
    cpu: f64,
}

impl Timer {
    fn start() -> Self {
        Timer {
            wall: Instant::now(),
            cpu: thread_cpu_secs(),
        }
    }

    /// (CPU seconds, wall seconds) since the start.
    fn elapsed(&self) -> (f64, f64) {
        (
            thread_cpu_secs() - self.cpu,
            self.wall.elapsed().as_secs_f64(),
        )
    }

    /// (queries per CPU second, queries per wall second).
    fn rates(&self, queries: usize) -> (f64, f64) {
        let (cpu, wall) = self.elapsed();
        (queries as f64 / cpu, queries as f64 / wall)
    }
}

/// Runs the queries on one thread; returns queries/s and checks every near query.
fn time_queries(index: &dyn HammingIndex, queries: &[(u64, Option<u64>)], k: u32) -> (f64, f64) {
    let mut out: Vec<Match> = Vec::new();
    let mut hits = 0usize;
    let start = Timer::start();
    for &(q, expect) in queries {
        index.query_into(q, k, &mut out).expect("radius supported");
        hits += out.len();
        if let Some(id) = expect {
            assert!(out.iter().any(|m| m.id == id), "near query lost its source");
        }
    }
    std::hint::black_box(hits);
    start.rates(queries.len())
}

/// Like [`time_queries`] through `query_batch`, `batch` queries at a time.
fn time_batch(
    index: &dyn HammingIndex,
    queries: &[(u64, Option<u64>)],
    k: u32,
    batch: usize,
) -> (f64, f64) {
    let fps: Vec<u64> = queries.iter().map(|q| q.0).collect();
    let mut out = Vec::new();
    let mut hits = 0usize;
    // Only the batches are timed: checking a batch's answers (a binary search per near
    // query) is the bench's work, not the index's.
    let (mut cpu, mut wall) = (0.0, 0.0);
    for (chunk_no, chunk) in fps.chunks(batch).enumerate() {
        let timer = Timer::start();
        index
            .query_batch(chunk, k, &mut out)
            .expect("radius supported");
        let (c, w) = timer.elapsed();
        (cpu, wall) = (cpu + c, wall + w);
        hits += out.len();
        for (at, expect) in queries[chunk_no * batch..][..chunk.len()]
            .iter()
            .enumerate()
        {
            if let Some(id) = expect.1 {
                let lo = out.partition_point(|(q, _)| *q < at);
                assert!(
                    out[lo..]
                        .iter()
                        .take_while(|(q, _)| *q == at)
                        .any(|(_, m)| m.id == id),
                    "near query lost its source"
                );
            }
        }
    }
    std::hint::black_box(hits);
    let n = queries.len() as f64;
    (n / cpu, n / wall)
}

fn report(
    name: &str,
    (qps, wall_qps): (f64, f64),
    index: &dyn HammingIndex,
    baseline: Option<f64>,
) {
    let stats = index.stats();
    let ratio = baseline.map_or(String::new(), |b| format!("  {:>7.1}x", qps / b));
    println!(
        "{name:<34} {:>12.0} q/s  (wall {:>9.0})  {:>7.1} B/fp  largest bucket {:>6}{ratio}   [{}]",
        qps,
        wall_qps,
        stats.memory_bytes as f64 / stats.len.max(1) as f64,
        stats.largest_bucket,
        stats.layout
    );
}

/// Times `index` on `queries` one at a time and reports it as `name`.
fn report_queries(
    name: &str,
    index: &dyn HammingIndex,
    queries: &[(u64, Option<u64>)],
    k: u32,
    baseline: Option<f64>,
) {
    report(name, time_queries(index, queries, k), index, baseline);
}

/// Times `index` on `queries` through `query_batch`, `batch` at a time, and reports it as
/// `name`.
fn report_batch(
    name: &str,
    index: &dyn HammingIndex,
    queries: &[(u64, Option<u64>)],
    k: u32,
    batch: usize,
    baseline: Option<f64>,
) {
    report(name, time_batch(index, queries, k, batch), index, baseline);
}

/// `(id, fingerprint)` pairs of `fps`, each fingerprint's id its position.
fn numbered(fps: &[u64]) -> impl Iterator<Item = (u64, u64)> + '_ {
    fps.iter()
        .copied()
        .enumerate()
        .map(|(i, fp)| (i as u64, fp))
}

fn build<I: HammingIndex>(mut index: I, fps: &[u64]) -> I {
    for (id, &fp) in fps.iter().enumerate() {
        index.insert(id as u64, fp).expect("fresh id");
    }
    index.compact();
    index
}

fn mode_k3(args: &Args) -> Result<(), String> {
    let k = args.k.unwrap_or(3);
    let fps = load_fps(args, 1_000_000, 1)?;
    let n = fps.len();
    let queries = make_queries(&fps, args.queries.unwrap_or(1_000_000), k);
    println!(
        "n = {n}, k = {k}, {} queries (half near, half random), one thread",
        queries.len()
    );

    let start = Instant::now();
    let mut reference = Index::new(k);
    for &fp in &fps {
        reference.insert(fp);
    }
    let build_ref = start.elapsed().as_secs_f64();
    let start = Timer::start();
    let mut hits = 0usize;
    for &(q, _) in &queries {
        hits += reference.query(q).len();
    }
    let ref_qps = start.rates(queries.len()).0;
    std::hint::black_box(hits);
    println!(
        "{:<34} {ref_qps:>12.0} q/s  (build {build_ref:.2} s)",
        "seed-004 reference Index (HashMap)"
    );

    let start = Instant::now();
    let mut auto = AutoIndex::for_size(n as u64, k).map_err(|e| e.to_string())?;
    auto.extend(numbered(&fps)).map_err(|e| e.to_string())?;
    println!(
        "auto: build {:.2} s, plan: {}",
        start.elapsed().as_secs_f64(),
        auto.plan()
    );
    report_queries("auto", &auto, &queries, k, Some(ref_qps));
    report_batch("auto, query_batch", &auto, &queries, k, 1024, Some(ref_qps));
    drop(auto);

    let mut permuted = PermutedIndex::builder();
    permuted.max_distance(k).expected_len(n as u64);
    if let Some(blocks) = args.blocks {
        permuted.blocks(blocks);
    }
    let mut permuted = permuted.build().map_err(|e| e.to_string())?;
    permuted.extend(numbered(&fps)).map_err(|e| e.to_string())?;
    report_queries("permuted", &permuted, &queries, k, Some(ref_qps));
    report_batch(
        "permuted, query_batch",
        &permuted,
        &queries,
        k,
        1024,
        Some(ref_qps),
    );
    drop(permuted);
    if args.quick {
        return Ok(());
    }

    let bands = build(BandIndex::new(k + 1).map_err(|e| e.to_string())?, &fps);
    report_queries("bands (k+1)", &bands, &queries, k, Some(ref_qps));
    drop(bands);

    let mut mih = MihIndex::builder();
    mih.expected_len(n as u64).max_distance(k);
    let mih = build(mih.build().map_err(|e| e.to_string())?, &fps);
    report_queries("multi-index", &mih, &queries, k, Some(ref_qps));
    drop(mih);

    let linear = build(LinearIndex::new(), &fps);
    let few = &queries[..queries.len().min(2000)];
    report_queries("linear scan", &linear, few, k, Some(ref_qps));

    // Online inserts: time per insert into a built permuted index, buffer merges included.
    let mut online = PermutedIndex::builder();
    online.max_distance(k).expected_len(n as u64);
    let mut online = online.build().map_err(|e| e.to_string())?;
    let start = Instant::now();
    for (id, &fp) in fps.iter().enumerate() {
        online.insert(id as u64, fp).map_err(|e| e.to_string())?;
    }
    let per_insert = start.elapsed().as_secs_f64() / n.max(1) as f64;
    println!(
        "online inserts into permuted: {:.2} us per insert (buffer merges included)",
        per_insert * 1e6
    );
    report_queries(
        "permuted after online inserts",
        &online,
        &queries,
        k,
        Some(ref_qps),
    );
    // Queries scan the insert buffer (and a frozen one while its merge runs) until it is
    // merged: after a bulk load, `flush` merges it.
    online.flush();
    report_queries(
        "permuted after online inserts, flush",
        &online,
        &queries,
        k,
        Some(ref_qps),
    );
    Ok(())
}

fn mode_large(args: &Args) -> Result<(), String> {
    let k = args.k.unwrap_or(3);
    let fps = load_fps(args, 100_000_000, 2)?;
    let n = fps.len();
    let queries = make_queries(&fps, args.queries.unwrap_or(2_000_000), k);
    let start = Instant::now();
    let mut permuted = PermutedIndex::builder();
    permuted.max_distance(k).expected_len(n as u64);
    let mut permuted = permuted.build().map_err(|e| e.to_string())?;
    println!("n = {n}, k = {k}, layout {}", permuted.layout());
    permuted.extend(numbered(&fps)).map_err(|e| e.to_string())?;
    drop(fps);
    println!("build {:.1} s", start.elapsed().as_secs_f64());
    report_queries("permuted (large)", &permuted, &queries, k, None);
    report_batch(
        "permuted (large), query_batch of 1024",
        &permuted,
        &queries,
        k,
        1024,
        None,
    );
    // A long batch over tables this large is answered by sorted sweeps of the tables.
    let whole = queries.len();
    report_batch(
        &format!("permuted (large), query_batch of {whole}"),
        &permuted,
        &queries,
        k,
        whole,
        None,
    );
    Ok(())
}

fn mode_join(args: &Args) -> Result<(), String> {
    let k = args.k.unwrap_or(3);
    let mut fps = load_fps(args, 10_000_000, 3)?;
    let n = fps.len();
    let mut state = 99u64;
    let mut planted = Vec::new();
    for _ in 0..args.planted.min(n / 2) {
        let a = (splitmix(&mut state) % n as u64) as usize;
        let b = (splitmix(&mut state) % n as u64) as usize;
        if a == b {
            continue;
        }
        let flips = 1 + (splitmix(&mut state) % u64::from(k.max(1))) as u32;
        fps[b] = flip_bits(fps[a], flips.min(k), &mut state);
        planted.push((a.min(b) as u32, a.max(b) as u32));
    }
    let start = Instant::now();
    let pairs = self_join(&fps, k).map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    let layout = neardup::index::join::join_layout(n as u64, k).map(|l| l.to_string());
    // A planted pair may have been overwritten by a later plant; check those still within k.
    let mut checked = 0;
    for &(a, b) in &planted {
        if (fps[a as usize] ^ fps[b as usize]).count_ones() <= k {
            checked += 1;
            let found = pairs.binary_search_by(|p| (p.a, p.b).cmp(&(a, b))).is_ok();
            assert!(found, "planted pair ({a}, {b}) missing");
        }
    }
    println!(
        "join n = {n}, k = {k}: {:.2} s on {} threads, {} pairs, all {checked} planted pairs found  [{}]",
        secs,
        rayon::current_num_threads(),
        pairs.len(),
        layout.unwrap_or_default()
    );
    Ok(())
}

fn mode_radius(args: &Args) -> Result<(), String> {
    let fps = load_fps(args, 1_000_000, 4)?;
    let n = fps.len();
    let linear = build(LinearIndex::new(), &fps);
    for k in [7u32, 10, 12, 14, 16] {
        if args.k.is_some_and(|only| only != k) {
            continue;
        }
        let queries = make_queries(&fps, args.queries.unwrap_or(20_000), k);
        let linear_qps = time_queries(&linear, &queries[..queries.len().min(1000)], k);
        let start = Instant::now();
        let mut mih = MihIndex::builder();
        mih.expected_len(n as u64).max_distance(k);
        if let Some(substrings) = args.substrings {
            mih.substrings(substrings);
        }
        let mut mih = mih.build().map_err(|e| e.to_string())?;
        mih.extend(numbered(&fps)).map_err(|e| e.to_string())?;
        let build_secs = start.elapsed().as_secs_f64();
        println!("k = {k}, n = {n} (mih build {build_secs:.2} s)");
        report("  linear scan", linear_qps, &linear, None);
        report_queries("  multi-index", &mih, &queries, k, Some(linear_qps.0));
        report_batch(
            "  multi-index, query_batch",
            &mih,
            &queries,
            k,
            1024,
            Some(linear_qps.0),
        );
        let auto = AutoIndex::for_size(n as u64, k).map_err(|e| e.to_string())?;
        println!("  auto plan: {}", auto.plan());
    }
    if !args.quick && args.k.is_none_or(|k| k == 10) {
        let start = Instant::now();
        let pairs = self_join(&fps, 10).map_err(|e| e.to_string())?;
        println!(
            "join n = {n}, k = 10: {:.2} s on {} threads, {} pairs",
            start.elapsed().as_secs_f64(),
            rayon::current_num_threads(),
            pairs.len()
        );
    }
    Ok(())
}

/// One pass of the stream mode: CPU seconds spent querying, and a digest of the answers.
fn stream_pass(
    fps: &[u64],
    k: u32,
    window: usize,
    batch: bool,
    substrings: Option<u32>,
) -> Result<(f64, u64), String> {
    match substrings {
        None => stream_with(
            AutoIndex::for_size(fps.len() as u64, k).map_err(|e| e.to_string())?,
            fps,
            k,
            window,
            batch,
        ),
        Some(m) => {
            let mut mih = MihIndex::builder();
            mih.substrings(m);
            stream_with(
                mih.build().map_err(|e| e.to_string())?,
                fps,
                k,
                window,
                batch,
            )
        }
    }
}

fn stream_with<I: HammingIndex>(
    mut index: I,
    fps: &[u64],
    k: u32,
    window: usize,
    batch: bool,
) -> Result<(f64, u64), String> {
    const LIMIT: usize = 64;
    let mut answers: Vec<Vec<Match>> = Vec::new();
    let mut cpu = 0.0;
    let mut digest = 0u64;
    for (w, chunk) in fps.chunks(window).enumerate() {
        let timer = Timer::start();
        if batch {
            index
                .query_nearest_batch(chunk, k, LIMIT, &mut answers)
                .map_err(|e| e.to_string())?;
        } else {
            answers.resize_with(chunk.len(), Vec::new);
            for (&q, found) in chunk.iter().zip(answers.iter_mut()) {
                index
                    .query_nearest_into(q, k, LIMIT, found)
                    .map_err(|e| e.to_string())?;
            }
        }
        cpu += timer.elapsed().0;
        for (i, (&fp, found)) in chunk.iter().zip(&answers).enumerate() {
            for m in found {
                digest = digest
                    .wrapping_mul(0x100_0000_01b3)
                    .wrapping_add(m.id << 6 | u64::from(m.distance));
            }
            // Stored unless it repeats a stored fingerprint, as exact copies are not.
            if found.first().is_none_or(|m| m.distance > 0) {
                index
                    .insert((w * window + i) as u64, fp)
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok((cpu, digest))
}

fn mode_stream(args: &Args) -> Result<(), String> {
    let fps = load_fps(args, 150_000, 5)?;
    let k = args.k.unwrap_or(14);
    let runs = if args.quick { 1 } else { 3 };
    let (mut single, mut batch) = (f64::MAX, f64::MAX);
    for _ in 0..runs {
        let (s, a) = stream_pass(&fps, k, args.window, false, args.substrings)?;
        let (b, d) = stream_pass(&fps, k, args.window, true, args.substrings)?;
        if a != d {
            return Err("batch answers differ from single queries".into());
        }
        (single, batch) = (single.min(s), batch.min(b));
    }
    let per = |secs: f64| secs * 1e6 / fps.len() as f64;
    println!(
        "stream n = {}, k = {k}, windows of {}: one by one {:.2} us/query, batch {:.2} us/query ({:.2}x), same answers  [{}]",
        fps.len(),
        args.window,
        per(single),
        per(batch),
        single / batch,
        AutoIndex::for_size(fps.len() as u64, k)
            .map_err(|e| e.to_string())?
            .plan()
    );
    Ok(())
}

fn mode_dump(args: &Args) -> Result<(), String> {
    let fps = load_fps(args, 100_000, 1)?;
    let path = args.out.as_deref().ok_or("dump needs --out FILE")?;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| e.to_string())?);
    for fp in fps {
        writeln!(file, "{fp:016x}").map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn main() {
    let result = parse_args().and_then(|args| match args.mode.as_str() {
        "k3" => mode_k3(&args),
        "large" => mode_large(&args),
        "join" => mode_join(&args),
        "radius" => mode_radius(&args),
        "stream" => mode_stream(&args),
        "dump" => mode_dump(&args),
        other => Err(format!(
            "unknown mode {other}: k3, large, join, radius, stream, dump"
        )),
    });
    if let Err(e) = result {
        eprintln!("index_bench: {e}");
        std::process::exit(2);
    }
}
