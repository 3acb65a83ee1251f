//! Query throughput of every index against the linear scan, at 1M random fingerprints.
//!
//! `NEARDUP_BENCH_N` overrides the number of stored fingerprints. Each group carries its
//! baseline (`linear`), and every iteration checks that near queries find their source.
//! Table indexes are measured one query at a time and through `query_batch` (`-batch`),
//! which overlaps the memory accesses of a group of queries. Each iteration answers the
//! next 256 of a pool of 262,144 distinct queries, so the tables' lines are not all in the
//! cache from the iteration before (a fixed set of 256 queries measured 2-3x faster).

#[path = "seeded.rs"]
mod seeded;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use neardup::index::{BandIndex, HammingIndex, LinearIndex, Match, MihIndex, PermutedIndex};
use seeded::{flip_bits, splitmix};

fn corpus() -> Vec<u64> {
    let n = std::env::var("NEARDUP_BENCH_N")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(1_000_000, |v| v as usize);
    let mut state = 0x5EED;
    (0..n).map(|_| splitmix(&mut state)).collect()
}

/// Stored fingerprints with exactly `k` bits flipped: each must find its source.
fn near_queries(fps: &[u64], count: usize, k: u32) -> Vec<(u64, u64)> {
    let mut state = 0xBEEF;
    (0..count)
        .map(|_| {
            let id = splitmix(&mut state) % fps.len() as u64;
            (flip_bits(fps[id as usize], k, &mut state), id)
        })
        .collect()
}

/// Distinct queries per group, answered in windows, one window per iteration.
const POOL: usize = 1 << 18;

fn load<I: HammingIndex>(mut index: I, fps: &[u64]) -> I {
    for (id, &fp) in fps.iter().enumerate() {
        index.insert(id as u64, fp).expect("fresh id");
    }
    index.compact();
    index
}

fn run_queries(index: &dyn HammingIndex, queries: &[(u64, u64)], k: u32, out: &mut Vec<Match>) {
    for &(q, id) in queries {
        index
            .query_into(black_box(q), k, out)
            .expect("radius supported");
        assert!(out.iter().any(|m| m.id == id), "near query lost its source");
    }
}

/// Like [`run_queries`] through `query_batch`: `fps` are the queries, `ids` their sources.
fn run_batch(
    index: &dyn HammingIndex,
    (fps, ids): &(Vec<u64>, Vec<u64>),
    k: u32,
    out: &mut Vec<(usize, Match)>,
) {
    index
        .query_batch(black_box(fps), k, out)
        .expect("radius supported");
    // `out` is sorted by query position: walk it once.
    let mut found = 0;
    let mut at = 0;
    for (q, &id) in ids.iter().enumerate() {
        while at < out.len() && out[at].0 < q {
            at += 1;
        }
        let mut i = at;
        while i < out.len() && out[i].0 == q {
            if out[i].1.id == id {
                found += 1;
                break;
            }
            i += 1;
        }
    }
    assert_eq!(found, ids.len(), "a near query lost its source");
}

fn bench_radius(c: &mut Criterion, fps: &[u64], k: u32) {
    let n = fps.len() as u64;
    let mut indexes: Vec<(&str, Box<dyn HammingIndex>)> =
        vec![("linear", Box::new(load(LinearIndex::new(), fps)))];
    if k < 8 {
        let bands = BandIndex::new(k + 1).expect("valid bands");
        indexes.push(("bands", Box::new(load(bands, fps))));
        let mut permuted = PermutedIndex::builder();
        permuted.max_distance(k).expected_len(n);
        indexes.push((
            "permuted",
            Box::new(load(permuted.build().expect("layout"), fps)),
        ));
    }
    let mut mih = MihIndex::builder();
    mih.expected_len(n).max_distance(k);
    indexes.push(("mih", Box::new(load(mih.build().expect("layout"), fps))));

    let mut group = c.benchmark_group(format!("query_k{k}"));
    let mut out = Vec::new();
    let mut batch_out = Vec::new();
    let pool = near_queries(fps, POOL, k);
    for (name, index) in &indexes {
        // The scan reads every fingerprint per query: fewer queries per iteration.
        let count = if *name == "linear" { 8 } else { 256 };
        let windows: Vec<&[(u64, u64)]> = pool.chunks_exact(count).collect();
        group.throughput(Throughput::Elements(count as u64));
        let mut next = 0;
        group.bench_function(BenchmarkId::new(*name, n), |b| {
            b.iter(|| {
                next = (next + 1) % windows.len();
                run_queries(index.as_ref(), windows[next], k, &mut out)
            });
        });
        if *name != "linear" {
            let batches: Vec<(Vec<u64>, Vec<u64>)> =
                windows.iter().map(|w| w.iter().copied().unzip()).collect();
            group.bench_function(BenchmarkId::new(format!("{name}-batch"), n), |b| {
                b.iter(|| {
                    next = (next + 1) % batches.len();
                    run_batch(index.as_ref(), &batches[next], k, &mut batch_out)
                });
            });
        }
    }
    group.finish();
}

fn queries(c: &mut Criterion) {
    let fps = corpus();
    bench_radius(c, &fps, 3);
    bench_radius(c, &fps, 10);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = queries
}
criterion_main!(benches);
