//! Driver of scripts/bench_redis.sh: inserts/s and queries/s of `Deduper` with 1, 2 and 4
//! workers (threads, each with its own store connection and in-memory replica, as separate
//! processes would have) over a store already holding `--stored` records; for Redis, the
//! commands and round trips per record (INFO commandstats on every node, and the client's
//! count of requests).
//!
//! Built as the `bench_redis` example of the neardup package (feature `redis`).
//! Usage: bench_redis --store URL|PATH [--nodes host:port,...] [--stored N] [--insert M]
//!        [--queries Q] [--workers 1,2,4] [--batch B]

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use neardup::store::{RedisStats, RedisStore, SqliteStore, Store};
use neardup::{Deduper, Record, Timestamp};

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// Document `i`: 120 words from a 20k vocabulary; every fifth is a light edit of the one
/// before (a near duplicate), the rest are distinct.
fn text(i: u64) -> String {
    let (base, edits) = if i % 5 == 4 { (i - 1, 3) } else { (i, 0) };
    let mut s = base;
    let mut words: Vec<String> = (0..120)
        .map(|_| {
            s = fmix64(s.wrapping_add(0x9e37_79b9_7f4a_7c15));
            format!("w{}", s % 20_000)
        })
        .collect();
    for e in 0..edits {
        words[(e * 37 + 11) % 120] = format!("edit{i}x{e}");
    }
    words.join(" ")
}

fn record(i: u64) -> Record {
    Record::new(format!("r{i}"), text(i)).with_url(format!("https://h{}.example/{i}", i % 50))
}

/// A store whose requests can be counted.
trait Counted: Store + 'static {
    fn open(store: &str) -> Self;
    fn counters(&self) -> RedisStats;
}

impl Counted for RedisStore {
    fn open(store: &str) -> Self {
        RedisStore::open(store).expect("open redis")
    }
    fn counters(&self) -> RedisStats {
        self.stats()
    }
}

impl Counted for SqliteStore {
    fn open(store: &str) -> Self {
        SqliteStore::open(std::path::Path::new(store)).expect("open sqlite")
    }
    fn counters(&self) -> RedisStats {
        RedisStats::default()
    }
}

/// Where the insert time went, summed over the workers: per lock taken, milliseconds
/// waiting for it and holding it, and of the holding, catching up, reading verification
/// sets and committing (the rest is deciding).
fn lock_profile(runs: &[(RedisStats, RedisStats)]) -> String {
    let ms = |f: &dyn Fn(&RedisStats) -> std::time::Duration| -> f64 {
        runs.iter()
            .map(|(a, b)| (f(b) - f(a)).as_secs_f64() * 1e3)
            .sum::<f64>()
    };
    let locks: u64 = runs.iter().map(|(a, b)| b.locks - a.locks).sum();
    let per = |x: f64| x / locks.max(1) as f64;
    format!(
        "{locks} locks; per lock: wait {:.1} ms, held {:.1} ms (catch-up {:.1}, set reads {:.1}, commit {:.1})",
        per(ms(&|s| s.lock_wait)),
        per(ms(&|s| s.lock_held)),
        per(ms(&|s| s.sync_time)),
        per(ms(&|s| s.read_time)),
        per(ms(&|s| s.commit_time)),
    )
}

fn open<S: Counted>(store: &str, expected: u64) -> Deduper<S> {
    Deduper::builder()
        .expected_records(expected)
        .open(S::open(store))
        .expect("open deduper")
}

/// Calls per command, summed over the nodes.
fn commandstats(nodes: &[String]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for n in nodes {
        let client = redis::Client::open(format!("redis://{n}/")).expect("node url");
        let mut c = client.get_connection().expect("node reachable");
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut c)
            .expect("INFO");
        for line in info.lines() {
            let Some(rest) = line.strip_prefix("cmdstat_") else {
                continue;
            };
            let (name, fields) = rest.split_once(':').unwrap_or((rest, ""));
            let calls = fields
                .split(',')
                .find_map(|f| f.strip_prefix("calls="))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            *out.entry(name.to_owned()).or_default() += calls;
        }
    }
    out
}

fn delta(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>, per: u64) -> String {
    let mut parts: Vec<(u64, String)> = after
        .iter()
        .filter(|(k, _)| k.as_str() != "info")
        .map(|(k, v)| (v - before.get(k).copied().unwrap_or(0), k.clone()))
        .filter(|(d, _)| *d > 0)
        .collect();
    parts.sort_by(|a, b| b.cmp(a));
    let total: u64 = parts.iter().map(|p| p.0).sum();
    let list: Vec<String> = parts
        .iter()
        .map(|(d, k)| format!("{k} {:.3}", *d as f64 / per as f64))
        .collect();
    format!(
        "{:.3} commands/record ({})",
        total as f64 / per as f64,
        list.join(", ")
    )
}

fn main() {
    let store = std::env::args()
        .skip_while(|a| a != "--store")
        .nth(1)
        .expect("--store URL|PATH is required");
    if store.starts_with("redis") {
        run::<RedisStore>();
    } else {
        run::<SqliteStore>();
    }
}

