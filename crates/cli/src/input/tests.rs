//! Tests of the input readers.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::host::{probe_fields, scan_flat_object};
use super::lines::{emit_mapped_lines, read_lines_in_blocks, Block};
use super::mmap::map_plain_file;
use super::read::looks_like_json;
use super::*;
use crate::args::{InputArgs, InputFormat};

macro_rules! jsonl_name_cases {
    ($($name:literal => $jsonl:expr,)*) => {
        #[test]
        fn files_are_json_lines_by_name() {
            $(assert_eq!(is_jsonl_name(Path::new($name)), $jsonl, "{}", $name);)*
        }
    };
}

jsonl_name_cases! {
    "data.jsonl" => true,
    "DATA.JSONL" => true,
    "a/b/data.ndjson" => true,
    "data.json" => true,
    "data.jsonl.gz" => true,
    "data.ndjson.zst" => true,
    "data.json.bz2" => true,
    "data.txt" => false,
    "data.txt.gz" => false,
    "data.jsonl.txt" => false,
    "data.html" => false,
    ".jsonl" => false,
    "jsonl" => false,
    "data.gz" => false,
    "-" => false,
}

/// A line of a JSON Lines file parsed as the readers parse it (line 3 of `in.jsonl`).
fn parse_line(line: &str) -> Result<Record, Reject> {
    let mut args = InputArgs::for_files(Vec::new(), InputFormat::Jsonl);
    args.resolve().expect("no file to check");
    let bytes = LineBytes {
        block: Arc::new(Block::Read(line.as_bytes().to_vec())),
        start: 0,
        end: line.len(),
    };
    Item::Line {
        file: Arc::from("in.jsonl"),
        line: 3,
        bytes,
    }
    .parse(&args)
}

macro_rules! reject_cases {
    ($($name:ident: $line:expr => $id:expr, $reason:expr;)*) => {$(
        #[test]
        fn $name() {
            let reject = parse_line($line).expect_err("a reject");
            assert_eq!(reject.origin.to_string(), "in.jsonl:3");
            assert_eq!(reject.id.as_deref(), $id, "{}", $line);
            assert_eq!(reject.reason, $reason, "{}", $line);
        }
    )*};
}

reject_cases! {
    issue_41_present_but_empty_text_is_not_called_missing:
        r#"{"id": "r1", "body_text": ""}"# => Some("r1"),
        r#"empty text: "body_text" is "", and none of the fields "title", "description", "text" is present"#;
    blank_and_null_text_fields_are_named:
        r#"{"id": 7, "title": null, "description": " \n ", "body_text": "", "text": null}"# => Some("7"),
        r#"empty text: "title" is null, "description" is white space only, "body_text" is "", "text" is null"#;
    missing_text_lists_the_fields_looked_for:
        r#"{"id": "r2", "body": "text under another name"}"# => Some("r2"),
        r#"missing text: none of the fields "title", "description", "body_text", "text" is present"#;
    a_text_field_of_the_wrong_type_is_named_with_its_type:
        r#"{"id": "r3", "title": 5, "body_text": "words"}"# => Some("r3"),
        r#"field "title" must be a string, not a number"#;
    an_id_of_the_wrong_type_is_named_with_its_type:
        r#"{"id": {"n": 1}, "text": "words"}"# => None,
        r#"field "id" must be a non-empty string or a number, not an object"#;
    an_empty_id_is_named:
        r#"{"id": "", "text": "words"}"# => None,
        r#"field "id" must be a non-empty string or a number, not an empty string"#;
    a_url_of_the_wrong_type_keeps_the_id:
        r#"{"id": "r4", "text": "words", "url": ["a"]}"# => Some("r4"),
        r#"field "url" must be a string, not an array"#;
    issue_41_malformed_json_names_the_column_not_line_1:
        r#"{"id": "r5", "text": "words",}"# => None,
        "malformed JSON at column 30: trailing comma";
    malformed_json_at_the_end_of_the_line:
        r#"{"id": "r6", "text": "wor"# => None,
        "malformed JSON at column 25: EOF while parsing a string";
    an_array_is_not_an_object:
        "[1, 2]" => None,
        "expected a JSON object, not an array";
    a_number_is_not_an_object:
        "12" => None,
        "expected a JSON object, not a number";
}

