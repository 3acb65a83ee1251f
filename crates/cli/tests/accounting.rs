//! The README's promise, as a property: every input record of `neardup dedup` ends up in
//! exactly one of kept.jsonl, merges.jsonl or rejects.jsonl, whatever the input holds (valid
//! records, repeated ids, malformed JSON, invalid UTF-8, fields of the wrong type, empty
//! and huge fields, NUL bytes, compressed and truncated streams), and nothing panics.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::process::Command;

use proptest::prelude::*;
use serde_json::{json, Value};

use common::{lines as read_lines, report};

/// One line of generated input.
#[derive(Debug, Clone)]
enum Line {
    /// A record with an id of its own (or, `repeat`, the id of an earlier record) and a
    /// text from a small pool, so exact and near duplicates happen.
    Valid {
        repeat: Option<usize>,
        text: usize,
        edit: bool,
        short: bool,
    },
    /// Not JSON, or JSON that is not an object.
    Malformed(usize),
    /// Bytes that are not UTF-8 inside a JSON string.
    InvalidUtf8,
    /// A field of the wrong type.
    WrongType(usize),
    /// A text field present but empty.
    EmptyText,
    /// No text field at all.
    MissingText,
    /// A text of hundreds of kilobytes.
    Huge,
    /// A NUL byte, escaped or raw, in the text.
    Nul(bool),
    /// Nothing: not a record.
    Blank,
}

/// How the input file is stored.
#[derive(Debug, Clone, Copy)]
enum Storage {
    Plain,
    Gzip,
    Zstd,
    /// Gzip cut short at a share (per mille) of its bytes.
    TruncatedGzip(u32),
}

const WORDS: [&str; 24] = [
    "storm", "closes", "coastal", "road", "council", "budget", "school", "river", "bridge",
    "police", "report", "market", "prices", "harbour", "ferry", "weather", "train", "delay",
    "museum", "opens", "festival", "library", "repairs", "tonight",
];

