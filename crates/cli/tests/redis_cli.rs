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

#[test]
fn issue_41_runs_sharing_a_redis_store_each_account_for_their_own_input() {
    // Two runs at once on one Redis store (shared by many writers by design), with the same
    // texts under other ids: the second input's records are older, so they displace the
    // first's survivors, and many of the first run's records end up merged by the other
    // run's decisions. Each run's outputs still name each of its records once, in kept.jsonl
    // or merges.jsonl (with the merge-log entry the other run wrote).
    let server = redis_server::RedisServer::start();
    let url = server.url("concurrent");
    let dir = tempfile::tempdir().unwrap();
    let n = 1500usize;
    let text = |i: usize| -> String {
        (0..90)
            .map(|w| format!("w{}", (w * 31 + i * 7919 + w * w * i) % 5000))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (name, prefix, time) in [
        ("a.jsonl", "a", "2026-06-01T00:00:00Z"),
        ("b.jsonl", "b", "2026-01-01T00:00:00Z"),
    ] {
        let body: String = (0..n)
            .map(|i| {
                serde_json::json!({"id": format!("{prefix}{i}"), "body_text": text(i), "first_seen": time})
                    .to_string()
                    + "\n"
            })
            .collect();
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let spawn = |name: &str, out: &str| {
        Command::new(env!("CARGO_BIN_EXE_neardup"))
            .args([
                "dedup",
                name,
                "--out",
                out,
                "--store",
                &url,
                "--batch-size",
                "16",
                "--quiet",
            ])
            .current_dir(dir.path())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn("a.jsonl", "out-a");
    let b = spawn("b.jsonl", "out-b");
    for (run, out, prefix) in [(a, "out-a", "a"), (b, "out-b", "b")] {
        let done = run.wait_with_output().unwrap();
        assert!(
            done.status.success(),
            "{out}: {}",
            String::from_utf8_lossy(&done.stderr)
        );
        let dir = dir.path().join(out);
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        assert_eq!(report["accounting_balanced"], true, "{report}");
        let mut named: Vec<String> = kept_ids(&dir);
        named.extend(merge_pairs(&dir).into_iter().map(|(_, merged)| merged));
        named.retain(|id| id.starts_with(prefix));
        named.sort();
        let mut want: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
        want.sort();
        assert_eq!(named, want, "{out}: each record once in kept or merges");
    }
}
