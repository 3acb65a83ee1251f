//! Near-duplicate detection on Chinese text with synthetic edits, per edit size, for three
//! tokenisations: characters (the default: 4-character shingles), jieba words, and plain
//! whitespace tokens (the baseline a whitespace tokenizer gives Chinese).
//!
//! Real Chinese text: the zh_CN and zh_TW man pages of this machine, rendered with `man -l`.
//! Positives: each page and an edited copy (characters replaced, inserted or deleted, or
//! sentences reordered, at 1%..20% of characters). Negatives: pairs of different pages.
//! Detection uses the default rule: within 12 bits and shingle Jaccard >= 0.8.
//!
//! `cargo run --release -p neardup --example cjk_eval`

#[path = "../benches/corpus.rs"]
mod corpus;
#[path = "../benches/seeded.rs"]
mod seeded;

use neardup::text::TokenRule;
use neardup::verify::jaccard;
use neardup::SimHasher;
use seeded::XorShift as Rng;

const FILLER: &[char] = &['的', '是', '在', '了', '和', '有', '这', '个', '们', '中'];

fn edit(text: &str, kind: usize, rate: f64, rng: &mut Rng) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let han: Vec<usize> = (0..chars.len())
        .filter(|&i| ('\u{4e00}'..='\u{9fff}').contains(&chars[i]))
        .collect();
    let n = ((han.len() as f64 * rate).round() as usize).max(1);
    match kind {
        0 => {
            for _ in 0..n {
                let i = han[rng.below(han.len())];
                chars[i] = FILLER[rng.below(FILLER.len())];
            }
        }
        1 => {
            for _ in 0..n {
                let i = rng.below(chars.len());
                chars.insert(i, FILLER[rng.below(FILLER.len())]);
            }
        }
        2 => {
            let mut gone: Vec<usize> = (0..n).map(|_| han[rng.below(han.len())]).collect();
            gone.sort_unstable();
            gone.dedup();
            for i in gone.into_iter().rev() {
                chars.remove(i);
            }
        }
        _ => {
            // Reorder sentences: swap pairs of sentences, about `rate` of the text moved.
            let s: String = chars.iter().collect();
            let mut sentences: Vec<&str> = s.split_inclusive(['。', '\n']).collect();
            let swaps = ((sentences.len() as f64 * rate).ceil() as usize).max(1);
            for _ in 0..swaps {
                let (a, b) = (rng.below(sentences.len()), rng.below(sentences.len()));
                sentences.swap(a, b);
            }
            return sentences.concat();
        }
    }
    chars.into_iter().collect()
}

/// Fingerprint and shingle set under a token rule, or under plain whitespace tokens.
fn features(hasher: Option<&SimHasher>, text: &str) -> (u64, Vec<u64>) {
    match hasher {
        Some(h) => (
            h.fingerprint(text).map_or(0, |f| f.as_u64()),
            h.shingle_set(text),
        ),
        None => {
            let tokens: Vec<&str> = text.split_whitespace().collect();
            let shingles: Vec<String> = if tokens.len() < 4 {
                vec![tokens.join(" ")]
            } else {
                tokens.windows(4).map(|w| w.join(" ")).collect()
            };
            let bag = SimHasher::builder()
                .shingle_width(1)
                .build()
                .expect("valid");
            let mut counts = std::collections::HashMap::new();
            for s in &shingles {
                *counts.entry(s.as_str()).or_insert(0i64) += 1;
            }
            let fp = bag
                .fingerprint_bag(counts.iter().map(|(k, v)| (*k, *v)))
                .map_or(0, |f| f.as_u64());
            let mut set: Vec<u64> = shingles
                .iter()
                .map(|s| xxhash_rust::xxh3::xxh3_64(s.as_bytes()))
                .collect();
            set.sort_unstable();
            set.dedup();
            (fp, set)
        }
    }
}

fn main() {
    let mut docs = corpus::man_pages("zh_CN", 200);
    docs.extend(corpus::man_pages("zh_TW", 200));
    docs.retain(|d| {
        d.chars()
            .filter(|c| ('\u{4e00}'..='\u{9fff}').contains(c))
            .count()
            > 150
    });
    if docs.len() < 10 {
        eprintln!(
            "too few Chinese man pages rendered ({}); is man-db installed?",
            docs.len()
        );
        std::process::exit(2);
    }
    let chars = SimHasher::builder().build().expect("valid");
    let jieba = SimHasher::builder()
        .tokens(TokenRule::UnicodeJieba)
        .build()
        .expect("valid");
    let tokenisations: [(&str, Option<&SimHasher>); 3] = [
        ("characters (default)", Some(&chars)),
        ("jieba words", Some(&jieba)),
        ("whitespace", None),
    ];
    let (k, j) = (12u32, 0.8);
    println!("== Chinese near-duplicates: {} man pages; detected = within {k} bits and Jaccard >= {j} ==", docs.len());
    let kinds = ["replace", "insert", "delete", "reorder"];
    for (name, h) in tokenisations {
        let base: Vec<(u64, Vec<u64>)> = docs.iter().map(|d| features(h, d)).collect();
        // Negatives: every pair of different pages.
        let (mut fp_pairs, mut neg) = (0u64, 0u64);
        for a in 0..base.len() {
            for b in (a + 1)..base.len() {
                neg += 1;
                let d = (base[a].0 ^ base[b].0).count_ones();
                if d <= k && jaccard(&base[a].1, &base[b].1) >= j {
                    fp_pairs += 1;
                }
            }
        }
        println!("\n{name}: false positives among {neg} pairs of different pages: {fp_pairs}");
        println!(
            "{:<10} {:>7} {:>9} {:>9} {:>12}",
            "edit", "size", "recall", "precision", "median bits"
        );
        for (kind_i, kind) in kinds.iter().enumerate() {
            for rate in [0.01, 0.02, 0.05, 0.10, 0.20] {
                let mut rng =
                    Rng(0x2545_f491_4f6c_dd1d ^ (kind_i as u64) << 32 ^ (rate * 1000.0) as u64);
                let (mut tp, mut dists) = (0u64, Vec::new());
                for (i, d) in docs.iter().enumerate() {
                    let e = features(h, &edit(d, kind_i, rate, &mut rng));
                    let dist = (base[i].0 ^ e.0).count_ones();
                    dists.push(dist);
                    if dist <= k && jaccard(&base[i].1, &e.1) >= j {
                        tp += 1;
                    }
                }
                dists.sort_unstable();
                let recall = tp as f64 / docs.len() as f64;
                let precision = if tp + fp_pairs == 0 {
                    1.0
                } else {
                    tp as f64 / (tp + fp_pairs) as f64
                };
                println!(
                    "{kind:<10} {:>6.0}% {recall:>9.3} {precision:>9.3} {:>12}",
                    rate * 100.0,
                    dists[dists.len() / 2]
                );
            }
        }
    }
}
