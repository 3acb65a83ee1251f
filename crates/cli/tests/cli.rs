//! Runs the built `neardup` binary in a temporary directory, as a user would.

mod common;

use std::io::Write;

use common::{
    argv, assert_contains, assert_contains_all, cmd, data as fixture, lines as json_lines, neardup,
    neardup_stdin, report, write,
};

fn is_hex(s: &str, digits: usize) -> bool {
    s.len() == digits
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn fingerprint_prints_one_line_per_file() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.txt",
        "The quick brown fox jumps over the lazy dog",
    );
    write(
        dir.path(),
        "b.txt",
        "the QUICK brown fox, jumps over the lazy dog!",
    );
    let run = cmd(dir.path(), "fingerprint a.txt b.txt");
    run.assert_ok();
    let lines: Vec<(&str, &str)> = run
        .stdout
        .lines()
        .map(|l| l.split_once('\t').expect("id<TAB>fingerprint"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].0, "a.txt");
    assert!(is_hex(lines[0].1, 16), "{}", lines[0].1);
    assert_eq!(
        lines[0].1, lines[1].1,
        "case and punctuation must not matter"
    );
}

#[test]
fn lines_mode_numbers_documents_and_reports_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let input = b"hello world\n\nthe quick brown fox\n\xff\xfe broken\n!!! ...\nlast line here\n";
    let run = neardup_stdin(dir.path(), &["fingerprint", "--lines"], input);
    assert_eq!(run.code, 2, "bad lines make the exit code 2");
    let ids: Vec<&str> = run
        .stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(ids, ["1", "3", "6"]);
    assert_contains(&run.stderr, "<stdin>:4: invalid UTF-8 at byte 0");
    assert_contains(&run.stderr, "<stdin>:5: no words to fingerprint");
}

#[test]
fn jsonl_errors_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = r#"{"id":"a","title":"Hello","body_text":"the world is big"}
{bad json
{"id":7,"text":"numeric ids are fine"}
{"id":"x"}
{"id":"y","title":5}
[1,2]
{"body":"custom field"}
"#;
    write(dir.path(), "in.jsonl", jsonl);
    let run = cmd(dir.path(), "fingerprint --jsonl in.jsonl");
    assert_eq!(run.code, 2);
    let ids: Vec<&str> = run
        .stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(ids, ["a", "7"]);
    assert_contains_all(
        &run.stderr,
        &[
        "in.jsonl:2: malformed JSON at column 2: key must be a string",
        "in.jsonl:4 (record \"x\"): missing text: none of the fields \"title\", \"description\", \"body_text\", \"text\" is present",
        "in.jsonl:5 (record \"y\"): field \"title\" must be a string, not a number",
        "in.jsonl:6: expected a JSON object, not an array",
        "in.jsonl:7: missing text",
        ],
    );
    let custom = cmd(dir.path(), "fingerprint --jsonl --text-field body in.jsonl");
    let ids: Vec<&str> = custom
        .stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["7"],
        "the 7th line has no id: it is named by its line number"
    );
}

#[test]
fn invalid_utf8_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "bad.txt", b"valid start \xc3\x28 then junk");
    let run = cmd(dir.path(), "fingerprint bad.txt");
    run.assert_fails(2, "bad.txt: invalid UTF-8 at byte 12");
}

#[test]
fn blake2b_profile_matches_the_python_reference_golden() {
    let golden = std::fs::read_to_string(fixture("golden/blake2b.tsv")).unwrap();
    let want = golden
        .lines()
        .find(|l| l.starts_with("man_en.txt\t*\t"))
        .and_then(|l| l.rsplit('\t').next())
        .expect("golden row");
    let dir = tempfile::tempdir().unwrap();
    let path = fixture("text/man_en.txt");
    let run = neardup(
        dir.path(),
        &[
            "fingerprint",
            "--profile",
            "blake2b",
            path.to_str().unwrap(),
        ],
    );
    run.assert_ok();
    assert_eq!(run.stdout.trim().rsplit('\t').next(), Some(want));
}

