//! Runs the built `neardup` binary in a temporary directory, as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use std::io::Write;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn neardup(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    {
        let mut pipe = child.stdin.take().expect("stdin");
        // A command that fails on its arguments exits without reading: a broken pipe here
        // is part of what the test observes, not a failure of the harness.
        if let Err(e) = pipe.write_all(stdin.unwrap_or_default()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
        }
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("wait");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8(stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(stderr).expect("utf-8 stderr"),
    }
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../neardup/tests/data")
        .join(rel)
}

fn is_hex(s: &str, digits: usize) -> bool {
    s.len() == digits
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn fingerprint_prints_one_line_per_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.txt"),
        "The quick brown fox jumps over the lazy dog",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.txt"),
        "the QUICK brown fox, jumps over the lazy dog!",
    )
    .unwrap();
    let run = neardup(dir.path(), &["fingerprint", "a.txt", "b.txt"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
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
    let run = neardup(dir.path(), &["fingerprint", "--lines"], Some(input));
    assert_eq!(run.code, 2, "bad lines make the exit code 2");
    let ids: Vec<&str> = run
        .stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(ids, ["1", "3", "6"]);
    assert!(
        run.stderr.contains("<stdin>:4: invalid UTF-8 at byte 0"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("<stdin>:5: no words to fingerprint"),
        "{}",
        run.stderr
    );
}

#[test]
fn jsonl_errors_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = concat!(
        "{\"id\":\"a\",\"title\":\"Hello\",\"body_text\":\"the world is big\"}\n",
        "{bad json\n",
        "{\"id\":7,\"text\":\"numeric ids are fine\"}\n",
        "{\"id\":\"x\"}\n",
        "{\"id\":\"y\",\"title\":5}\n",
        "[1,2]\n",
        "{\"body\":\"custom field\"}\n",
    );
    std::fs::write(dir.path().join("in.jsonl"), jsonl).unwrap();
    let run = neardup(dir.path(), &["fingerprint", "--jsonl", "in.jsonl"], None);
    assert_eq!(run.code, 2);
    let ids: Vec<&str> = run
        .stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(ids, ["a", "7"]);
    for want in [
        "in.jsonl:2: malformed JSON",
        "in.jsonl:4: missing text: none of the fields \"title\", \"description\", \"body_text\", \"text\" is present",
        "in.jsonl:5: field \"title\" must be a string, not a number",
        "in.jsonl:6: expected a JSON object",
        "in.jsonl:7: missing text",
    ] {
        assert!(run.stderr.contains(want), "missing {want:?} in:\n{}", run.stderr);
    }
    let custom = neardup(
        dir.path(),
        &["fingerprint", "--jsonl", "--text-field", "body", "in.jsonl"],
        None,
    );
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
    std::fs::write(
        dir.path().join("bad.txt"),
        b"valid start \xc3\x28 then junk",
    )
    .unwrap();
    let run = neardup(dir.path(), &["fingerprint", "bad.txt", "missing.txt"], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("bad.txt: invalid UTF-8 at byte 12"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("missing.txt: cannot open"),
        "{}",
        run.stderr
    );
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
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim().rsplit('\t').next(), Some(want));
}

#[test]
fn wide_fingerprints_have_32_digits_and_options_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let run = neardup(
        dir.path(),
        &["fingerprint", "--lines", "--bits", "128"],
        Some(b"some words here\n"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(is_hex(run.stdout.trim().split('\t').nth(1).unwrap(), 32));
    let bad = neardup(dir.path(), &["fingerprint", "--bits", "96"], Some(b"x"));
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("64 or 128"), "{}", bad.stderr);
    let bad = neardup(
        dir.path(),
        &["fingerprint", "--shingle-width", "0"],
        Some(b"x"),
    );
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("shingle_width"), "{}", bad.stderr);
    let bad = neardup(
        dir.path(),
        &["fingerprint", "--field-weight", "title=0"],
        Some(b"x"),
    );
    assert!(bad.stderr.contains("at least 1"), "{}", bad.stderr);
    let bad = neardup(
        dir.path(),
        &["fingerprint", "--weighting", "idf"],
        Some(b"x"),
    );
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("--idf FILE"), "{}", bad.stderr);
}

#[test]
fn field_weights_change_the_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let line = "{\"id\":\"r\",\"title\":\"a title about something\",\"body_text\":\"and a body that talks about something else entirely at length\"}\n";
    std::fs::write(dir.path().join("in.jsonl"), line).unwrap();
    let plain = neardup(dir.path(), &["fingerprint", "--jsonl", "in.jsonl"], None);
    let heavy = neardup(
        dir.path(),
        &[
            "fingerprint",
            "--jsonl",
            "--field-weight",
            "title=5",
            "in.jsonl",
        ],
        None,
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
    std::fs::write(dir.path().join("corpus.txt"), &corpus).unwrap();
    let built = neardup(
        dir.path(),
        &["idf", "--lines", "corpus.txt", "--out", "t.idf"],
        None,
    );
    assert_eq!(built.code, 0, "{}", built.stderr);
    assert!(built.stderr.contains("30 documents"), "{}", built.stderr);
    let run = neardup(
        dir.path(),
        &[
            "fingerprint",
            "--lines",
            "--weighting",
            "idf",
            "--idf",
            "t.idf",
            "corpus.txt",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 30);
    std::fs::write(dir.path().join("junk.idf"), "not a table at all").unwrap();
    let bad = neardup(
        dir.path(),
        &[
            "fingerprint",
            "--lines",
            "--weighting",
            "idf",
            "--idf",
            "junk.idf",
            "corpus.txt",
        ],
        None,
    );
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("junk.idf: not an IDF table"),
        "{}",
        bad.stderr
    );
}

#[test]
fn help_documents_every_option() {
    let dir = tempfile::tempdir().unwrap();
    let run = neardup(dir.path(), &["fingerprint", "--help"], None);
    assert_eq!(run.code, 0);
    for opt in [
        "--lines",
        "--jsonl",
        "--id-field",
        "--text-field",
        "--field-weight",
        "--profile",
        "--shingle-width",
        "--bits",
        "--weighting",
        "--idf",
    ] {
        assert!(run.stdout.contains(opt), "--help lacks {opt}");
    }
}