#[test]
fn a_record_with_text_takes_its_id_and_skips_empty_fields() {
    let record =
        parse_line(r#"{"id": "ok", "title": "", "body_text": "some words"}"#).expect("a record");
    assert_eq!(record.id, "ok");
    assert_eq!(
        record.fields,
        [("body_text".to_owned(), "some words".to_owned())]
    );
    let unnamed = parse_line(r#"{"text": "some words"}"#).expect("a record");
    assert_eq!(unnamed.id, "3", "named by its line");
}

#[test]
fn json_is_recognised_at_its_first_non_blank_byte() {
    for (bytes, json) in [
        (&b"{\"id\": 1}"[..], true),
        (b"\n\n  \t{", true),
        (b"\xEF\xBB\xBF{\"a\": 1}", true),
        (b"plain {text}", false),
        (b"[1, 2]", false),
        (b"", false),
        (b"  \n", false),
    ] {
        assert_eq!(
            looks_like_json(bytes),
            json,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

/// `files` (name and contents) in a new directory, and arguments naming `named` of them.
fn input_in(
    files: &[(&str, &str)],
    named: &[&str],
    flags: &[&str],
) -> (tempfile::TempDir, anyhow::Result<InputArgs>) {
    #[derive(clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        input: InputArgs,
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, contents) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, contents).expect("write");
    }
    let paths = named
        .iter()
        .map(|n| dir.path().join(n).display().to_string());
    let argv = ["t".to_owned()]
        .into_iter()
        .chain(flags.iter().map(|f| (*f).to_owned()))
        .chain(paths);
    let parsed = <Wrap as clap::Parser>::try_parse_from(argv)
        .map_err(anyhow::Error::from)
        .and_then(|w| w.input.resolved());
    (dir, parsed)
}

macro_rules! format_cases {
    ($($name:ident: $files:expr, $named:expr, $flags:expr => $want:expr;)*) => {$(
        #[test]
        fn $name() {
            let (_dir, got) = input_in(&$files, &$named, &$flags);
            let got = got.map(|a| (a.format, a.jsonl, a.lines)).map_err(|e| format!("{e:#}"));
            let want: Result<InputFormat, &str> = $want;
            match (got, want) {
                (Ok((format, jsonl, lines)), Ok(want)) => {
                    assert_eq!(format, Some(want));
                    assert_eq!(jsonl, want == InputFormat::Jsonl);
                    assert_eq!(lines, want == InputFormat::Lines);
                }
                (Err(e), Err(want)) => assert!(e.contains(want), "{e}"),
                (got, want) => panic!("got {got:?}, want {want:?}"),
            }
        }
    )*};
}

const DOC: (&str, &str) = ("a.txt", "some words");
const JL: (&str, &str) = ("d.jsonl", "{\"text\": \"some words\"}\n");

format_cases! {
    issue_41_jsonl_files_are_json_lines_without_a_flag:
        [JL, ("e.ndjson", ""), ("f.json.gz", "")], ["d.jsonl", "e.ndjson", "f.json.gz"], [] => Ok(InputFormat::Jsonl);
    text_files_are_documents: [DOC], ["a.txt"], [] => Ok(InputFormat::Text);
    no_path_reads_stdin_as_a_document: [], [], [] => Ok(InputFormat::Text);
    lines_flag_wins_over_names: [JL], ["d.jsonl"], ["--lines"] => Ok(InputFormat::Lines);
    format_text_wins_over_names: [JL], ["d.jsonl"], ["--format", "text"] => Ok(InputFormat::Text);
    jsonl_flag_reads_any_name: [DOC], ["a.txt"], ["--jsonl"] => Ok(InputFormat::Jsonl);
    format_auto_detects: [JL], ["d.jsonl"], ["--format", "auto"] => Ok(InputFormat::Jsonl);
    mixed_files_need_a_flag: [JL, DOC], ["d.jsonl", "a.txt"], [] => Err("pass --jsonl");
    mixed_files_with_a_flag_are_read: [JL, DOC], ["d.jsonl", "a.txt"], ["--jsonl"] => Ok(InputFormat::Jsonl);
    a_directory_of_json_lines_is_json_lines: [("dir/d.jsonl", ""), ("dir/x.png", "")], ["dir"], [] => Ok(InputFormat::Jsonl);
    a_directory_with_documents_is_documents:
        [("dir/d.jsonl", ""), ("dir/a.txt", "")], ["dir"], [] => Ok(InputFormat::Text);
    files_decide_for_directories: [JL, ("dir/a.txt", "")], ["d.jsonl", "dir"], [] => Ok(InputFormat::Jsonl);
    issue_41_a_missing_file_is_an_error_naming_it:
        [JL], ["d.jsonl", "missing.jsonl"], [] => Err("missing.jsonl: No such file or directory");
    a_missing_directory_is_an_error: [], ["nodir/"], ["--jsonl"] => Err("cannot open input");
    field_flags_work_with_detected_json_lines: [JL], ["d.jsonl"], ["--text-field", "body"] => Ok(InputFormat::Jsonl);
    field_flags_with_text_input_name_the_flag:
        [DOC], ["a.txt"], ["--text-field", "body"] => Err("--text-field body names a JSON field");
    id_field_with_lines_names_the_flag:
        [DOC], ["a.txt"], ["--lines", "--id-field", "key"] => Err("--id-field key names a JSON field");
    lines_and_jsonl_conflict: [DOC], ["a.txt"], ["--lines", "--jsonl"] => Err("cannot be used with");
}

#[test]
fn resolving_twice_changes_nothing() {
    let (_dir, args) = input_in(&[JL], &["d.jsonl"], &[]);
    let args = args.expect("resolves");
    let again = args.resolved().expect("resolves again");
    assert_eq!(
        (again.format, again.jsonl, again.lines),
        (args.format, args.jsonl, args.lines)
    );
}

#[test]
fn directories_read_and_skip_by_the_format() {
    let files = [
        ("dir/a.txt", "first document here"),
        ("dir/sub/b.html", "<p>second document</p>"),
        (
            "dir/c.jsonl",
            "{\"id\": \"c1\", \"text\": \"one\"}\n{\"id\": \"c2\", \"text\": \"two\"}\n",
        ),
        ("dir/d.png", "png"),
    ];
    let read = |args: &InputArgs| {
        let mut got = Vec::new();
        for_each(args, |r| {
            got.push(r.map(|r| r.id).map_err(|r| r.to_string()));
            Ok(())
        })
        .expect("reads");
        got
    };
    let name = |dir: &tempfile::TempDir, rel: &str| dir.path().join(rel);
    let (dir, args) = input_in(&files, &["dir"], &[]);
    let args = args.expect("resolves");
    assert_eq!(
        read(&args),
        [Ok("a.txt".to_owned()), Ok("sub/b.html".to_owned())]
    );
    let skipped = skipped_files(&args);
    assert_eq!(
        skipped,
        [name(&dir, "dir/c.jsonl"), name(&dir, "dir/d.png")]
    );
    let note = skipped_note(&skipped, &args).expect("a note");
    assert!(
        note.starts_with("skipped 2 files in input directories"),
        "{note}"
    );
    assert!(note.contains("pass --jsonl"), "{note}");
    assert!(note.contains("c.jsonl") && note.contains("d.png"), "{note}");
    assert_eq!(total_bytes(&args), Some(19 + 22));

    let (dir, args) = input_in(&files, &["dir"], &["--jsonl"]);
    let args = args.expect("resolves");
    assert_eq!(read(&args), [Ok("c1".to_owned()), Ok("c2".to_owned())]);
    let skipped = skipped_files(&args);
    assert_eq!(
        skipped,
        [
            name(&dir, "dir/a.txt"),
            name(&dir, "dir/d.png"),
            name(&dir, "dir/sub/b.html")
        ]
    );
    let note = skipped_note(&skipped, &args).expect("a note");
    assert!(note.ends_with("sub/b.html"), "{note}");
    assert!(!note.contains("pass --jsonl"), "{note}");
}

#[test]
fn the_skipped_note_names_the_first_few() {
    let args = InputArgs::for_files(Vec::new(), InputFormat::Text);
    let skipped: Vec<PathBuf> = (0..5)
        .map(|i| PathBuf::from(format!("d/{i}.png")))
        .collect();
    assert_eq!(
        skipped_note(&skipped, &args).as_deref(),
        Some("skipped 5 files in input directories (.txt, .html and .htm files are read): d/0.png, d/1.png, d/2.png, and 2 more")
    );
    assert_eq!(skipped_note(&[], &args), None);
}

#[test]
fn a_named_file_that_went_away_is_an_error_not_a_reject() {
    let (dir, args) = input_in(&[JL], &["d.jsonl"], &["--no-mmap"]);
    let args = args.expect("resolves");
    std::fs::remove_file(dir.path().join("d.jsonl")).expect("rm");
    let err = for_each(&args, |_| Ok(())).expect_err("an error");
    assert!(format!("{err}").starts_with("cannot open input "), "{err}");
}

#[test]
fn a_mirror_s_host_directories_name_their_pages_hosts() {
    for (path, host) in [
        ("www.example.com/news/a.html", Some("example.com")),
        ("Docs.Example.ORG/a.html", Some("docs.example.org")),
        ("news/a.html", None),
        ("a.html", None),
        (".hidden.d/a.txt", None),
        ("example.com:8080/a.html", Some("example.com")),
        ("v1.2/a.html", None),
        ("1.2/a.html", None),
    ] {
        assert_eq!(mirror_host(path).as_deref(), host, "{path}");
    }
}

/// Yields its bytes a few at a time, then fails once if asked to.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    fail_at_end: bool,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.data.len() && self.fail_at_end {
            self.fail_at_end = false;
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf.len().min(3).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn the_host_scan_reads_what_the_parser_reads() {
    #[derive(clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        input: InputArgs,
    }
    let args = <Wrap as clap::Parser>::parse_from(["t", "--jsonl"]).input;
    let body = "long text with \\\"quotes\\\" and \\\\ backslashes, \\u00e9 escapes";
    // Lines the scan reads itself, and what the parser makes of them.
    let flat = [
        format!(r#"{{"id": "1", "url": "https://Example.org/a", "body_text": "{body}"}}"#),
        format!(r#"{{"body_text":"{body}","host":" News.Example.COM ","url":"https://x.org/"}}"#),
        r#" { "n" : 12.5e3 , "ok" : true, "no": null, "url" : "https://a.b/c" } "#.to_owned(),
        r#"{"url": "https://first.org/", "url": "https://second.org/"}"#.to_owned(),
        r#"{"host": null, "url": "https://h.org/"}"#.to_owned(),
        r#"{"body_text": "ends in a backslash \\", "url": "https://bs.org/"}"#.to_owned(),
        r#"{"body_text": "say \"hi\\\"", "url": "https://q.org/"}"#.to_owned(),
        r#"{"body_text": "no url at all"}"#.to_owned(),
        r#"{}"#.to_owned(),
    ];
    for line in &flat {
        let scanned = scan_flat_object(line.as_bytes(), &args.url_field, &args.host_field);
        assert!(scanned.is_some(), "{line}");
        assert_eq!(scanned, probe_fields(line.as_bytes(), &args), "{line}");
    }
    for (line, host) in [(&flat[1], "news.example.com"), (&flat[3], "second.org")] {
        assert_eq!(probe_host(line.as_bytes(), &args).as_deref(), Some(host));
    }
    // Lines left to the parser: nested values, escapes in a wanted value or a key, a
    // wanted field that is not a string, and what is not an object.
    let parsed = [
        r#"{"meta": {"url": "https://inner.org/"}, "url": "https://outer.org/"}"#,
        r#"{"tags": ["a", "b"], "url": "https://outer.org/"}"#,
        r#"{"url": "https:\/\/escaped.org\/"}"#,
        r#"{"u\u0072l": "https://escaped-key.org/"}"#,
        r#"{"url": 5, "host": "h.org"}"#,
        r#"["url", "https://a.org/"]"#,
        r#"{"url": "https://cut.org/""#,
    ];
    for line in parsed {
        assert_eq!(
            scan_flat_object(line.as_bytes(), &args.url_field, &args.host_field),
            None,
            "{line}"
        );
    }
    for (line, host) in [
        (parsed[0], "outer.org"),
        (parsed[2], "escaped.org"),
        (parsed[3], "escaped-key.org"),
    ] {
        assert_eq!(probe_host(line.as_bytes(), &args).as_deref(), Some(host));
    }
}

fn lines(data: &str, block: usize, fail: bool) -> Vec<(Option<u64>, String)> {
    let mut got = Vec::new();
    let reader = Trickle {
        data: data.as_bytes().to_vec(),
        at: 0,
        fail_at_end: fail,
    };
    read_lines_in_blocks(reader, "in", block, &mut |item| {
        got.push(match item {
            Item::Line { line, bytes, .. } => {
                (Some(line), String::from_utf8(bytes.to_vec()).unwrap())
            }
            Item::Done(Err(r)) => (r.origin.line, r.reason),
            Item::Done(Ok(_)) | Item::Document { .. } => {
                unreachable!("lines are handed on unparsed")
            }
        });
        Ok(())
    })
    .unwrap();
    got
}

#[test]
fn lines_are_cut_the_same_whatever_the_block_size() {
    let long = "x".repeat(50);
    let data = format!("one\r\n\n  \ntwo\n{long}\nlast");
    let want = vec![
        (Some(1), "one".to_owned()),
        (Some(4), "two".to_owned()),
        (Some(5), long.clone()),
        (Some(6), "last".to_owned()),
    ];
    // Blocks smaller than a line, than the long line, and larger than everything.
    for block in [1, 4, 8, 49, 50, 51, 64, 1 << 20] {
        assert_eq!(lines(&data, block, false), want, "block of {block} bytes");
    }
}

#[test]
fn mapped_files_are_cut_into_the_same_lines_as_streams() {
    let long = "y".repeat(5000);
    let data = format!("one\r\n\n  \ntwo\n{long}\n\nlast");
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, data.as_bytes()).unwrap();
    let want = lines(&data, 1 << 20, false);
    for block in [1, 3, 4, 5, 4095, 4096, 5000, 5010, 1 << 20] {
        let map = map_plain_file(file.path()).expect("a plain file maps");
        let mut got = Vec::new();
        emit_mapped_lines(map, "in", block, &mut |item| {
            let Item::Line { line, bytes, .. } = item else {
                panic!("lines are handed on unparsed");
            };
            got.push((Some(line), String::from_utf8(bytes.to_vec()).unwrap()));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, want, "blocks of {block} bytes");
    }
    // Lines outlive the blocks' neighbours: each keeps its own block's pages readable.
    let map = map_plain_file(file.path()).unwrap();
    let mut kept = Vec::new();
    emit_mapped_lines(map, "in", 4096, &mut |item| {
        if let Item::Line { bytes, .. } = item {
            kept.push(bytes);
        }
        Ok(())
    })
    .unwrap();
    let last = kept.pop().unwrap();
    drop(kept);
    assert_eq!(&*last, b"last");
}

#[test]
fn detached_lines_of_a_mapped_file_refer_to_their_own_range() {
    // Lines of several pages each, so that dropping a block releases whole pages.
    let data: String = (0..40)
        .map(|i| format!("{}\n", i.to_string().repeat(3000)))
        .collect();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, data.as_bytes()).unwrap();
    let map = map_plain_file(file.path()).unwrap();
    let mut detached = Vec::new();
    emit_mapped_lines(map, "in", 20_000, &mut |item| {
        if let Item::Line { bytes, .. } = item {
            let own = bytes.detached();
            // No copy: the same bytes of the same map, in a block of the line alone.
            let ((map, range), (own_map, own_range)) =
                (bytes.mapped().unwrap(), own.mapped().unwrap());
            assert!(Arc::ptr_eq(map, own_map));
            assert_eq!(range, own_range);
            detached.push(own);
        }
        Ok(())
    })
    .unwrap();
    // Every block was dropped (its pages released); the lines read back unchanged.
    let want: Vec<String> = data.lines().map(str::to_owned).collect();
    let got: Vec<String> = detached
        .iter()
        .map(|l| String::from_utf8(l.to_vec()).unwrap())
        .collect();
    assert_eq!(got, want);
    // A line read into memory is detached as a copy.
    let read = LineBytes {
        block: Arc::new(Block::Read(b"abc".to_vec())),
        start: 1,
        end: 3,
    };
    let own = read.detached();
    assert!(own.mapped().is_none());
    assert_eq!(&*own, b"bc");
}

#[test]
fn compressed_and_empty_files_are_not_mapped() {
    let dir = tempfile::tempdir().unwrap();
    for (name, data) in [("a.jsonl.gz", &b"x\n"[..]), ("b.jsonl", &b""[..])] {
        let path = dir.path().join(name);
        std::fs::write(&path, data).unwrap();
        assert!(map_plain_file(&path).is_none(), "{name}");
    }
    assert!(map_plain_file(dir.path()).is_none(), "a directory");
    assert!(map_plain_file(Path::new("-")).is_none(), "stdin");
}

#[test]
fn a_read_error_keeps_the_whole_lines_read_and_names_the_next() {
    let got = lines("a\nb\npartial", 4, true);
    assert_eq!(
        got[..2],
        [(Some(1), "a".to_owned()), (Some(2), "b".to_owned())]
    );
    assert_eq!(got[2].0, Some(3));
    assert!(got[2].1.contains("disk on fire"), "{got:?}");
    assert_eq!(got.len(), 3);
}
