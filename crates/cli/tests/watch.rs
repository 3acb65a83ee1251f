//! `neardup watch` and `--watchlist` on `query` and `dedup`, run as a user would, on real
//! text (translated man pages of this machine, shipped as fixtures).

mod common;

use std::path::Path;

use serde_json::{json, Value};

use common::{assert_contains, cmd, data, lines, report, write};

fn page(lang: &str) -> String {
    std::fs::read_to_string(data(&format!("text/man_{lang}.txt"))).expect("fixture")
}

/// `text` with word `at` replaced.
fn one_word_changed(text: &str, at: usize) -> String {
    let mut words: Vec<&str> = text.split_whitespace().collect();
    words[at] = "qqq";
    words.join(" ")
}

fn jsonl(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

/// A watchlist `w.db` in `dir`: the German, English and Russian pages as `farm`, the
/// Japanese one as `leak`.
fn watchlist(dir: &Path) {
    let farm: Vec<Value> = ["de", "en", "ru"]
        .iter()
        .map(|l| json!({"id": format!("man-{l}"), "text": page(l), "first_seen": "2026-01-01T00:00:00Z"}))
        .collect();
    write(dir, "farm.jsonl", jsonl(&farm));
    write(
        dir,
        "leak.jsonl",
        jsonl(&[json!({"id": "man-ja", "text": page("ja")})]),
    );
    let add = cmd(dir, "watch add --watchlist w.db --class farm farm.jsonl");
    add.assert_ok();
    assert_contains(&add.stderr, "3 records added");
    cmd(dir, "watch add --watchlist w.db --class leak leak.jsonl").assert_ok();
}

#[test]
fn watch_add_list_and_query_grade_copies_by_distance() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    watchlist(d);
    // Adding the same records again changes nothing.
    let again = cmd(d, "watch add --watchlist w.db --class farm farm.jsonl");
    again.assert_ok();
    assert_contains(&again.stderr, "0 records added");
    assert_contains(&again.stderr, "3 there already");

    let list = cmd(d, "watch list --watchlist w.db --json");
    list.assert_ok();
    assert_eq!(
        list.json(),
        json!([{"class": "farm", "records": 3}, {"class": "leak", "records": 1}])
    );

    // A verbatim copy is red; the answer names the watched record and its class.
    write(d, "copy.txt", page("ja"));
    let q = cmd(d, "query --watchlist w.db --file copy.txt --json");
    q.assert_ok();
    let v = q.json();
    assert!(v.get("matches").is_none(), "no store was searched: {v}");
    assert_eq!(
        v["alerts"][0],
        json!({"level": "red", "watched": "man-ja", "class": "leak", "distance": 0, "jaccard": 1.0})
    );
    // One word changed in a page of ~300 words: within orange's 8 bits.
    write(d, "edited.txt", one_word_changed(&page("en"), 40));
    let q = cmd(d, "query --watchlist w.db --file edited.txt");
    q.assert_ok();
    assert_contains(&q.stdout, "man-en");
    assert!(
        q.stdout.contains("orange") || q.stdout.contains("red"),
        "{}",
        q.stdout
    );
    // Bands of one's own: nothing that close.
    let q = cmd(
        d,
        "query --watchlist w.db --file edited.txt --alert-bands exact=0:1",
    );
    assert_eq!(q.code, 1, "{}", q.stdout);
    // Unrelated text raises nothing: exit 1, as grep.
    write(d, "other.txt", page("tr"));
    let q = cmd(d, "query --watchlist w.db --file other.txt --json");
    assert_eq!(q.code, 1);
    assert_eq!(q.json()["alerts"], json!([]));
}

