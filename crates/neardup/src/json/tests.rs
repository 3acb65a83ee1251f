//! Tests of the JSON object reader: the scan against serde_json, escapes, and the members
//! kept records keep.

use std::borrow::Cow;

use proptest::prelude::*;

use super::*;

/// `s` as a JSON string literal with every character a `\u` escape (surrogate pairs
/// beyond the basic plane).
fn all_escaped(s: &str) -> String {
    let mut out = String::from("\"");
    for unit in s.encode_utf16() {
        out.push_str(&format!("\\u{unit:04X}"));
    }
    out.push('"');
    out
}

proptest! {
    #[test]
    fn unescape_reads_what_serde_json_writes(s in any::<String>()) {
        let raw = serde_json::to_string(&s).unwrap();
        prop_assert_eq!(unescape(&raw).unwrap(), s.as_str());
        let escaped = all_escaped(&s);
        prop_assert_eq!(unescape(&escaped).unwrap(), s.as_str());
    }
}

/// Pieces of JSON lines, valid and not: members are joined from them at random.
fn json_piece() -> impl Strategy<Value = String> {
    // Tokens, good and bad, each as likely as a number or a string.
    const TOKENS: [&str; 14] = [
        "\"id\"",
        "\"body_text\"",
        "\"k\\u0041y\"",
        ":",
        ",",
        " ",
        "\n\t\r",
        "{",
        "}",
        "[1, \"a\"]",
        "true",
        "fals",
        "null",
        "nullx",
    ];
    // String contents: escapes good and bad, control characters, quotes, non-ASCII.
    const CONTENTS: [&str; 14] = [
        "a b",
        "\\n",
        "\\\"",
        "\\\\",
        "\\u00e9",
        "\\ud83d\\ude00",
        "\\ud800",
        "\\u12g4",
        "\\x",
        "\\",
        "\u{1}",
        "\t",
        "é😀",
        "\u{7f}",
    ];
    prop_oneof![
        14 => proptest::sample::select(&TOKENS[..]).prop_map(str::to_owned),
        1 => "-?(0|[1-9][0-9]{0,3}|0[0-9])(\\.[0-9]{0,2})?([eE][+-]?[0-9]{0,2})?",
        1 => proptest::collection::vec(proptest::sample::select(&CONTENTS[..]), 0..6)
            .prop_map(|parts| format!("\"{}\"", parts.concat())),
    ]
}

/// Mostly well-formed flat objects, with a piece of anything swapped in now and then.
fn json_line() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec((json_piece(), json_piece()), 0..5),
        proptest::collection::vec(json_piece(), 0..3),
        any::<u8>(),
    )
        .prop_map(|(members, noise, how)| {
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| {
                    let key = if k.starts_with('"') {
                        k.clone()
                    } else {
                        "\"x\"".into()
                    };
                    format!("{key}:{v}")
                })
                .collect();
            let mut line = format!(" {{{}}} ", body.join(","));
            match how % 4 {
                0 => {
                    let mut at = line.len() / 2;
                    while !line.is_char_boundary(at) {
                        at -= 1;
                    }
                    line.insert_str(at, &noise.concat());
                }
                1 => line.push_str(&noise.concat()),
                _ => {}
            }
            line
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn the_flat_object_scan_reads_what_the_parser_reads(line in json_line()) {
        let parsed = Members::parse_with_serde(&line);
        match Members::scan(&line) {
            Some(scanned) => {
                let parsed = parsed.map_err(|e| TestCaseError::fail(format!("scan read {line:?}, parser: {e}")))?;
                prop_assert_eq!(scanned.0, parsed.0, "{}", line);
            }
            None => {
                // Anything the scan leaves is the parser's: nested values and escaped
                // keys are valid, the rest must be errors.
                if let Ok(parsed) = parsed {
                    let nested_or_escaped = parsed.0.iter().any(|(k, v)| {
                        matches!(k, Cow::Owned(_)) || v.starts_with('[') || v.starts_with('{')
                    }) || line.contains("\\u0041y");
                    prop_assert!(nested_or_escaped, "the scan refused valid {:?}", line);
                }
            }
        }
    }
}

