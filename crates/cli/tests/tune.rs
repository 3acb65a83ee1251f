//! `neardup tune`, `label`, `eval` and `explain`, run as a user would against the fixtures in
//! `crates/neardup/tests/data/tune` (made by its `make_fixtures.py`).
//!
//! Golden outputs sit next to the fixtures; `NEARDUP_BLESS=1 cargo test -p neardup-cli --test
//! tune` rewrites them.

mod common;

use std::path::PathBuf;

use serde_json::Value;

use common::{assert_contains, assert_contains_all, cmd, neardup, neardup_env, write};

fn fixtures() -> PathBuf {
    common::data("tune")
}

fn fixture(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

/// Compares with a golden file, or rewrites it under NEARDUP_BLESS=1; shows a line diff.
fn golden(name: &str, actual: &str) {
    let path = fixtures().join(name);
    if std::env::var_os("NEARDUP_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with NEARDUP_BLESS=1", path.display()));
    if want != actual {
        let mut diff = String::new();
        let (w, a): (Vec<&str>, Vec<&str>) = (want.lines().collect(), actual.lines().collect());
        for i in 0..w.len().max(a.len()) {
            let (x, y) = (w.get(i).copied(), a.get(i).copied());
            if x != y {
                diff.push_str(&format!(
                    "line {}:\n  - {}\n  + {}\n",
                    i + 1,
                    x.unwrap_or("<none>"),
                    y.unwrap_or("<none>")
                ));
            }
        }
        panic!("{name} differs from the golden output (NEARDUP_BLESS=1 rewrites it):\n{diff}");
    }
}

