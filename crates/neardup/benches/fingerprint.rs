//! Fingerprint throughput on real text, one thread: MB/s per profile and script; and how
//! fast HTML pages are reduced to their text.

mod corpus;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use neardup::{HashAlgo, Scratch, SimHasher};

fn bench(c: &mut Criterion) {
    let english = corpus::english(2000, 8 << 20);
    let chinese = corpus::man_pages("zh_CN", 40);
    let russian = corpus::man_pages("ru", 40);
    let default = SimHasher::builder().build().expect("valid");
    let blake = SimHasher::builder()
        .hash(HashAlgo::Blake2b)
        .build()
        .expect("valid");

    let mut group = c.benchmark_group("fingerprint");
    group.sample_size(10);
    for (name, hasher, docs) in [
        ("xxh3/english", &default, &english),
        ("blake2b/english", &blake, &english),
        ("xxh3/chinese", &default, &chinese),
        ("xxh3/russian", &default, &russian),
    ] {
        if docs.is_empty() {
            continue;
        }
        group.throughput(Throughput::Bytes(corpus::bytes(docs)));
        group.bench_function(name, |b| {
            let mut scratch = Scratch::default();
            b.iter(|| {
                let mut acc = 0u64;
                for d in docs.iter() {
                    if let Ok(fp) = hasher.fingerprint_with(d, &mut scratch) {
                        acc ^= fp.as_u64();
                    }
                }
                assert_ne!(acc, 0);
                acc
            })
        });
    }
    group.finish();
}

fn html(c: &mut Criterion) {
    let pages = corpus::html(16 << 20);
    if pages.is_empty() {
        return;
    }
    let mut group = c.benchmark_group("html_to_text");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(corpus::bytes(&pages)));
    group.bench_function("usr-share-doc", |b| {
        b.iter(|| {
            let text: usize = pages
                .iter()
                .map(|p| neardup::text::html_to_text(p).len())
                .sum();
            // Manuals are mostly text: a twentieth of their bytes at the least.
            assert!(text as u64 * 20 > corpus::bytes(&pages), "{text}");
            text
        })
    });
    group.finish();
}

criterion_group!(benches, bench, html);
criterion_main!(benches);
