//! The Redis store against real servers: processes sharing one store, racing workers,
//! fencing of a stale lock, a server crash mid-run, erasure leaving nothing behind, and the
//! round trips a batch costs. The behavioural suite shared with the embedded store runs in
//! the library's `store::tests` (one suite, several backends).

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/shared_store.rs"]
mod shared_store;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Barrier};

use corpus::{doc, fmix64};
use neardup::store::{Batch, MergeLogEntry, RedisStore, Store};
use neardup::{Decision, Deduper, MemoryStore, Record, Timestamp};
use redis_server::{shared_cluster, shared_server, unique_prefix, RedisServer};

/// `text` with `n` words replaced from `from` on (spread out), a typical light edit.
fn edit(text: &str, from: usize, n: usize) -> String {
    let mut words: Vec<String> = text.split(' ').map(str::to_owned).collect();
    let len = words.len();
    for i in from..from + n {
        words[(i * 37 + 11) % len] = format!("edit{i}");
    }
    words.join(" ")
}

fn now() -> Timestamp {
    Timestamp::parse_rfc3339("2026-11-30T00:00:00Z").unwrap()
}

fn open(url: &str) -> Deduper<RedisStore> {
    Deduper::builder()
        .open(RedisStore::open(url).unwrap())
        .unwrap()
}

fn merges<S: Store>(d: &Deduper<S>) -> Vec<MergeLogEntry> {
    let mut v = Vec::new();
    d.store().merges(&mut |m| v.push(m)).unwrap();
    v
}

/// Survivor of each record.
fn clusters<S: Store>(d: &Deduper<S>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for c in d.clusters() {
        for m in c.members {
            out.insert(m, c.survivor.clone());
        }
    }
    out
}

/// Two tests of one scenario: `$server` runs `$scenario` on the shared server and
/// `$cluster` on the shared cluster, each under a fresh key prefix `$tag` and with its own
/// further arguments.
macro_rules! on_server_and_cluster {
    (
        $scenario:ident($tag:literal),
        $server:ident($($server_arg:expr),*),
        $cluster:ident($($cluster_arg:expr),*) $(,)?
    ) => {
        #[test]
        fn $server() {
            $scenario(&shared_server().url(&unique_prefix($tag)) $(, $server_arg)*);
        }

        #[test]
        fn $cluster() {
            $scenario(&shared_cluster().url(&unique_prefix($tag)) $(, $cluster_arg)*);
        }
    };
}

fn two_processes_see_each_others_records(url: &str) {
    let text = doc(30, 250);
    let c = shared_store::two_processes_see_each_others_records(
        || open(url),
        now(),
        &text,
        [&edit(&text, 0, 2), &edit(&text, 5, 3)],
    );
    let log = merges(&c);
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log.iter().all(|m| m.kept == "<erased>"), "{log:?}");
}

on_server_and_cluster!(
    two_processes_see_each_others_records("two"),
    two_processes_on_one_redis_see_each_others_records(),
    two_processes_on_one_redis_cluster_see_each_others_records(),
);