/// Objects of distinct keys, some of them kept.jsonl's (one escaped), with values of
/// every kind and white space anywhere JSON allows it.
fn object_with_reserved() -> impl Strategy<Value = String> {
    let key = proptest::sample::select(vec![
        "\"id\"",
        "\"body_text\"",
        "\"first_seen\"",
        "\"first\\u005fseen\"",
        "\"cluster_size\"",
        "\"source_urls\"",
        "\"k\\\"q\"",
        "\"x\"",
    ])
    .prop_map(str::to_owned);
    let value = proptest::sample::select(vec![
        "\"a, \\\"b\\\": {c}\"",
        "12.5e3",
        "null",
        "[1, {\"first_seen\": 2}, \"]\"]",
        "{\"cluster_size\": {\"d\": []}}",
        "\"\\u00e9\\n\"",
    ])
    .prop_map(str::to_owned);
    let ws = prop_oneof![Just(""), Just(" "), Just("\n\t ")];
    proptest::collection::vec((key, value, ws.clone(), ws), 0..7).prop_map(|members| {
        let mut seen = std::collections::HashSet::new();
        let body: Vec<String> = members
            .into_iter()
            .filter(|(k, ..)| seen.insert(k.replace("\\u005f", "_")))
            .map(|(k, v, a, b)| format!("{a}{k}{b}:{a}{v}{b}"))
            .collect();
        format!(" {{{}}}", body.join(","))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    /// The object kept.jsonl extends is the input's without the members it sets, as a
    /// parser reads both.
    #[test]
    fn objects_lose_exactly_the_members_kept_jsonl_sets(line in object_with_reserved()) {
        let members = Members::parse(&line).map_err(TestCaseError::fail)?;
        let mut expected: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&line).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let reserved = RESERVED_KEYS.iter().any(|k| expected.contains_key(*k));
        expected.retain(|k, _| !RESERVED_KEYS.contains(&k.as_str()));
        match members.kept_members(&line) {
            None => prop_assert!(!reserved, "{}", line),
            Some(kept) => {
                prop_assert!(reserved, "{}", line);
                let rewritten = object_with(line.as_bytes(), &kept);
                let got: serde_json::Value = serde_json::from_slice(&rewritten)
                    .map_err(|e| TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&rewritten))))?;
                prop_assert_eq!(got, serde_json::Value::Object(expected), "{}", line);
            }
        }
    }
}

#[test]
fn string_scan_finds_each_special_byte_at_every_offset() {
    // The 64-byte blocks of the search: a quote, an escape, a bad escape or a control
    // character at every place of a long string, the parser deciding what is valid.
    for at in 0..140 {
        for special in ["\\\"", "\\n", "\\u00e9", "\\q", "\u{1f}", "\t", "é"] {
            // Escapes again after it, the next one 1 to 40 bytes on.
            let gap = "b".repeat(1 + at % 40);
            let text = format!("{}{special}{gap}\\n{gap}\\t", "a".repeat(at));
            let line = format!("{{\"body_text\": \"{text}\", \"id\": 1}}");
            let scanned = Members::scan(&line);
            let parsed = Members::parse_with_serde(&line).ok();
            assert_eq!(
                scanned.as_ref().map(|m| &m.0),
                parsed.as_ref().map(|m| &m.0),
                "{line:?}"
            );
            // The text as read, escapes decoded, equals serde_json's.
            if let Some(m) = scanned {
                let want: serde_json::Value = serde_json::from_str(&line).unwrap();
                let got = m.string("body_text");
                match want["body_text"].as_str() {
                    Some(w) if !w.trim().is_empty() => assert_eq!(got, Ok(Some(w.to_owned()))),
                    _ => assert!(got.is_err(), "{line:?}"),
                }
            }
        }
    }
}

#[test]
fn the_flat_object_scan_takes_records_and_refuses_what_is_not_json() {
    let line =
        r#"{"id": "a1", "n": -1.5e3, "ok": true, "none": null, "body_text": "x\ny \"q\" \u00e9"}"#;
    let m = Members::scan(line).expect("a flat object");
    assert_eq!(m.get("n"), Some("-1.5e3"));
    assert_eq!(m.get("body_text"), Some(r#""x\ny \"q\" \u00e9""#));
    assert_eq!(m.0, Members::parse_with_serde(line).unwrap().0);
    for bad in [
        r#"{"a": "tab	inside"}"#,
        r#"{"a": "\x"}"#,
        r#"{"a": 01}"#,
        r#"{"a": 1,}"#,
        r#"{"a": 1} x"#,
        r#"{"a" 1}"#,
        r#"{"a": tru}"#,
        r#"{"a": "open}"#,
    ] {
        assert!(Members::scan(bad).is_none(), "{bad}");
        assert!(Members::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn unescape_borrows_plain_strings_and_refuses_bad_escapes() {
    assert!(matches!(
        unescape(r#""plain text""#),
        Ok(Cow::Borrowed("plain text"))
    ));
    let decoded = [
        (r#""a\nb\t\"\\\/\b\f\r""#, "a\nb\t\"\\/\u{8}\u{c}\r"),
        (r#""\u00e9t\u00C9 \ud83d\ude00""#, "étÉ 😀"),
        (r#""\\u0041""#, "\\u0041"),
    ];
    for (raw, want) in decoded {
        assert_eq!(unescape(raw).unwrap(), want, "{raw}");
        assert_eq!(serde_json::from_str::<String>(raw).unwrap(), want, "{raw}");
    }
    for bad in [
        r#""\x""#,
        r#""\u12""#,
        r#""\u12g4""#,
        r#""\ud800""#,
        r#""\ud800\u0041""#,
        r#""\udc00\ud800""#,
        r#""tail\""#,
    ] {
        assert!(unescape(bad).is_err(), "{bad}");
    }
}
