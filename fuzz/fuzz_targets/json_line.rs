//! One line of JSON Lines input, arbitrary bytes, read as `neardup dedup --jsonl` reads a
//! line with every option at its default: a record or a reject with its reason, never a
//! panic. A record comes only from a JSON object, and its object, cut down to its members
//! other than the keys the outputs set themselves, is still one.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use neardup_cli::input::{object_with, parse_json_line, RESERVED_KEYS};
use serde::de::IgnoredAny;

fuzz_target!(|bytes: &[u8]| {
    match parse_json_line(bytes) {
        Ok(record) => {
            assert!(!record.id.is_empty(), "a record without an id");
            assert!(!record.fields.is_empty(), "a record without text");
            let object = record
                .object
                .as_deref()
                .expect("a JSON record keeps its object");
            assert_eq!(object, bytes, "the object is the line as read");
            // kept.jsonl copies the object as read: the reader's own scanner accepts only
            // what a JSON parser does.
            if let Err(e) = serde_json::from_slice::<BTreeMap<String, IgnoredAny>>(object) {
                panic!("a record from a line that is no JSON object ({e})");
            }
            if let Some(kept) = &record.kept_members {
                let rewritten = object_with(object, kept);
                let value: BTreeMap<String, IgnoredAny> = serde_json::from_slice(&rewritten)
                    .unwrap_or_else(|e| {
                        panic!(
                            "the object without reserved keys is not JSON ({e}): {}",
                            String::from_utf8_lossy(&rewritten)
                        )
                    });
                for key in RESERVED_KEYS {
                    assert!(!value.contains_key(key), "{key} kept");
                }
            }
        }
        Err(reject) => assert!(!reject.reason.is_empty(), "a reject without a reason"),
    }
});
