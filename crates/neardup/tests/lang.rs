//! Every language and every length: Chinese, Japanese and mixed-language runs on real text
//! (translated man pages of this machine, shipped as small fixtures).

use std::path::Path;

use neardup::{Decision, Deduper, MemoryStore, Record, SimHasher, Timestamp};

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(rel),
    )
    .expect("fixture")
}

/// Replaces every `step`-th Han character (up to `n` of them) with another ideograph.
fn edit_han(text: &str, n: usize, step: usize) -> String {
    let mut seen = 0;
    let mut changed = 0;
    text.chars()
        .map(|c| {
            if ('\u{4e00}'..='\u{9fff}').contains(&c) {
                seen += 1;
                if seen % step == 0 && changed < n {
                    changed += 1;
                    return if c == '之' { '乎' } else { '之' };
                }
            }
            c
        })
        .collect()
}

#[test]
fn chinese_article_with_a_few_characters_changed_lands_within_k() {
    let h = SimHasher::builder().build().unwrap();
    let a = fixture("lang/zh_CN_mandb.8.txt");
    let b = fixture("lang/zh_CN_manpath.5.txt");
    let edited = edit_han(&a, 5, 40);
    assert_ne!(a, edited);
    let (fa, fe, fb) = (
        h.fingerprint(&a).unwrap(),
        h.fingerprint(&edited).unwrap(),
        h.fingerprint(&b).unwrap(),
    );
    let near = fa.distance(&fe).unwrap();
    let far = fa.distance(&fb).unwrap();
    assert!(near <= 12, "edited Chinese article {near} bits away");
    assert!(far > 12, "unrelated Chinese articles only {far} bits apart");
}

#[test]
fn mixed_language_run_merges_each_edit_with_its_own_original_only() {
    let sources = [
        ("en", fixture("text/man_en.txt"), "eng"),
        ("zh", fixture("lang/zh_CN_mandb.8.txt"), "cmn"),
        ("zh2", fixture("lang/zh_CN_manpath.5.txt"), "cmn"),
        ("ja", fixture("text/man_ja.txt"), "jpn"),
        ("ru", fixture("lang/ru_xxd.1.txt"), "rus"),
        ("de", fixture("text/man_de.txt"), "deu"),
    ];
    let hasher = SimHasher::builder().detect_language(true).build().unwrap();
    let mut d = Deduper::builder()
        .hasher(hasher)
        .open(MemoryStore::new())
        .unwrap();
    let mut records = Vec::new();
    for (id, text, _) in &sources {
        records.push(Record::new(*id, text.clone()));
    }
    for (id, text, _) in &sources {
        // A light edit in any script: one character in every kilobyte or so dropped.
        let edited: String = text
            .char_indices()
            .filter(|(i, _)| i % 997 != 7)
            .map(|(_, c)| c)
            .collect();
        records.push(Record::new(format!("{id}-edit"), edited));
    }
    let out = d.process(&records, Timestamp(0)).unwrap();
    for (i, (id, _, lang)) in sources.iter().enumerate() {
        assert!(
            matches!(out[i].decision, Decision::Kept { .. }),
            "{id}: {:?}",
            out[i].decision
        );
        assert_eq!(out[i].language.as_deref(), Some(*lang), "{id}");
        let edit = &out[sources.len() + i];
        match &edit.decision {
            Decision::Merged { survivor, .. } => assert_eq!(survivor, id, "{id}-edit"),
            other => panic!("{id}-edit: {other:?}"),
        }
    }
    assert_eq!(d.stats().clusters, sources.len());
}
