//! Measures what short records (under 50 words) should get beyond the exact tier: exact
//! normalised comparison only, or character n-gram SimHash with Jaccard verification.
//!
//! Real short texts: fortune cookies (Debian `fortunes`, English) and Tang/Song poems
//! (`fortunes-zh`, Chinese), installed by `scripts/bench_short_text.sh`. Each text gets light
//! variants (a changed, inserted or deleted word or character, changed punctuation and case)
//! that a reader calls the same text; distinct texts are distinct. For every (k, J) the
//! pairwise precision and recall of "same cluster" against that truth are printed, next to the
//! exact tier alone.
//!
//! `cargo run --release -p neardup --example short_text_eval`

use std::collections::{BTreeMap, HashMap};

#[path = "../benches/seeded.rs"]
mod seeded;

use neardup::pipeline::{Rule, ShortText};
use neardup::{Decision, Deduper, MemoryStore, Record, Timestamp};
use seeded::XorShift as Rng;

fn fortunes(file: &str, max_words: usize) -> Vec<String> {
    let Ok(raw) = std::fs::read(file) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&raw);
    // Strip ANSI colour sequences used by the Chinese files.
    let mut clean = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            clean.push(c);
        }
    }
    clean
        .split("\n%\n")
        .map(|s| s.trim().to_owned())
        .filter(|s| {
            let words = neardup::text::tokens(s, neardup::text::TokenRule::Unicode).len();
            (8..max_words).contains(&words)
        })
        .collect()
}

/// A light edit a reader would still call the same text.
fn variant(text: &str, rng: &mut Rng, cjk: bool) -> String {
    let kind = rng.below(4);
    if cjk {
        let mut chars: Vec<char> = text.chars().collect();
        let pos: Vec<usize> = (0..chars.len())
            .filter(|&i| !chars[i].is_whitespace() && !chars[i].is_ascii_punctuation())
            .collect();
        let i = pos[rng.below(pos.len())];
        match kind {
            0 => chars[i] = '之',
            1 => chars.insert(i, '也'),
            2 => {
                chars.remove(i);
            }
            _ => return text.replace('，', ",").replace('。', "."),
        }
        return chars.into_iter().collect();
    }
    let mut words: Vec<String> = text.split(' ').map(str::to_owned).collect();
    let i = rng.below(words.len());
    match kind {
        0 => words[i] = "really".into(),
        1 => words.insert(i, "indeed".into()),
        2 => {
            if words.len() > 3 {
                words.remove(i);
            }
        }
        _ => return text.to_uppercase().replace(['.', ','], " "),
    }
    words.join(" ")
}

fn main() {
    let dir = "/usr/share/games/fortunes";
    let mut english = Vec::new();
    for f in [
        "fortunes",
        "literature",
        "wisdom",
        "people",
        "science",
        "work",
        "humorists",
    ] {
        english.extend(fortunes(&format!("{dir}/{f}"), 50));
    }
    let mut chinese = fortunes(&format!("{dir}/tang300"), 50);
    chinese.extend(fortunes(&format!("{dir}/song100"), 50));
    english.truncate(1500);
    if english.is_empty() {
        eprintln!("no fortunes found: run scripts/bench_short_text.sh (it installs fortunes, fortunes-zh)");
        std::process::exit(2);
    }
    for (name, texts, cjk) in [
        ("english fortunes", &english, false),
        ("chinese poems", &chinese, true),
    ] {
        if texts.is_empty() {
            continue;
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut records = Vec::new();
        let mut group = HashMap::new();
        for (g, t) in texts.iter().enumerate() {
            records.push(Record::new(format!("{g}"), t.clone()));
            group.insert(format!("{g}"), g);
            for v in 0..2 {
                let id = format!("{g}v{v}");
                records.push(Record::new(id.clone(), variant(t, &mut rng, cjk)));
                group.insert(id, g);
            }
        }
        let truth_pairs: u64 = texts.len() as u64 * 3;
        println!(
            "== {name}: {} texts, {} records, {truth_pairs} duplicate pairs ==",
            texts.len(),
            records.len()
        );
        println!(
            "{:<34} {:>9} {:>9} {:>9}",
            "policy", "precision", "recall", "f1"
        );
        let mut policies = vec![("exact tier only".to_owned(), ShortText::ExactOnly)];
        for width in [3usize] {
            for k in [12u32, 16, 20] {
                for j in [0.6, 0.7, 0.8, 0.9] {
                    policies.push((
                        format!("chars w{width} k{k} J>={j}"),
                        ShortText::CharNgrams {
                            width,
                            max_distance: k,
                            min_jaccard: j,
                        },
                    ));
                }
            }
        }
        for (label, short_text) in policies {
            let rule = Rule {
                short_text,
                ..Rule::default()
            };
            let mut d = Deduper::builder()
                .rule(rule)
                .open(MemoryStore::new())
                .expect("valid rule");
            let out = d.process(&records, Timestamp(0)).expect("in-memory");
            assert!(out
                .iter()
                .all(|o| !matches!(o.decision, Decision::Rejected { .. })));
            let mut clusters: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for r in &records {
                let c = d.cluster_of(&r.id).expect("stored");
                clusters.entry(c.survivor).or_default().push(group[&r.id]);
            }
            let (mut tp, mut predicted) = (0u64, 0u64);
            for members in clusters.values() {
                for i in 0..members.len() {
                    for j in (i + 1)..members.len() {
                        predicted += 1;
                        tp += u64::from(members[i] == members[j]);
                    }
                }
            }
            let p = if predicted == 0 {
                1.0
            } else {
                tp as f64 / predicted as f64
            };
            let r = tp as f64 / truth_pairs as f64;
            let f1 = if p + r == 0.0 {
                0.0
            } else {
                2.0 * p * r / (p + r)
            };
            println!("{label:<34} {p:>9.4} {r:>9.4} {f1:>9.4}");
        }
        println!();
    }
}