#[test]
fn wide_fingerprints_have_32_digits_and_options_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let run = neardup_stdin(
        dir.path(),
        &["fingerprint", "--lines", "--bits", "128"],
        b"some words here\n",
    );
    run.assert_ok();
    assert!(is_hex(run.stdout.trim().split('\t').nth(1).unwrap(), 32));
    let bad = neardup_stdin(dir.path(), &["fingerprint", "--bits", "96"], b"x");
    assert_eq!(bad.code, 3, "an error");
    assert_contains(&bad.stderr, "64 or 128");
    let bad = neardup_stdin(dir.path(), &["fingerprint", "--shingle-width", "0"], b"x");
    bad.assert_fails(3, "shingle_width");
    let bad = neardup_stdin(
        dir.path(),
        &["fingerprint", "--field-weight", "title=0"],
        b"x",
    );
    assert_contains(&bad.stderr, "at least 1");
    let bad = neardup_stdin(dir.path(), &["fingerprint", "--weighting", "idf"], b"x");
    bad.assert_fails(3, "--idf FILE");
}

#[test]
fn field_weights_change_the_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let line = "{\"id\":\"r\",\"title\":\"a title about something\",\"body_text\":\"and a body that talks about something else entirely at length\"}\n";
    write(dir.path(), "in.jsonl", line);
    let plain = cmd(dir.path(), "fingerprint --jsonl in.jsonl");
    let heavy = cmd(
        dir.path(),
        "fingerprint --jsonl --field-weight title=5 in.jsonl",
    );
    assert_eq!(plain.code, 0);
    assert_eq!(heavy.code, 0);
    assert_ne!(plain.stdout, heavy.stdout);
}

#[test]
fn idf_table_is_built_and_used() {
    let dir = tempfile::tempdir().unwrap();
    let corpus: String = (0..30)
        .map(|i| {
            format!(
                "please read the terms and conditions carefully document number {i} says {}\n",
                i * 7
            )
        })
        .collect();
    write(dir.path(), "corpus.txt", &corpus);
    let built = cmd(dir.path(), "idf --lines corpus.txt --out t.idf");
    built.assert_fails(0, "30 documents");
    let fingerprint_with = |table: &str| {
        let line = format!("fingerprint --lines --weighting idf --idf {table} corpus.txt");
        cmd(dir.path(), &line)
    };
    let run = fingerprint_with("t.idf");
    run.assert_ok();
    assert_eq!(run.stdout.lines().count(), 30);
    write(dir.path(), "junk.idf", "not a table at all");
    fingerprint_with("junk.idf").assert_fails(3, "junk.idf: not an IDF table");
}

#[test]
fn help_documents_every_option() {
    let dir = tempfile::tempdir().unwrap();
    let run = cmd(dir.path(), "fingerprint --help");
    assert_eq!(run.code, 0);
    let options = "--lines --jsonl --id-field --text-field --field-weight --profile \
                   --shingle-width --bits --weighting --idf";
    assert_contains_all(&run.stdout, &argv(options));
}

/// Three records of distinct prose, as JSON Lines.
fn three_records() -> String {
    [
        (
            "a",
            "storm closes the coastal road as the council meets on the budget",
        ),
        (
            "b",
            "the school by the river gets a new bridge after years of delay",
        ),
        (
            "c",
            "police report on market prices at the harbour and the ferry",
        ),
    ]
    .iter()
    .map(|(id, text)| format!("{}\n", serde_json::json!({"id": id, "body_text": text})))
    .collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).expect("gzip");
    gz.finish().expect("gzip")
}