/// Workers insert near duplicates of the same texts at the same time, each its own
/// variants in its own order, in small batches.
fn racing_workers(url: &str) {
    const WORKERS: usize = 4;
    const GROUPS: u64 = 12;
    let bases: Vec<String> = (0..GROUPS).map(|g| doc(1000 + g, 200)).collect();
    let barrier = Arc::new(Barrier::new(WORKERS));
    let threads: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (url, bases, barrier) = (url.to_owned(), bases.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut d = open(&url);
                let mut order: Vec<u64> = (0..GROUPS).collect();
                order.sort_by_key(|g| fmix64(g ^ (w as u64 * 7919)));
                let records: Vec<Record> = order
                    .iter()
                    .map(|&g| Record::new(format!("g{g}-w{w}"), edit(&bases[g as usize], w * 3, 2)))
                    .collect();
                barrier.wait();
                for chunk in records.chunks(3) {
                    d.process(chunk, now()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let d = open(url);
    let survivors = clusters(&d);
    assert_eq!(survivors.len(), WORKERS * GROUPS as usize);
    for g in 0..GROUPS {
        let of_group: BTreeSet<&String> = (0..WORKERS)
            .map(|w| &survivors[&format!("g{g}-w{w}")])
            .collect();
        assert_eq!(
            of_group.len(),
            1,
            "group {g} kept several survivors: {of_group:?}"
        );
    }
    assert_eq!(d.stats().clusters, GROUPS as usize);
    // Every record was merged at most once: no double merges.
    let log = merges(&d);
    let merged: BTreeSet<&str> = log.iter().map(|m| m.merged.as_str()).collect();
    assert_eq!(merged.len(), log.len(), "{log:?}");
    assert_eq!(log.len(), (WORKERS - 1) * GROUPS as usize);
}

on_server_and_cluster!(
    racing_workers("race"),
    racing_workers_on_one_redis_keep_one_survivor_per_group(),
    racing_workers_on_a_redis_cluster_keep_one_survivor_per_group(),
);

#[test]
fn a_commit_under_an_expired_lock_is_refused() {
    let url = shared_server().url(&unique_prefix("stale")) + "&lock_ttl_ms=100";
    let mut a = RedisStore::open(&url).unwrap();
    let mut b = RedisStore::open(&url).unwrap();
    a.load(&mut |_| {}).unwrap();
    b.load(&mut |_| {}).unwrap();
    a.lock().unwrap();
    a.sync(&mut |_| {}).unwrap();
    // A stalls past its lock's lifetime; B takes the lock and commits.
    std::thread::sleep(std::time::Duration::from_millis(250));
    b.lock().unwrap();
    b.sync(&mut |_| {}).unwrap();
    let erase_nothing = Batch {
        survivor_updates: vec![(1, 1)],
        ..Batch::default()
    };
    b.commit(&erase_nothing).unwrap();
    b.unlock().unwrap();
    let err = a.commit(&erase_nothing).unwrap_err().to_string();
    assert!(err.contains("stale lock"), "{err}");
    assert!(err.contains("reopen"), "{err}");
    assert_eq!(a.stats().stale_commits, 1);
}

#[test]
fn an_unreachable_server_gives_a_clear_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("redis://127.0.0.1:{port}/0?retries=1&timeout_ms=300");
    let err = RedisStore::open(&url).unwrap_err().to_string();
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(err.contains("reachable"), "{err}");
    let err = RedisStore::open("rediss://127.0.0.1:1/0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("TLS"), "{err}");
}

#[test]
fn another_profile_is_refused() {
    let url = shared_server().url(&unique_prefix("profile"));
    open(&url)
        .process(&[Record::new("a", doc(1, 100))], now())
        .unwrap();
    let hasher = neardup::SimHasher::builder()
        .bits(neardup::FingerprintBits::Bits128)
        .build()
        .unwrap();
    let err = Deduper::builder()
        .hasher(hasher)
        .open(RedisStore::open(&url).unwrap())
        .unwrap_err();
    assert!(
        matches!(err, neardup::Error::ConfigMismatch { .. }),
        "{err}"
    );
}

/// Records in groups of near duplicates, in batches.
fn corpus() -> Vec<Vec<Record>> {
    let recs: Vec<Record> = (0..60u64)
        .map(|i| {
            let g = i % 15;
            Record::new(
                format!("r{i}"),
                edit(&doc(500 + g, 150), (i / 15) as usize * 4, 2),
            )
            .with_url(format!("https://h{}.example/{i}", i % 3))
        })
        .collect();
    recs.chunks(6).map(<[Record]>::to_vec).collect()
}

fn reference() -> (BTreeMap<String, String>, usize) {
    let mut d = Deduper::builder().open(MemoryStore::new()).unwrap();
    for b in corpus() {
        d.process(&b, now()).unwrap();
    }
    (clusters(&d), merges(&d).len())
}

#[test]
fn a_server_crash_mid_run_then_a_rerun_loses_nothing_and_merges_nothing_twice() {
    let mut server = RedisServer::start_persistent();
    let url = server.url("crash") + "&retries=1&timeout_ms=500";
    let batches = corpus();
    let mut d = open(&url);
    for b in &batches[..4] {
        d.process(b, now()).unwrap();
    }
    server.kill();
    let err = d.process(&batches[4], now()).unwrap_err().to_string();
    assert!(err.contains("reachable"), "{err}");
    server.restart();
    // The rerun: the same input from the start.
    let mut d = open(&url);
    for b in &batches {
        d.process(b, now()).unwrap();
    }
    let (want, want_merges) = reference();
    assert_eq!(clusters(&d), want);
    let log = merges(&d);
    assert_eq!(log.len(), want_merges, "{log:?}");
    let merged: BTreeSet<&str> = log.iter().map(|m| m.merged.as_str()).collect();
    assert_eq!(merged.len(), log.len());
}

#[test]
fn a_server_restart_within_the_retries_goes_unnoticed() {
    let mut server = RedisServer::start_persistent();
    let url = server.url("blip");
    let batches = corpus();
    let mut d = open(&url);
    for b in &batches[..4] {
        d.process(b, now()).unwrap();
    }
    server.kill();
    // The server is restarted from a thread that lives until the end of the test: a server
    // dies with the thread that started it.
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let restarter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        server.restart();
        let _ = wait.recv();
    });
    for b in &batches[4..] {
        d.process(b, now()).unwrap();
    }
    let (want, want_merges) = reference();
    assert_eq!(clusters(&d), want);
    assert_eq!(clusters(&open(&url)), want);
    assert_eq!(merges(&d).len(), want_merges);
    done.send(()).unwrap();
    restarter.join().unwrap();
}

/// Every key and value under a prefix, as text, from every node.
fn dump(ports: &[u16], prefix: &str) -> String {
    let mut out = String::new();
    for &p in ports {
        let keys = redis_server::redis_cli(p, &["--scan", "--pattern", &format!("*{prefix}*")]);
        for key in keys.lines().filter(|k| !k.is_empty()) {
            let kind = redis_server::redis_cli(p, &["TYPE", key]);
            let args: Vec<&str> = match kind.trim() {
                "string" => vec!["GET", key],
                "hash" => vec!["HGETALL", key],
                "set" => vec!["SMEMBERS", key],
                "list" => vec!["LRANGE", key, "0", "-1"],
                "stream" => vec!["XRANGE", key, "-", "+"],
                other => panic!("unexpected type {other} of {key}"),
            };
            out += &format!("{key}\n{}\n", redis_server::redis_cli(p, &args));
        }
    }
    out
}

fn erasure_leaves_nothing(url: &str, ports: &[u16], prefix: &str) {
    let mut d = open(url);
    let text = doc(77, 200);
    d.process(
        &[
            Record::new("keep-me", text.clone()).with_url("https://a.example/keep"),
            Record::new("forget-me", edit(&text, 0, 2)).with_url("https://b.example/secret"),
            Record::new("other", doc(78, 200)).with_url("https://c.example/other"),
        ],
        now(),
    )
    .unwrap();
    let fp = d.fingerprint_of("forget-me").unwrap();
    let before = dump(ports, prefix);
    assert!(before.contains("b.example/secret"));
    // Seed 000's band sets: members `handle:fingerprint`, one set per band value.
    let low16 = u64::from_str_radix(&fp, 16).unwrap() & 0xffff;
    assert!(
        before.contains(&format!("{prefix}:b:0:{low16}\n")),
        "no band set {prefix}:b:0:{low16} in\n{before}"
    );
    // Handles are dense from 1 in input order: forget-me is 2.
    let member = format!("2:{fp}");
    assert!(before.contains(&member), "{member} not in\n{before}");
    let mut other = open(url);
    other.erase(&["forget-me"]).unwrap();
    let after = dump(ports, prefix);
    for gone in ["forget-me", "b.example/secret", &member] {
        assert!(
            !after.contains(gone),
            "{gone:?} is still in Redis:\n{after}"
        );
    }
    assert!(after.contains("keep-me") && after.contains("c.example/other"));
    d.process(&[], now()).unwrap();
    assert!(!d.contains("forget-me"));
}

#[test]
fn erasure_leaves_nothing_of_the_record_in_redis() {
    let server = RedisServer::start();
    erasure_leaves_nothing(&server.url("erase"), &[server.port], "erase");
}

#[test]
fn erasure_leaves_nothing_of_the_record_in_a_redis_cluster() {
    let cluster = shared_cluster();
    let prefix = unique_prefix("erase");
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    erasure_leaves_nothing(&cluster.url(&prefix), &ports, &prefix);
}

fn round_trips_per_batch(url: &str, per_batch: u64) {
    let mut d = open(url);
    let mut last = d.store().stats().round_trips;
    let mut spent = HashMap::new();
    for (i, b) in corpus().iter().enumerate() {
        d.process(b, now()).unwrap();
        let s = d.store().stats();
        spent.insert(i, s.round_trips - last);
        last = s.round_trips;
    }
    // Each batch: lock with catch-up, commit (+ shingle reads of candidates this process
    // did not commit itself: none here).
    assert!(spent.values().all(|&n| n == per_batch), "{spent:?}");
    assert_eq!(d.store().stats().shingle_reads, 0);
}

on_server_and_cluster!(
    round_trips_per_batch("rt"),
    a_batch_costs_two_round_trips_on_one_server(2),
    // Lock, shingle blobs and band sets (one pipeline, fanned out per node), commit, unlock.
    a_batch_costs_four_round_trips_on_a_cluster(4),
);
