//! Verification: the Jaccard similarity of two shingle-id sets, as every candidate needs,
//! by the vectorised `id_jaccard` and the scalar merge `jaccard`, on pairs of real
//! documents' sets (a /usr/share/doc text against an edited copy, and against the next one).

mod corpus;

use criterion::{criterion_group, criterion_main, Criterion};
use neardup::verify::{id_jaccard, jaccard, shingle_ids};
use neardup::SimHasher;

fn bench(c: &mut Criterion) {
    let docs = corpus::english(64, 1 << 20);
    assert!(
        docs.len() >= 2,
        "the bench needs English documentation texts"
    );
    let hasher = SimHasher::builder().build().expect("valid");
    let ids = |text: &str| shingle_ids(&hasher.shingle_set(text));
    // An edit: every tenth word dropped.
    let edited = |text: &str| -> String {
        text.split_whitespace()
            .enumerate()
            .filter(|(i, _)| i % 10 != 3)
            .map(|(_, w)| w)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let near: Vec<(Vec<u32>, Vec<u32>)> = docs.iter().map(|d| (ids(d), ids(&edited(d)))).collect();
    let far: Vec<(Vec<u32>, Vec<u32>)> =
        docs.windows(2).map(|w| (ids(&w[0]), ids(&w[1]))).collect();
    let mut group = c.benchmark_group("verify");
    for (name, pairs) in [("near", &near), ("unrelated", &far)] {
        group.bench_function(format!("id_jaccard/{name}"), |b| {
            b.iter(|| pairs.iter().map(|(x, y)| id_jaccard(x, y)).sum::<f64>())
        });
        group.bench_function(format!("merge/{name}"), |b| {
            b.iter(|| pairs.iter().map(|(x, y)| jaccard(x, y)).sum::<f64>())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