#[test]
fn issue_41_jsonl_files_are_read_as_json_lines_without_a_flag() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = three_records();
    write(dir.path(), "data.jsonl", &jsonl);
    write(dir.path(), "data.ndjson", &jsonl);
    write(dir.path(), "data.jsonl.gz", gzip(jsonl.as_bytes()));
    for name in ["data.jsonl", "data.ndjson", "data.jsonl.gz"] {
        let run = neardup(dir.path(), &["fingerprint", name]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let ids: Vec<&str> = run
            .stdout
            .lines()
            .filter_map(|l| l.split('\t').next())
            .collect();
        assert_eq!(ids, ["a", "b", "c"], "{name}");

        let out = format!("out-{name}");
        let store = format!("{name}.db");
        let run = neardup(
            dir.path(),
            &["dedup", name, "--out", &out, "--store", &store, "--quiet"],
        );
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let report = report(&dir.path().join(&out));
        assert_eq!(report["kept"], 3, "{name}: {report}");
        let kept = json_lines(&dir.path().join(&out).join("kept.jsonl"));
        let ids: Vec<&str> = kept.iter().filter_map(|k| k["id"].as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"], "{name}");
    }
    // Both kinds named without a flag: the message says which flag to pass.
    write(dir.path(), "notes.txt", "some plain words");
    let run = cmd(dir.path(), "fingerprint data.jsonl notes.txt");
    run.assert_fails(3, "pass --jsonl");
    assert!(run.stdout.is_empty(), "nothing read: {}", run.stdout);
    // A flag overrides the name: the file is one document.
    let run = cmd(dir.path(), "fingerprint --format text data.jsonl");
    run.assert_ok();
    assert_eq!(run.stdout.lines().count(), 1);
}

#[test]
fn issue_41_json_field_flags_work_with_detected_json_lines_and_not_with_text() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "in.jsonl",
        "{\"key\": \"k1\", \"body\": \"a custom field with words\"}\n",
    );
    let run = cmd(
        dir.path(),
        "fingerprint --id-field key --text-field body in.jsonl",
    );
    run.assert_ok();
    assert!(run.stdout.starts_with("k1\t"), "{}", run.stdout);
    let run = neardup_stdin(
        dir.path(),
        &["fingerprint", "--lines", "--text-field", "body"],
        b"words\n",
    );
    assert_eq!(run.code, 3);
    assert_contains(&run.stderr, "--text-field body names a JSON field");
    assert_contains(&run.stderr, "--jsonl");
}

#[test]
fn issue_41_a_text_file_that_starts_with_a_brace_warns_once() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = three_records();
    write(dir.path(), "data.txt", &jsonl);
    write(dir.path(), "plain.txt", "plain words {not json}");
    let warning = "data.txt starts with '{' but is read as plain text";
    for args in [
        &["fingerprint", "data.txt", "plain.txt"][..],
        &["fingerprint", "--lines", "data.txt", "plain.txt"],
        &argv("dedup data.txt plain.txt --out o --store s.db --quiet"),
    ] {
        let run = neardup(dir.path(), args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert_eq!(
            run.stderr.matches(warning).count(),
            1,
            "{args:?}: {}",
            run.stderr
        );
        assert_contains(&run.stderr, "pass --jsonl");
        assert!(!run.stderr.contains("plain.txt"), "{}", run.stderr);
    }
    let run = neardup_stdin(dir.path(), &["fingerprint"], jsonl.as_bytes());
    assert_contains(&run.stderr, "<stdin> starts with '{'");
}

#[test]
fn issue_41_a_missing_input_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "data.jsonl", three_records());
    let want = "cannot open input missing.jsonl: No such file or directory";
    for args in [
        &["fingerprint", "data.jsonl", "missing.jsonl"][..],
        &["idf", "data.jsonl", "missing.jsonl", "--out", "t.idf"],
        &["label", "--input", "data.jsonl", "--input", "missing.jsonl"],
        &["query", "--file", "missing.jsonl"],
        &argv("dedup data.jsonl missing.jsonl --out o --store s.db --quiet"),
    ] {
        let run = neardup(dir.path(), args);
        assert_eq!(run.code, 3, "{args:?} exits {}: {}", run.code, run.stderr);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
        assert!(
            run.stdout.is_empty(),
            "{args:?}: no work before the check: {}",
            run.stdout
        );
    }
    assert!(
        !dir.path().join("o/rejects.jsonl").exists(),
        "no run started"
    );
    let run = cmd(dir.path(), "fingerprint no-such-dir/");
    run.assert_fails(3, "cannot open input no-such-dir/");
}