/// The layout line depends on the planner's cost model, not on this command: masked.
fn mask_layout(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with("index: ") {
                "index: <layout>".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn tune_golden_on_the_fixed_labelled_set() {
    let run = cmd(&fixtures(), "tune --pairs pairs.jsonl --target-jaccard 0.8");
    run.assert_ok();
    golden("tune.golden.txt", &mask_layout(&run.stdout));
    assert!(run.stdout.contains("recommended: --max-distance "));
    assert!(run
        .stdout
        .contains("index: 1000000 records at max_distance "));
}

#[test]
fn tune_json_has_the_full_grid_and_the_recommendation() {
    let run = cmd(&fixtures(), "tune --pairs pairs.jsonl --json --target-jaccard 0.8 --target-recall 0.9 --records 5000000");
    run.assert_ok();
    let v: Value = run.json();
    assert_eq!(v["pairs"], 46);
    let grid = v["grid"].as_array().expect("grid");
    assert_eq!(
        grid.len(),
        17 * 26,
        "radii 0..=16 by Jaccard 0.50..=1.00 step 0.02"
    );
    let rec = &v["recommended"];
    assert_eq!(rec["meets_min_precision"], true);
    assert!(rec["cell"]["precision"].as_f64().unwrap() >= 0.99);
    // No qualifying cell has a higher recall.
    let best = grid
        .iter()
        .filter(|c| c["precision"].as_f64().unwrap() >= 0.99)
        .map(|c| c["recall"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(rec["cell"]["recall"].as_f64().unwrap(), best);
    assert_eq!(v["layout"]["records"], 5_000_000);
    assert_eq!(
        v["layout"]["max_distance"], rec["cell"]["max_distance"],
        "the layout is planned for the recommended radius"
    );
    let inverse = &v["inverse"];
    assert!(inverse["recall"].as_f64().unwrap() >= 0.9);
    assert!(inverse["layout"]["model_ns_per_query"].as_f64().unwrap() > 0.0);
}

#[test]
fn tsv_and_jsonl_pairs_agree() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl: String = std::fs::read_to_string(fixture("pairs.jsonl"))
        .unwrap()
        .lines()
        .take(12)
        .map(|l| format!("{l}\n"))
        .collect();
    write(dir.path(), "first12.jsonl", jsonl);
    let a = cmd(dir.path(), "tune --pairs first12.jsonl --json");
    let b = neardup(
        dir.path(),
        &["tune", "--pairs", &fixture("pairs.tsv"), "--json"],
    );
    a.assert_ok();
    b.assert_ok();
    let (a, b): (Value, Value) = (a.json(), b.json());
    assert_eq!(a["grid"], b["grid"]);
    assert_eq!(a["recommended"], b["recommended"]);
}

#[test]
fn ids_resolve_against_a_corpus() {
    let run = cmd(
        &fixtures(),
        "tune --pairs truth.jsonl --input corpus.jsonl --json",
    );
    run.assert_ok();
    let v: Value = run.json();
    assert_eq!(v["pairs"], 46);
    let missing = cmd(&fixtures(), "tune --pairs truth.jsonl");
    assert_eq!(missing.code, 3);
    assert_contains(
        &missing.stderr,
        "truth.jsonl:1: side a is id \"art0\": give --input CORPUS or --store PATH",
    );
}

#[test]
fn bad_pairs_files_name_the_file_and_line() {
    let cases = [
        (
            "bad_missing_side.jsonl",
            "bad_missing_side.jsonl:3: missing side b: give \"b\" (its text) or \"b_id\" (its id)",
        ),
        (
            "bad_label.jsonl",
            "bad_label.jsonl:2: \"duplicate\" must be true or false, not a string (\"yes\")",
        ),
        (
            "bad_label.tsv",
            "bad_label.tsv:2: column \"duplicate\" must be true or false (or 1 or 0), not \"maybe\"",
        ),
        ("empty.jsonl", "empty.jsonl: empty file: no pairs"),
    ];
    for (file, message) in cases {
        let run = neardup(&fixtures(), &["tune", "--pairs", file]);
        assert_eq!(run.code, 3, "{file}: {}", run.stdout);
        assert!(run.stderr.contains(message), "{file}: {}", run.stderr);
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "one.tsv", "just one column\n");
    let run = cmd(dir.path(), "tune --pairs one.tsv");
    run.assert_fails(3, "one.tsv:1: missing side b");
    write(
        dir.path(),
        "weight.jsonl",
        "{\"a\": \"x\", \"b\": \"y\", \"duplicate\": true, \"weight\": -1}\n",
    );
    let run = cmd(dir.path(), "tune --pairs weight.jsonl");
    assert_eq!(run.code, 3);
    assert!(run
        .stderr
        .contains("weight.jsonl:1: \"weight\" must be a positive number"));
    write(dir.path(), "bad.png.txt", "");
    let run = neardup(
        dir.path(),
        &[
            "tune",
            "--pairs",
            &fixture("pairs.jsonl"),
            "--plot",
            "out.gif",
        ],
    );
    run.assert_fails(3, "must end in .png or .svg");
}

/// Checks a PNG's chunk structure and CRCs: signature, IHDR first with the size, IEND last.
fn check_png(bytes: &[u8]) -> (u32, u32) {
    fn crc32(data: &[u8]) -> u32 {
        let mut crc = u32::MAX;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let mut at = 8;
    let mut kinds = Vec::new();
    let mut size = (0, 0);
    while at < bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = &bytes[at + 4..at + 8];
        let data = &bytes[at + 8..at + 8 + len];
        let crc = u32::from_be_bytes(bytes[at + 8 + len..at + 12 + len].try_into().unwrap());
        assert_eq!(crc, crc32(&bytes[at + 4..at + 8 + len]), "chunk CRC");
        if kind == b"IHDR" {
            size = (
                u32::from_be_bytes(data[..4].try_into().unwrap()),
                u32::from_be_bytes(data[4..8].try_into().unwrap()),
            );
        }
        kinds.push(String::from_utf8_lossy(kind).into_owned());
        at += 12 + len;
    }
    assert_eq!(at, bytes.len());
    assert_eq!(kinds.first().map(String::as_str), Some("IHDR"));
    assert_eq!(kinds.last().map(String::as_str), Some("IEND"));
    assert!(kinds.iter().any(|k| k == "IDAT"));
    size
}

#[test]
fn plots_are_valid_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = fixture("pairs.jsonl");
    for (env, stem) in [(None, "with"), (Some("none"), "without")] {
        let png = format!("{stem}.png");
        let svg = format!("{stem}.svg");
        let env: Vec<(&str, &str)> = env.map(|v| ("NEARDUP_FONT", v)).into_iter().collect();
        let run = neardup_env(
            dir.path(),
            &["tune", "--pairs", &pairs, "--plot", &png, "--plot", &svg],
            &env,
        );
        run.assert_ok();
        let bytes = std::fs::read(dir.path().join(&png)).expect("png written");
        assert_eq!(check_png(&bytes), (1200, 900));
        let text = std::fs::read_to_string(dir.path().join(&svg)).expect("svg written");
        assert!(text.trim_start().starts_with("<svg"), "{}", &text[..80]);
        assert!(text.trim_end().ends_with("</svg>"));
        assert!(text.contains("<polyline") || text.contains("<path"));
        if stem == "without" {
            assert_contains(&run.stderr, "drawn without text");
            assert!(!text.contains("<text"));
        }
    }
}

#[test]
fn unlabelled_pairs_answer_only_the_inverse_question() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("unlabelled.jsonl");
    let run = neardup(
        dir.path(),
        &[
            "label",
            "--input",
            &fixture("corpus.jsonl"),
            "--sample",
            "25",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    run.assert_ok();
    let refused = cmd(dir.path(), "tune --pairs unlabelled.jsonl");
    assert_eq!(refused.code, 3);
    assert_contains(
        &refused.stderr,
        "unlabelled.jsonl:1: the pair is not labelled",
    );
    let inverse = cmd(
        dir.path(),
        "tune --pairs unlabelled.jsonl --target-jaccard 0.8",
    );
    inverse.assert_ok();
    assert!(inverse.stdout.contains("inverse: to propose 95% of the"));
}

#[test]
fn label_samples_pairs_over_distance_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "label",
        "--input",
        &fixture("corpus.jsonl"),
        "--sample",
        "20",
        "--auto-jaccard",
        "0.6",
        "-o",
        "pairs.jsonl",
    ];
    let run = neardup(dir.path(), &args);
    run.assert_fails(0, "20 pairs from 54 records");
    let text = std::fs::read_to_string(dir.path().join("pairs.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 20);
    let mut last = 0;
    let mut buckets = std::collections::BTreeSet::new();
    for l in &lines {
        let d = l["distance"].as_u64().unwrap();
        assert!(d >= last, "sorted by distance");
        last = d;
        buckets.insert(l["bucket"].to_string());
        assert!(l["duplicate"].is_boolean());
        assert_eq!(
            l["duplicate"].as_bool().unwrap(),
            l["jaccard"].as_f64().unwrap() >= 0.6
        );
        assert!(l["weight"].as_f64().unwrap() >= 1.0);
        assert!(l["a"].as_str().unwrap().len() > 100);
        assert!(l["a_id"].is_string() && l["b_id"].is_string());
    }
    assert!(buckets.len() >= 8, "spread over buckets: {buckets:?}");
    assert!(buckets.contains("\"far\""));
    // The same seed gives the same file.
    let again = neardup(dir.path(), &args);
    assert_eq!(again.code, 0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("pairs.jsonl")).unwrap(),
        text
    );
    // And the file tunes.
    let tune = cmd(dir.path(), "tune --pairs pairs.jsonl");
    tune.assert_ok();
    assert!(tune.stdout.contains("by weight"));
}

#[test]
fn eval_golden_on_hand_made_clusters() {
    let run = cmd(
        &fixtures(),
        "eval --truth truth.jsonl --predicted clusters.jsonl",
    );
    run.assert_ok();
    // 12 duplicates clustered (typo and byline copies), 12 missed, art0-half wrongly merged.
    assert_eq!(
        run.stdout.lines().last(),
        Some("F1=0.6486 P=0.9231 R=0.5000")
    );
    golden("eval.golden.txt", &run.stdout);
    let json = cmd(
        &fixtures(),
        "eval --truth truth.jsonl --predicted clusters.jsonl --json",
    );
    let v: Value = json.json();
    assert_eq!(v["true_positives"], 12.0);
    assert_eq!(v["false_positives"], 1.0);
    assert_eq!(v["wrong_merges"][0]["b_id"], "art0-half");
}

#[test]
fn eval_of_a_dedup_run_reads_merges_and_clusters_alike() {
    let dir = tempfile::tempdir().unwrap();
    let run = neardup(
        dir.path(),
        &[
            "dedup",
            "--jsonl",
            &fixture("corpus.jsonl"),
            "--store",
            "db.sqlite",
            "--out",
            "out",
            "--quiet",
        ],
    );
    run.assert_ok();
    let mut lines = Vec::new();
    for predicted in ["out/merges.jsonl", "out/clusters.jsonl"] {
        let run = neardup(
            dir.path(),
            &[
                "eval",
                "--truth",
                &fixture("truth.jsonl"),
                "--predicted",
                predicted,
            ],
        );
        run.assert_ok();
        let last = run.stdout.lines().last().unwrap().to_owned();
        assert!(last.starts_with("F1=") && last.contains(" P=") && last.contains(" R="));
        lines.push(last);
    }
    assert_eq!(lines[0], lines[1]);
    // Bad predicted lines name the line.
    write(
        dir.path(),
        "bad.jsonl",
        "{\"cluster\": 1, \"members\": [\"a\", \"b\"]}\n{\"x\": 1}\n",
    );
    let bad = neardup(
        dir.path(),
        &[
            "eval",
            "--truth",
            &fixture("truth.jsonl"),
            "--predicted",
            "bad.jsonl",
        ],
    );
    bad.assert_fails(3, "bad.jsonl:2: neither a cluster");
    // Truth without ids is refused with its line.
    let texts = neardup(
        dir.path(),
        &[
            "eval",
            "--truth",
            &fixture("pairs.jsonl"),
            "--predicted",
            "out/merges.jsonl",
        ],
    );
    assert_eq!(texts.code, 3);
    assert_contains(&texts.stderr, "pairs.jsonl:1: eval compares record ids");

    // tune resolves ids against the store (fingerprints and shingle ids), planned for its size.
    let stored = neardup(
        dir.path(),
        &[
            "tune",
            "--pairs",
            &fixture("truth.jsonl"),
            "--store",
            "db.sqlite",
            "--json",
        ],
    );
    stored.assert_ok();
    let from_store: Value = stored.json();
    assert_eq!(from_store["layout"]["records"], 54);
    let corpus = neardup(
        dir.path(),
        &[
            "tune",
            "--pairs",
            &fixture("truth.jsonl"),
            "--input",
            &fixture("corpus.jsonl"),
            "--json",
        ],
    );
    let from_corpus: Value = corpus.json();
    assert_eq!(
        from_store["grid"], from_corpus["grid"],
        "the store keeps what tuning needs"
    );

    // explain on stored ids: no text, but fingerprints, Jaccard and the cluster.
    let explain = cmd(dir.path(), "explain --store db.sqlite --id art0 art0-typo");
    assert_eq!(explain.code, 0, "{}{}", explain.stdout, explain.stderr);
    assert!(explain
        .stdout
        .contains("the store keeps shingle ids, not text"));
    assert!(explain
        .stdout
        .contains("stored       same cluster, survivor art0"));
    let far = cmd(
        dir.path(),
        "explain --store db.sqlite --id art0 site0-a --json",
    );
    assert_eq!(far.code, 1, "{}", far.stderr);
    let v: Value = far.json();
    assert_eq!(v["duplicate"], false);
    assert_eq!(v["same_cluster"], false);
    let missing = cmd(dir.path(), "explain --store db.sqlite --id art0 nope");
    assert_eq!(missing.code, 3);
    assert!(missing.stderr.contains("id \"nope\" is not in store"));
}

fn corpus_text(id: &str) -> String {
    let corpus = std::fs::read_to_string(fixture("corpus.jsonl")).unwrap();
    corpus
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["id"] == id)
        .and_then(|v| v["text"].as_str().map(str::to_owned))
        .expect("id in the corpus")
}

#[test]
fn explain_shows_the_edit_and_the_decision() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", corpus_text("art2"));
    write(dir.path(), "b.txt", corpus_text("art2-typo"));
    write(dir.path(), "c.txt", corpus_text("site2-a"));
    let run = cmd(dir.path(), "explain a.txt b.txt");
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_contains_all(
        &run.stdout,
        &[
            "A            file a.txt: 150 words",
            "fingerprint  A ",
            "index        1000000 records at --max-distance 16",
            "pigeonhole   17 bands for k = 16",
            "in both      2 passages:",
            "only in A    4 shingles in 1 passage:",
            "only in B    4 shingles in 1 passage:",
            "boilerplate  none removed",
            "decision     near-duplicate",
        ],
    );
    let not = cmd(dir.path(), "explain a.txt c.txt");
    assert_eq!(not.code, 1, "{}", not.stderr);
    assert!(not
        .stdout
        .contains("decision     not a duplicate: distance"));
    let strict = cmd(dir.path(), "explain a.txt b.txt --min-jaccard 0.99 --json");
    assert_eq!(strict.code, 1);
    let v: Value = strict.json();
    assert_eq!(v["verdict"]["verdict"], "too_dissimilar");
    assert_eq!(v["shingles"]["only_a"]["count"], 4);
    assert!(!v["index"]["tables"].as_array().unwrap().is_empty());
    let exact = neardup(
        dir.path(),
        &["explain", "The quick brown fox.", "the QUICK brown fox"],
    );
    assert_eq!(exact.code, 0);
    assert!(exact.stdout.contains("decision     duplicate (exact tier)"));
    let short = neardup(
        dir.path(),
        &[
            "explain",
            "one two three",
            "one two four",
            "--min-words",
            "50",
        ],
    );
    short.assert_prints(1, "under --min-words 50");
    let empty = cmd(dir.path(), "explain ... text");
    assert_eq!(empty.code, 3);
}

