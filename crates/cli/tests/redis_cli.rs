//! The CLI on a Redis store gives the same outputs as on the embedded store.

#[path = "../../neardup/tests/support/redis_server.rs"]
mod redis_server;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn neardup(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// (kept, merged) pairs of a run's merge log, sorted.
fn merge_pairs(dir: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_to_string(dir.join("merges.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let m: Value = serde_json::from_str(l).unwrap();
            (
                m["kept"].as_str().unwrap().to_owned(),
                m["merged"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    v.sort();
    v
}

fn kept_ids(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string(dir.join("kept.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    v.sort();
    v
}

#[test]
fn dedup_query_and_erase_on_redis_match_the_embedded_store() {
    let server = redis_server::RedisServer::start();
    let url = server.url("clitest");
    let dir = tempfile::tempdir().unwrap();
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/data/debian-copyright.jsonl.gz");
    let ex = example.to_str().unwrap();
    let (code, _, err) = neardup(
        dir.path(),
        &[
            "dedup", "--jsonl", ex, "--out", "sqlite", "--store", "s.db", "--quiet",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = neardup(
        dir.path(),
        &[
            "dedup", "--jsonl", ex, "--out", "redis", "--store", &url, "--quiet",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        kept_ids(&dir.path().join("redis")),
        kept_ids(&dir.path().join("sqlite"))
    );
    assert_eq!(
        merge_pairs(&dir.path().join("redis")),
        merge_pairs(&dir.path().join("sqlite"))
    );

    // A second run on the Redis store finds everything already stored.
    let (code, _, err) = neardup(
        dir.path(),
        &[
            "dedup", "--jsonl", ex, "--out", "redis2", "--store", &url, "--quiet",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("redis2/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["decisions"]["already_stored"], 400);

    // Query and erase through the URL.
    let first = std::fs::read_to_string(dir.path().join("sqlite/kept.jsonl")).unwrap();
    let first: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let (id, text) = (
        first["id"].as_str().unwrap(),
        first["body_text"].as_str().unwrap(),
    );
    let (code, out, err) = neardup(
        dir.path(),
        &["query", "--store", &url, "--text", text, "--json"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(id), "{out}");
    let (code, _, err) = neardup(dir.path(), &["erase", "--store", &url, id]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = neardup(
        dir.path(),
        &["query", "--store", &url, "--text", text, "--json"],
    );
    assert!(!out.contains(&format!("\"{id}\"")), "{out}");
}
