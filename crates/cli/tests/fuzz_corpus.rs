//! The fuzz targets' committed seed corpus (`fuzz/corpus/`), run through the same functions
//! and checks as `fuzz/fuzz_targets/*.rs` on every `cargo test`: CI checks the corpus, and
//! any crash input copied into it, without fuzzing. Fuzzing itself: `scripts/fuzz.sh`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::IgnoredAny;

use neardup_cli::input::{object_with, parse_json_line, RESERVED_KEYS};

/// The files of `fuzz/corpus/<target>`, by name, with their bytes.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let bytes =
                std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                bytes,
            )
        })
        .collect();
    files.sort();
    assert!(
        files.len() >= 20,
        "{}: only {} files",
        dir.display(),
        files.len()
    );
    files
}

#[test]
fn json_line_corpus_gives_records_or_rejects_with_reasons() {
    let (mut records, mut rejects) = (0, 0);
    for (name, bytes) in corpus("json_line") {
        match parse_json_line(&bytes) {
            Ok(record) => {
                records += 1;
                assert!(!record.id.is_empty(), "{name}: a record without an id");
                assert!(!record.fields.is_empty(), "{name}: a record without text");
                let object = record
                    .object
                    .as_deref()
                    .expect("a JSON record keeps its object");
                assert_eq!(object, &bytes[..], "{name}: the object is the line as read");
                if let Err(e) = serde_json::from_slice::<BTreeMap<String, IgnoredAny>>(object) {
                    panic!("{name}: a record from a line that is no JSON object ({e})");
                }
                if let Some(kept) = &record.kept_members {
                    let rewritten = object_with(object, kept);
                    let value: BTreeMap<String, IgnoredAny> = serde_json::from_slice(&rewritten)
                        .unwrap_or_else(|e| {
                            panic!(
                                "{name}: the object without reserved keys is not JSON ({e}): {}",
                                String::from_utf8_lossy(&rewritten)
                            )
                        });
                    for key in RESERVED_KEYS {
                        assert!(!value.contains_key(key), "{name}: {key} kept");
                    }
                }
            }
            Err(reject) => {
                rejects += 1;
                assert!(
                    !reject.reason.is_empty(),
                    "{name}: a reject without a reason"
                );
            }
        }
    }
    assert!(
        records > 0 && rejects > 0,
        "{records} records, {rejects} rejects"
    );
}

#[test]
fn html_to_text_corpus_gives_folded_text() {
    let mut texts = 0;
    for (name, bytes) in corpus("html_to_text") {
        let text = neardup::text::html_to_text(&String::from_utf8_lossy(&bytes));
        let chars: Vec<char> = text.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            if c.is_whitespace() {
                let folded = (c == ' ' || c == '\n')
                    && i > 0
                    && i + 1 < chars.len()
                    && !chars[i - 1].is_whitespace()
                    && !chars[i + 1].is_whitespace();
                assert!(
                    folded,
                    "{name}: white space not folded at char {i}: {text:?}"
                );
            }
        }
        texts += usize::from(!text.is_empty());
    }
    assert!(texts > 0, "no page gave any text");
}