#[test]
fn explain_removes_a_hosts_learned_boilerplate() {
    let dir = tempfile::tempdir().unwrap();
    let nav = "home news sport weather business culture opinion contact subscribe login";
    let foot = "copyright all rights reserved privacy policy terms of use cookie settings";
    let mut state = 7u64;
    let mut word = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        format!("w{}", (state >> 33) % 5000)
    };
    let mut corpus = String::new();
    let mut bodies = Vec::new();
    for i in 0..25 {
        let body: Vec<String> = (0..80).map(|_| word()).collect();
        let text = format!("{nav} {} {foot}", body.join(" "));
        corpus.push_str(&serde_json::json!({"id": format!("p{i}"), "url": format!("https://example.com/p{i}"), "text": text}).to_string());
        corpus.push('\n');
        bodies.push(text);
    }
    write(dir.path(), "site.jsonl", corpus);
    write(dir.path(), "a.txt", &bodies[0]);
    write(dir.path(), "b.txt", &bodies[1]);
    let run = cmd(
        dir.path(),
        "dedup --jsonl site.jsonl --boilerplate --store db.sqlite --out out --quiet",
    );
    run.assert_ok();
    let run = cmd(
        dir.path(),
        "explain --store db.sqlite --host example.com a.txt b.txt",
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_contains(&run.stdout, "boilerplate A");
    assert_contains(&run.stdout, "\"home news sport weather\"");
    assert_contains(&run.stdout, "jaccard      0.0000: 0 shared");
    let unknown = cmd(
        dir.path(),
        "explain --store db.sqlite --host other.org a.txt b.txt",
    );
    assert_eq!(unknown.code, 3);
    assert!(unknown
        .stderr
        .contains("no boilerplate was learned for host \"other.org\""));
}
