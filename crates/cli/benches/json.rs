//! The JSON Lines reader's object scan against serde_json and the SIMD JSON crates
//! (sonic-rs, simd-json), on records of real text: each reads a record's line and returns
//! its string fields unescaped, as a record needs them. The scan stays hand-written only
//! while it is the fastest here (the figures are in `src/input/json.rs`).
//!
//! The records are Debian's copyright files and licences from `/usr/share/doc` and
//! `/usr/share/common-licenses`, one file a record, written by serde_json (so with the
//! escapes real JSON Lines has: newlines, quotes, tabs), with an id, a url and a
//! first-seen time beside the text.

use std::borrow::Cow;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use neardup_cli::input::json_string_fields;
use serde::Deserialize;

const FIELDS: [&str; 4] = ["id", "url", "first_seen", "text"];

/// Up to `max` JSON Lines records of real text, at least `min_bytes` long each.
fn records(max: usize, min_bytes: usize) -> Vec<String> {
    let mut paths: Vec<_> = std::fs::read_dir("/usr/share/doc")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("copyright"))
        .collect();
    paths.extend(
        std::fs::read_dir("/usr/share/common-licenses")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path()),
    );
    paths.sort();
    let mut lines = Vec::new();
    for path in paths {
        let Some(text) = read_text(&path).filter(|t| t.len() >= min_bytes) else {
            continue;
        };
        let n = lines.len();
        let record = serde_json::json!({
            "id": format!("doc-{n}"),
            "url": format!("https://example.org/{}", path.display()),
            "first_seen": "2026-12-05T10:00:00Z",
            "lang": "en",
            "text": text,
        });
        lines.push(record.to_string());
        if lines.len() == max {
            break;
        }
    }
    lines
}

fn read_text(path: &Path) -> Option<String> {
    String::from_utf8(std::fs::read(path).ok()?).ok()
}

/// What a typed reader of the same record deserialises.
#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    url: Option<Cow<'a, str>>,
    #[serde(borrow)]
    first_seen: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

impl Typed<'_> {
    fn fields(self) -> Vec<Option<String>> {
        let own = |s: Cow<'_, str>| Some(s.into_owned());
        vec![
            own(self.id),
            self.url.and_then(own),
            self.first_seen.and_then(own),
            own(self.text),
        ]
    }
}

/// The fields by sonic-rs's lazy object iterator: keys and raw values, as the scan reads
/// them, then the named strings unescaped.
fn sonic_lazy(line: &str) -> Vec<Option<String>> {
    let mut out = vec![None; FIELDS.len()];
    for member in sonic_rs::to_object_iter(line) {
        let (key, value) = member.expect("valid JSON");
        if let Some(i) = FIELDS.iter().position(|f| *f == key) {
            out[i] = Some(sonic_rs::from_str::<String>(value.as_raw_str()).expect("a string"));
        }
    }
    out
}

/// The fields by sonic-rs's `get_many`: one skip over the line for all the named keys,
/// then the strings unescaped.
fn sonic_get_many(line: &str, tree: &sonic_rs::PointerTree) -> Vec<Option<String>> {
    use sonic_rs::JsonValueTrait;
    sonic_rs::get_many(line, tree)
        .expect("valid JSON")
        .into_iter()
        .map(|v| v.and_then(|v| v.as_str().map(str::to_owned)))
        .collect()
}

/// The members as the reader keeps them (keys, and raw values for the fields it reads),
/// by sonic-rs's serde deserializer with field names known only at run time: the drop-in
/// for the scan.
fn sonic_members(line: &str) -> Vec<Option<String>> {
    use serde::de::{Deserializer as _, MapAccess, Visitor};
    struct Object;
    impl<'de> Visitor<'de> for Object {
        type Value = Vec<(Cow<'de, str>, sonic_rs::LazyValue<'de>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut members = Vec::new();
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                members.push((key, map.next_value()?));
            }
            Ok(members)
        }
    }
    let mut de = sonic_rs::Deserializer::from_str(line);
    let members = de.deserialize_map(Object).expect("valid JSON");
    FIELDS
        .iter()
        .map(|f| {
            let (_, v) = members.iter().find(|(k, _)| k == f)?;
            sonic_rs::from_str::<String>(v.as_raw_str()).ok()
        })
        .collect()
}

/// The fields by simd-json's borrowed value (it parses in place, so the line is copied).
fn simd_value(line: &str) -> Vec<Option<String>> {
    use simd_json::prelude::*;
    let mut bytes = line.as_bytes().to_vec();
    let value = simd_json::to_borrowed_value(&mut bytes).expect("valid JSON");
    FIELDS
        .iter()
        .map(|f| value.get_str(*f).map(str::to_owned))
        .collect()
}

fn bench(c: &mut Criterion) {
    let lines = records(2000, 256);
    assert!(
        lines.len() >= 50,
        "the bench needs the copyright files of /usr/share/doc"
    );
    let bytes: usize = lines.iter().map(String::len).sum();
    let mut tree = sonic_rs::PointerTree::new();
    for f in FIELDS {
        tree.add_path([f]);
    }
    // Every reader gives the same fields for every record, before any is timed.
    for line in &lines {
        let scan = json_string_fields(line, &FIELDS, false).expect("a record");
        assert_eq!(json_string_fields(line, &FIELDS, true).as_ref(), Ok(&scan));
        assert_eq!(sonic_lazy(line), scan);
        assert_eq!(simd_value(line), scan);
        assert_eq!(sonic_members(line), scan);
        assert_eq!(sonic_get_many(line, &tree), scan);
        let typed: Typed = sonic_rs::from_str(line).expect("a record");
        assert_eq!(typed.fields(), scan);
        let typed: Typed = serde_json::from_str(line).expect("a record");
        assert_eq!(typed.fields(), scan);
    }

    let mut group = c.benchmark_group("jsonl_record");
    group.throughput(Throughput::Bytes(bytes as u64));
    let each =
        |f: &dyn Fn(&str) -> Vec<Option<String>>| lines.iter().map(|l| f(l).len()).sum::<usize>();
    group.bench_function("neardup_scan", |b| {
        b.iter(|| each(&|l| json_string_fields(l, &FIELDS, false).expect("a record")))
    });
    group.bench_function("serde_json_members", |b| {
        b.iter(|| each(&|l| json_string_fields(l, &FIELDS, true).expect("a record")))
    });
    group.bench_function("serde_json_typed", |b| {
        b.iter(|| each(&|l| serde_json::from_str::<Typed>(l).expect("a record").fields()))
    });
    group.bench_function("sonic_rs_lazy", |b| b.iter(|| each(&sonic_lazy)));
    group.bench_function("sonic_rs_get_many", |b| {
        b.iter(|| each(&|l| sonic_get_many(l, &tree)))
    });
    group.bench_function("sonic_rs_members", |b| b.iter(|| each(&sonic_members)));
    group.bench_function("sonic_rs_typed", |b| {
        b.iter(|| each(&|l| sonic_rs::from_str::<Typed>(l).expect("a record").fields()))
    });
    group.bench_function("simd_json_value", |b| b.iter(|| each(&simd_value)));
    group.finish();
}

criterion_group! {
    name = benches;
    // No plots: the comparison plot needs a font the machines here may lack.
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
