//! Golden fingerprints: the `blake2b` profile against seed 000's Python reference, and the
//! default profile against its own pinned values (a change there means bumping
//! `FORMAT_VERSION`). `NEARDUP_BLESS=1` rewrites the default-profile goldens.

use std::path::{Path, PathBuf};

use neardup::{HashAlgo, SimHasher};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// Yields (file, line or None for the whole file, text) in the golden files' order.
fn fixture_texts() -> Vec<(String, Option<usize>, String)> {
    let mut names: Vec<String> = std::fs::read_dir(data("text"))
        .expect("fixture dir")
        .map(|e| {
            e.expect("entry")
                .file_name()
                .into_string()
                .expect("utf-8 name")
        })
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let text = std::fs::read_to_string(data("text").join(&name)).expect("fixture");
        out.push((name.clone(), None, text.clone()));
        for (i, line) in text.split('\n').enumerate() {
            out.push((name.clone(), Some(i + 1), line.to_owned()));
        }
    }
    out
}

fn key(file: &str, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{file}\t{l}"),
        None => format!("{file}\t*"),
    }
}

#[test]
fn blake2b_profile_reproduces_seed_000_python_bit_for_bit() {
    let golden = std::fs::read_to_string(data("golden/blake2b.tsv")).expect("golden file");
    let want: std::collections::HashMap<String, String> = golden
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.rsplit_once('\t').expect("three columns");
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let hasher = SimHasher::builder()
        .hash(HashAlgo::Blake2b)
        .build()
        .unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for (file, line, text) in fixture_texts() {
        let k = key(&file, line);
        match (hasher.fingerprint(&text), want.get(&k)) {
            (Ok(fp), Some(w)) => {
                checked += 1;
                if &fp.to_hex() != w {
                    failures.push(format!("{k}: got {fp}, python {w}: {text:?}"));
                }
            }
            (Err(_), None) => {} // no tokens: Python returns 0 and the golden skips it
            (Ok(fp), None) => failures.push(format!("{k}: got {fp}, python has no tokens")),
            (Err(e), Some(w)) => failures.push(format!("{k}: error {e}, python {w}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 300, "only {checked} golden values checked");
}

#[test]
fn default_profile_fingerprints_are_pinned() {
    let hasher = SimHasher::builder().build().unwrap();
    let mut got = String::from("# default profile goldens; NEARDUP_BLESS=1 rewrites them\n");
    for (file, line, text) in fixture_texts() {
        if let Ok(fp) = hasher.fingerprint(&text) {
            got.push_str(&format!("{}\t{fp}\n", key(&file, line)));
        }
    }
    let path = data("golden/default.tsv");
    if std::env::var_os("NEARDUP_BLESS").is_some() {
        std::fs::write(&path, &got).expect("bless");
    }
    let want = std::fs::read_to_string(&path)
        .expect("golden/default.tsv missing: run with NEARDUP_BLESS=1 to create it");
    if got != want {
        let diff: Vec<String> = got
            .lines()
            .zip(want.lines())
            .filter(|(g, w)| g != w)
            .take(10)
            .map(|(g, w)| format!("got  {g}\nwant {w}"))
            .collect();
        panic!(
            "default-profile fingerprints changed: bump FORMAT_VERSION and re-bless\n{}",
            diff.join("\n")
        );
    }
}