#[test]
fn issue_41_a_directory_names_the_files_it_skips() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("in")).unwrap();
    write(dir.path(), "in/data.jsonl", three_records());
    write(dir.path(), "in/logo.png", b"\x89PNG");
    let run = cmd(dir.path(), "fingerprint in");
    run.assert_ok();
    assert_eq!(
        run.stdout.lines().count(),
        3,
        "the JSON Lines are read: {}",
        run.stdout
    );
    assert_contains(&run.stderr, "skipped 1 file in input directories");
    assert_contains(&run.stderr, "logo.png");
    // With documents beside it, the directory is read as documents and the JSON Lines
    // file is named, with the flag that reads it.
    write(dir.path(), "in/page.txt", "a page of plain words");
    let run = cmd(dir.path(), "idf in --out t.idf");
    run.assert_fails(0, "1 documents");
    assert!(
        run.stderr.contains("skipped 2 files")
            && run.stderr.contains("data.jsonl, ")
            && run.stderr.contains("pass --jsonl"),
        "{}",
        run.stderr
    );
    let run = cmd(dir.path(), "dedup --jsonl in --out o --store s.db --quiet");
    run.assert_ok();
    assert_eq!(report(&dir.path().join("o"))["kept"], 3);
}

#[test]
fn issue_41_rejects_keep_the_id_and_say_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let input = r#"{"id": "ok", "body_text": "storm closes the coastal road as the council meets"}
{"id": "empty", "body_text": ""}
{"id": "none", "body": "text under another name"}
{"id": "typed", "title": 5}
{"id": {"n": 1}, "text": "words"}
{"id": "comma", "text": "words",}
"#;
    write(dir.path(), "in.jsonl", input);
    let run = cmd(dir.path(), "dedup in.jsonl --out o --store s.db --quiet");
    assert_eq!(run.code, 2, "{}", run.stderr);
    let rejects = json_lines(&dir.path().join("o/rejects.jsonl"));
    let got: Vec<(u64, Option<&str>, &str)> = rejects
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap_or(0),
                r["id"].as_str(),
                r["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let want = [
        (2, Some("empty"), "empty text: \"body_text\" is \"\", and none of the fields \"title\", \"description\", \"text\" is present"),
        (3, Some("none"), "missing text: none of the fields \"title\", \"description\", \"body_text\", \"text\" is present"),
        (4, Some("typed"), "field \"title\" must be a string, not a number"),
        (5, None, "field \"id\" must be a non-empty string or a number, not an object"),
        (6, None, "malformed JSON at column 33: trailing comma"),
    ];
    assert_eq!(got, want);
    assert!(rejects.iter().all(|r| r["file"] == "in.jsonl"));
}

#[test]
fn query_file_reads_one_json_object_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let records = three_records();
    write(dir.path(), "data.jsonl", &records);
    let run = cmd(
        dir.path(),
        "dedup --jsonl data.jsonl --out o --store s.db --quiet",
    );
    run.assert_ok();
    let first = records.lines().next().unwrap();
    write(dir.path(), "one.json", first);
    let run = cmd(dir.path(), "query --store s.db --file one.json --json");
    run.assert_ok();
    let hits: serde_json::Value = run.json();
    assert_eq!(hits[0]["id"], "a", "{hits}");
    // Read as text, the object's markup is part of the text: a warning says so.
    let run = cmd(
        dir.path(),
        "query --store s.db --file one.json --format text",
    );
    assert_contains(&run.stderr, "one.json starts with '{'");
    let run = cmd(dir.path(), "query --store s.db --file data.jsonl");
    run.assert_fails(3, "data.jsonl holds 3 records");
}