#[test]
fn bad_watch_arguments_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cmd(d, "query --watchlist none.db --text x")
        .assert_fails(3, "watchlist none.db does not exist");
    watchlist(d);
    cmd(d, "query --watchlist w.db --text x --alert-bands red=3:2")
        .assert_fails(3, "not within 0..=1");
    cmd(d, "query --text x --alert-bands red=3").assert_fails(3, "--watchlist");
    cmd(d, "watch add --watchlist w.db farm.jsonl").assert_fails(3, "--class");
    cmd(
        d,
        "dedup --store w.db --watchlist ./w.db --out o farm.jsonl",
    )
    .assert_fails(3, "is the store this command writes to");
    // Another profile than the watchlist's is refused, not read wrongly.
    cmd(d, "query --watchlist w.db --text x --shingle-width 3").assert_fails(3, "watchlist w.db");
    // A record that cannot be added is named; the others are added.
    write(
        d,
        "mixed.jsonl",
        "{\"id\": \"ok\", \"text\": \"a real line of words\"}\n{\"id\": \"bad\", \"text\": 5}\n",
    );
    let add = cmd(d, "watch add --watchlist w.db --class x mixed.jsonl");
    assert_eq!(add.code, 2, "{}", add.stderr);
    assert_contains(&add.stderr, "mixed.jsonl:2");
    assert_contains(&add.stderr, "1 records added");
}

#[test]
fn dedup_writes_alerts_beside_its_outputs_and_loses_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    watchlist(d);
    let input = [
        json!({"id": "in-en", "text": one_word_changed(&page("en"), 40)}),
        json!({"id": "in-ja", "text": page("ja")}),
        json!({"id": "in-tr", "text": page("tr")}),
        json!({"id": "in-ko", "text": page("ko")}),
        json!({"id": "in-bad", "text": ""}),
    ];
    write(d, "in.jsonl", jsonl(&input));
    let run = cmd(d, "dedup --store s.db --out out --watchlist w.db in.jsonl");
    assert_eq!(run.code, 2, "one record is rejected: {}", run.stderr);
    assert_contains(&run.stderr, "2 records raised watchlist alerts");
    let alerts = lines(&d.join("out/alerts.jsonl"));
    let ids: Vec<&str> = alerts.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["in-en", "in-ja"]);
    assert_eq!(alerts[1]["level"], "red");
    assert_eq!(alerts[1]["alerts"][0]["watched"], "man-ja");
    assert_eq!(alerts[1]["alerts"][0]["class"], "leak");
    assert_eq!(alerts[1]["origin"], "in.jsonl:2");
    let r = report(&d.join("out"));
    assert_eq!(r["alerts"]["records"], 2);
    // One word changed: red or orange (2 to 5 bits, by where the word is).
    assert!(["red", "orange"].contains(&alerts[0]["level"].as_str().unwrap()));
    let mut by_level = serde_json::Map::new();
    for a in &alerts {
        let level = a["level"].as_str().unwrap().to_owned();
        let n = by_level.get(&level).and_then(Value::as_u64).unwrap_or(0);
        by_level.insert(level, json!(n + 1));
    }
    assert_eq!(r["alerts"]["by_level"], Value::Object(by_level));
    // Alerts add an output; every record is still kept, merged or rejected.
    assert_eq!(r["kept"], 4);
    assert_eq!(r["rejected"], 1);
    assert_eq!(r["accounting_balanced"], true);

    // Erasure and expiry apply to the watchlist: what is gone alerts no more.
    cmd(d, "erase --store w.db man-ja").assert_ok();
    cmd(
        d,
        "expire --store w.db --class farm --before 2026-06-01T00:00:00Z",
    )
    .assert_ok();
    let rerun = cmd(d, "dedup --store s2.db --out out --watchlist w.db in.jsonl");
    assert_eq!(rerun.code, 2, "{}", rerun.stderr);
    assert!(lines(&d.join("out/alerts.jsonl")).is_empty());
    // A run without a watchlist leaves no stale alerts.jsonl behind.
    cmd(d, "dedup --store s3.db --out out in.jsonl");
    assert!(!d.join("out/alerts.jsonl").exists());
    assert!(report(&d.join("out")).get("alerts").is_none());
}