fn prose(seed: usize, words: usize) -> String {
    (0..words)
        .map(|i| WORDS[(i * 7 + seed * 13 + i * i * seed) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn line_strategy() -> impl Strategy<Value = Line> {
    prop_oneof![
        6 => (proptest::option::weighted(0.2, 0usize..64), 0usize..6, any::<bool>(), proptest::bool::weighted(0.2))
            .prop_map(|(repeat, text, edit, short)| Line::Valid { repeat, text, edit, short }),
        1 => (0usize..6).prop_map(Line::Malformed),
        1 => Just(Line::InvalidUtf8),
        1 => (0usize..4).prop_map(Line::WrongType),
        1 => Just(Line::EmptyText),
        1 => Just(Line::MissingText),
        1 => Just(Line::Huge),
        1 => any::<bool>().prop_map(Line::Nul),
        1 => Just(Line::Blank),
    ]
}

fn storage_strategy() -> impl Strategy<Value = Storage> {
    prop_oneof![
        4 => Just(Storage::Plain),
        1 => Just(Storage::Gzip),
        1 => Just(Storage::Zstd),
        1 => (100u32..950).prop_map(Storage::TruncatedGzip),
    ]
}

/// The bytes of each line (without its newline), and the id each record line carries when
/// it parses: lines are numbered from 1, as rejects.jsonl numbers them.
fn render(lines: &[Line]) -> Vec<Vec<u8>> {
    let mut ids: Vec<String> = Vec::new();
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let own = format!("r{}", i + 1);
            let bytes = match line {
                Line::Valid {
                    repeat,
                    text,
                    edit,
                    short,
                } => {
                    let id = match repeat {
                        Some(k) if !ids.is_empty() => ids[k % ids.len()].clone(),
                        _ => own.clone(),
                    };
                    ids.push(id.clone());
                    let mut body = prose(*text, if *short { 12 } else { 150 });
                    if *edit {
                        body = body.replacen("storm", "gale", 1);
                    }
                    json!({"id": id, "url": format!("https://h{}.example/{i}", text % 3), "body_text": body})
                        .to_string()
                        .into_bytes()
                }
                Line::Malformed(k) => match k {
                    0 => format!("{{\"id\": \"{own}\", \"body_text\": \"unterminated"),
                    1 => "[1, 2, 3]".to_owned(),
                    2 => "\"just a string\"".to_owned(),
                    3 => format!("{{\"id\": \"{own}\" \"body_text\": \"x\"}}"),
                    4 => "{".to_owned(),
                    _ => format!("{{\"id\": \"{own}\", \"body_text\": \"ok\"}} trailing"),
                }
                .into_bytes(),
                Line::InvalidUtf8 => {
                    let mut b = format!("{{\"id\": \"{own}\", \"body_text\": \"caf").into_bytes();
                    b.extend_from_slice(&[0xff, 0xfe, 0xc3]);
                    b.extend_from_slice(b" au lait\"}");
                    b
                }
                Line::WrongType(k) => match k {
                    0 => json!({"id": {"nested": own}, "body_text": prose(1, 80)}),
                    1 => json!({"id": own, "body_text": 42}),
                    2 => json!({"id": own, "title": ["a", "list"], "body_text": prose(2, 80)}),
                    _ => json!({"id": own, "body_text": prose(3, 80), "first_seen": 17}),
                }
                .to_string()
                .into_bytes(),
                Line::EmptyText => json!({"id": own, "body_text": ""}).to_string().into_bytes(),
                Line::MissingText => json!({"id": own, "url": "https://x.example/"})
                    .to_string()
                    .into_bytes(),
                Line::Huge => json!({"id": own, "body_text": prose(i, 60_000)})
                    .to_string()
                    .into_bytes(),
                Line::Nul(raw) => {
                    let text = format!("{} \u{0} {}", prose(4, 70), prose(5, 70));
                    let line = json!({"id": own, "body_text": text}).to_string();
                    if *raw {
                        line.replace("\\u0000", "\0").into_bytes()
                    } else {
                        line.into_bytes()
                    }
                }
                Line::Blank => Vec::new(),
            };
            bytes
        })
        .collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// What a reader of the truncated gzip stream gets before the error (or the end).
fn gunzip_prefix(data: &[u8]) -> Vec<u8> {
    let mut d = flate2::read::MultiGzDecoder::new(data);
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match d.read(&mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Runs dedup on the lines stored as `storage` and checks the accounting.
fn check(lines: &[Line], storage: Storage) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(lines);
    let mut data = Vec::new();
    for l in &rendered {
        data.extend_from_slice(l);
        data.push(b'\n');
    }
    // The line numbers that must be accounted for, and the bytes the reader sees.
    let (name, bytes, seen) = match storage {
        Storage::Plain => ("in.jsonl", data.clone(), data.clone()),
        Storage::Gzip => ("in.jsonl.gz", gzip(&data), data.clone()),
        Storage::Zstd => (
            "in.jsonl.zst",
            zstd::encode_all(&data[..], 3).unwrap(),
            data.clone(),
        ),
        Storage::TruncatedGzip(share) => {
            let z = gzip(&data);
            let cut = z[..z.len() * share as usize / 1000].to_vec();
            let seen = gunzip_prefix(&cut);
            ("in.jsonl.gz", cut, seen)
        }
    };
    std::fs::write(dir.path().join(name), &bytes).unwrap();
    let complete = seen.iter().filter(|&&b| b == b'\n').count();
    let must: BTreeSet<u64> = rendered[..complete.min(rendered.len())]
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .map(|(i, _)| i as u64 + 1)
        .collect();

    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["dedup", name, "--out", "out", "--store", "s.db", "--quiet"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    prop_assert!(
        code == Some(0) || code == Some(2),
        "exit {code:?}: {stderr}"
    );
    prop_assert!(!stderr.contains("panicked"), "{stderr}");
    let o = dir.path().join("out");
    let report = report(&o);
    let kept = read_lines(&o.join("kept.jsonl"));
    let merges = read_lines(&o.join("merges.jsonl"));
    let rejects = read_lines(&o.join("rejects.jsonl"));
    prop_assert_eq!(&report["accounting_balanced"], &json!(true), "{}", report);
    let input = report["input_records"].as_u64().unwrap();
    prop_assert_eq!(
        input,
        (kept.len() + merges.len() + rejects.len()) as u64,
        "{}",
        report
    );
    prop_assert_eq!(code == Some(2), !rejects.is_empty(), "{}", stderr);
    // Every reject names its file and line, and a reason.
    for r in &rejects {
        prop_assert_eq!(&r["file"], &json!(name));
        prop_assert!(r["line"].as_u64().is_some(), "{}", r);
        prop_assert!(!r["reason"].as_str().unwrap_or("").is_empty(), "{}", r);
    }
    // Line by line: each record line is in exactly one output.
    let first_line_of: HashMap<String, u64> = {
        let mut m = HashMap::new();
        for (i, l) in rendered.iter().enumerate() {
            if let Ok(v) = serde_json::from_slice::<Value>(l) {
                if let Some(id) = v["id"].as_str() {
                    m.entry(id.to_owned()).or_insert(i as u64 + 1);
                }
            }
        }
        m
    };
    let mut accounted: Vec<u64> = rejects
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    for k in &kept {
        let id = k["id"].as_str().unwrap();
        accounted.push(first_line_of[id]);
    }
    for m in &merges {
        let id = m["merged"].as_str().unwrap();
        accounted.push(first_line_of[id]);
    }
    let distinct: BTreeSet<u64> = accounted.iter().copied().collect();
    prop_assert_eq!(distinct.len(), accounted.len(), "a line is in two outputs");
    prop_assert!(
        must.is_subset(&distinct),
        "lines in no output: {:?}",
        must.difference(&distinct).collect::<Vec<_>>()
    );
    if !matches!(storage, Storage::TruncatedGzip(_)) {
        prop_assert_eq!(&must, &distinct);
        prop_assert_eq!(input, must.len() as u64);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 40,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn prop_every_input_record_is_kept_merged_or_rejected_exactly_once(
        lines in proptest::collection::vec(line_strategy(), 1..40),
        storage in storage_strategy(),
    ) {
        check(&lines, storage)?;
    }
}