fn run<S: Counted>() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| default.to_owned())
    };
    let store = arg("--store", "");
    assert!(!store.is_empty(), "--store URL|PATH is required");
    let is_redis = store.starts_with("redis");
    let nodes: Vec<String> = arg("--nodes", "")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let stored: u64 = arg("--stored", "1000000").parse().unwrap();
    let insert: u64 = arg("--insert", "40000").parse().unwrap();
    let queries: u64 = arg("--queries", "20000").parse().unwrap();
    let batch: usize = arg("--batch", "1000").parse().unwrap();
    let workers: Vec<u64> = arg("--workers", "1,2,4")
        .split(',')
        .map(|w| w.parse().unwrap())
        .collect();
    let total = stored + insert * workers.len() as u64;
    let now = Timestamp::parse_rfc3339("2026-11-30T00:00:00Z").unwrap();

    let t = Instant::now();
    let mut d = open::<S>(&store, total);
    let have = d.stats().records as u64;
    println!(
        "open with {have} records stored: {:.1}s",
        t.elapsed().as_secs_f64()
    );
    if have < stored {
        let t = Instant::now();
        let ids: Vec<u64> = (have..stored).collect();
        for chunk in ids.chunks(10_000) {
            let recs: Vec<Record> = chunk.iter().map(|&i| record(i)).collect();
            for b in recs.chunks(batch) {
                d.process(b, now).unwrap();
            }
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "preload: {} records in {secs:.1}s ({:.0} records/s, 1 worker)",
            stored - have,
            (stored - have) as f64 / secs
        );
    }
    drop(d);

    let mut next = stored.max(have);
    for &w in &workers {
        let first = next;
        next += insert;
        let barrier = Arc::new(Barrier::new(w as usize + 1));
        let before = commandstats(&nodes);
        let handles: Vec<_> = (0..w)
            .map(|k| {
                let (store, barrier) = (store.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let t = Instant::now();
                    let mut d = open::<S>(&store, total);
                    let open_s = t.elapsed().as_secs_f64();
                    barrier.wait(); // all open: start inserting together
                    let s0 = d.store().counters();
                    let t = Instant::now();
                    let ids: Vec<u64> = (first..first + insert).filter(|i| i % w == k).collect();
                    for chunk in ids.chunks(batch) {
                        let recs: Vec<Record> = chunk.iter().map(|&i| record(i)).collect();
                        d.process(&recs, now).unwrap();
                    }
                    let insert_s = t.elapsed().as_secs_f64();
                    let s1 = d.store().counters();
                    // Queries: light edits of stored documents, spread over the store.
                    let per = queries / w;
                    let t = Instant::now();
                    let mut hits = 0u64;
                    for q in 0..per {
                        let i = fmix64(q * w + k) % first;
                        let mut r = record(i);
                        r.id = format!("q{q}");
                        let words: Vec<&str> = r.fields[0].text.split(' ').collect();
                        let edited: Vec<String> = words
                            .iter()
                            .enumerate()
                            .map(|(j, x)| {
                                if j == 50 {
                                    "queryedit".into()
                                } else {
                                    (*x).to_owned()
                                }
                            })
                            .collect();
                        r.fields[0].text = edited.join(" ");
                        hits += u64::from(!d.query(&r).unwrap().is_empty());
                    }
                    let query_s = t.elapsed().as_secs_f64();
                    let s2 = d.store().counters();
                    let (rt_insert, rt_query) = (
                        s1.round_trips - s0.round_trips,
                        s2.round_trips - s1.round_trips,
                    );
                    (
                        open_s,
                        insert_s,
                        query_s,
                        rt_insert,
                        rt_query,
                        per,
                        hits,
                        (s0, s1),
                    )
                })
            })
            .collect();
        barrier.wait();
        let t = Instant::now();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let wall = t.elapsed().as_secs_f64();
        let open_s = results.iter().map(|r| r.0).fold(0.0, f64::max);
        let insert_s = results.iter().map(|r| r.1).fold(0.0, f64::max);
        let query_s = results.iter().map(|r| r.2).fold(0.0, f64::max);
        let rt_insert: u64 = results.iter().map(|r| r.3).sum();
        let rt_query: u64 = results.iter().map(|r| r.4).sum();
        let nq: u64 = results.iter().map(|r| r.5).sum();
        let hits: u64 = results.iter().map(|r| r.6).sum();
        println!(
            "workers={w}: open {open_s:.1}s; insert {insert} in {insert_s:.1}s = {:.0} inserts/s; {nq} queries in {query_s:.1}s = {:.0} queries/s ({hits} found); wall {wall:.1}s",
            insert as f64 / insert_s,
            nq as f64 / query_s
        );
        if is_redis {
            println!(
                "  round trips (client): {:.4}/record inserted (batch {batch}), {:.4}/query",
                rt_insert as f64 / insert as f64,
                rt_query as f64 / nq.max(1) as f64
            );
            let runs: Vec<(RedisStats, RedisStats)> = results.iter().map(|r| r.7).collect();
            println!("  inserts: {}", lock_profile(&runs));
        }
        if !nodes.is_empty() {
            let after = commandstats(&nodes);
            println!(
                "  commandstats over inserts+queries, per record inserted: {}",
                delta(&after, &before, insert)
            );
        }
    }
}
