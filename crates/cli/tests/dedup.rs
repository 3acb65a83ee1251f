//! `neardup dedup` and the commands around its store, run as a user would.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use common::{
    argv, assert_contains, assert_contains_all, cmd, lines, neardup, report, start, write, Run,
};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/data/debian-copyright.jsonl.gz")
}

/// A paragraph of real-looking prose, distinct per seed.
fn prose(seed: usize) -> String {
    let words = [
        "storm",
        "closes",
        "coastal",
        "road",
        "council",
        "budget",
        "school",
        "river",
        "bridge",
        "police",
        "report",
        "market",
        "prices",
        "harbour",
        "ferry",
        "weather",
        "train",
        "delay",
        "museum",
        "opens",
        "festival",
        "library",
        "repairs",
        "tonight",
        "morning",
        "residents",
    ];
    (0..120)
        .map(|i| words[(i * 7 + seed * 13 + i * i * seed) % words.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn bundled_example_is_deduplicated_and_a_rerun_completes_without_double_merges() {
    let dir = tempfile::tempdir().unwrap();
    let ex = example();
    // `neardup dedup` of the example into the store s.db, writing to `out`, with `extra`.
    let dedup_example = |out: &str, extra: &[&str]| {
        let mut args = vec!["dedup", "--jsonl", ex.to_str().unwrap()];
        args.extend(["--out", out, "--store", "s.db"]);
        args.extend(extra);
        neardup(dir.path(), &args)
    };
    let run = dedup_example("out", &[]);
    run.assert_ok();
    let out = dir.path().join("out");
    let r = report(&out);
    assert_eq!(r["input_records"], 400);
    assert_eq!(r["accounting_balanced"], true);
    let kept = lines(&out.join("kept.jsonl"));
    let merges = lines(&out.join("merges.jsonl"));
    let clusters = lines(&out.join("clusters.jsonl"));
    assert_eq!(kept.len() as u64, r["kept"].as_u64().unwrap());
    assert!(
        merges.len() > 50,
        "the example is full of re-published licences"
    );
    // One entry per merged record; the clusters fused are counted apart from the rules
    // records arrived under, and said in the summary.
    assert_eq!(merges.len() as u64, r["merged"].as_u64().unwrap());
    let fused = r["decisions"]["fused_clusters"].as_u64().unwrap();
    assert!(fused <= r["merged"].as_u64().unwrap());
    assert_contains(&run.stderr, &format!("short near, {fused} fused)"));
    for m in &merges {
        for key in [
            "kept",
            "merged",
            "merged_fingerprint",
            "rule",
            "distance",
            "jaccard",
            "source_urls",
            "at",
        ] {
            assert!(m.get(key).is_some(), "merge entry lacks {key}: {m}");
        }
        assert!(m["jaccard"].as_f64().unwrap() >= 0.7);
    }
    for k in &kept {
        assert!(k["neardup_fingerprint"].as_str().unwrap().len() == 16);
        assert!(k["cluster_size"].as_u64().unwrap() >= 1);
        assert!(k["source_urls"].as_array().is_some());
    }
    let biggest = clusters
        .iter()
        .map(|c| c["members"].as_array().unwrap().len())
        .max()
        .unwrap();
    assert_eq!(biggest as u64, r["largest_group"]["size"].as_u64().unwrap());

    // The same input again: everything is already stored, nothing is merged twice.
    let again = dedup_example("out2", &[]);
    again.assert_ok();
    let r2 = report(&dir.path().join("out2"));
    assert_eq!(r2["decisions"]["already_stored"], 400);
    assert_eq!(r2["kept"], r["kept"]);
    assert_eq!(
        lines(&dir.path().join("out2/merges.jsonl")).len(),
        merges.len()
    );
    assert_eq!(r2["store"]["records"], 400);

    // Another profile on the same store is refused with advice.
    let other = dedup_example("o3", &["--profile", "blake2b"]);
    other.assert_fails(3, "fingerprint profile");
}

#[test]
fn bad_records_go_to_rejects_with_file_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let good = prose(1);
    let input = format!(
        "{}\n{{bad json\n{}\n{}\n{}\n{}\n",
        serde_json::json!({"id": "a", "text": good, "url": "https://a.example/1", "first_seen": "2026-01-01T00:00:00Z"}),
        serde_json::json!({"id": "b"}),
        serde_json::json!({"id": "c", "text": prose(2), "first_seen": "last tuesday"}),
        serde_json::json!({"id": "a", "text": prose(3)}),
        serde_json::json!({"id": "d", "text": good.replacen("storm", "gale", 1), "url": "https://b.example/2", "first_seen": "2025-12-01T00:00:00Z"}),
    );
    write(dir.path(), "in.jsonl", input);
    let run = cmd(dir.path(), "dedup --jsonl in.jsonl --out out --store s.db");
    assert_eq!(run.code, 2, "done, some records rejected: {}", run.stderr);
    let out = dir.path().join("out");
    let rejects = lines(&out.join("rejects.jsonl"));
    let reasons: Vec<(u64, String)> = rejects
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert!(reasons[0].0 == 2 && reasons[0].1.contains("malformed JSON"));
    assert!(reasons[1].0 == 3 && reasons[1].1.contains("missing text"));
    assert!(reasons[2].0 == 4 && reasons[2].1.contains("first_seen"));
    assert!(reasons[3].0 == 5 && reasons[3].1.starts_with("duplicate id with different text"));
    assert!(rejects.iter().all(|r| r["file"] == "in.jsonl"));
    assert_eq!(report(&out)["accounting_balanced"], true);
    // The near-duplicate seen earlier survives and keeps both URLs and the earliest time.
    let kept = lines(&out.join("kept.jsonl"));
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["id"], "d");
    assert_eq!(kept[0]["first_seen"], "2025-12-01T00:00:00Z");
    assert_eq!(kept[0]["source_urls"].as_array().unwrap().len(), 2);

    // --strict stops at the first bad line and names it.
    let strict = cmd(
        dir.path(),
        "dedup --jsonl in.jsonl --out o2 --store t.db --strict",
    );
    strict.assert_fails(3, "in.jsonl:2: malformed JSON");
}

#[test]
fn directories_of_html_and_text_compressed_input_query_and_erase() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("news")).unwrap();
    let body = prose(4);
    let page = |b: &str| {
        format!("<html><head><script>var x = 1;</script></head><body><nav>Home News Sport</nav><article><p>{b}</p></article><footer>(c) Example</footer></body></html>")
    };
    write(&site, "news/a.html", page(&body));
    write(
        &site,
        "news/b.html",
        page(&body.replacen("ferry", "boat", 1)),
    );
    write(&site, "c.txt", prose(5));
    write(&site, "ignored.pdf", "not text");
    let run = cmd(dir.path(), "dedup site --out out --store s.db");
    run.assert_ok();
    let r = report(&dir.path().join("out"));
    assert_eq!(r["input_records"], 3);
    assert_eq!(r["merged"], 1);
    // Throughput of text, and of the input's bytes (markup and all: the pages' bytes are
    // more than their text's; files the reader skips are not input).
    let files: u64 = ["news/a.html", "news/b.html", "c.txt"]
        .iter()
        .map(|f| std::fs::metadata(site.join(f)).unwrap().len())
        .sum();
    assert_eq!(r["input_bytes"], files);
    let text = r["text_bytes"].as_u64().unwrap();
    assert!(text > 1000 && text < files, "{text} of {files}");
    assert!(r["input_mb_per_s"].as_f64().unwrap() >= r["throughput_mb_per_s"].as_f64().unwrap());
    let merges = lines(&dir.path().join("out/merges.jsonl"));
    assert_eq!(merges[0]["kept"], "news/a.html");
    assert_eq!(merges[0]["merged"], "news/b.html");

    // Query finds the stored page from its text; exit 1 when nothing matches.
    let q = neardup(
        dir.path(),
        &["query", "--store", "s.db", "--text", &body, "--json"],
    );
    q.assert_ok();
    assert!(q.stdout.contains("news/a.html"));
    let none = neardup(
        dir.path(),
        &["query", "--store", "s.db", "--text", &prose(9)],
    );
    assert_eq!(none.code, 1);
    // Erasure: gone from the index, the exact tier and the merge log.
    let e = cmd(dir.path(), "erase --store s.db news/a.html");
    e.assert_ok();
    let q = neardup(
        dir.path(),
        &["query", "--store", "s.db", "--text", &body, "--json"],
    );
    assert!(!q.stdout.contains("news/a.html"), "{}", q.stdout);

    // Compressed JSONL in, unknown compression named.
    let jsonl = format!("{}\n", serde_json::json!({"id": "z", "text": prose(6)}));
    let zst = zstd_compress(jsonl.as_bytes());
    write(dir.path(), "in.jsonl.zst", zst);
    write(dir.path(), "in.jsonl.bz2", b"BZh9...");
    let run = cmd(
        dir.path(),
        "dedup --jsonl in.jsonl.zst in.jsonl.bz2 --out o2 --store t.db",
    );
    assert_eq!(run.code, 2, "the .bz2 file is rejected: {}", run.stderr);
    let r = report(&dir.path().join("o2"));
    assert_eq!(r["kept"], 1);
    let rejects = lines(&dir.path().join("o2/rejects.jsonl"));
    assert!(rejects[0]["reason"]
        .as_str()
        .unwrap()
        .contains("unknown compression .bz2"));
}

fn zstd_compress(data: &[u8]) -> Vec<u8> {
    let out = Command::new("zstd")
        .args(["-q", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().expect("stdin").write_all(data)?;
            child.wait_with_output()
        });
    match out {
        Ok(o) if o.status.success() => o.stdout,
        // No zstd tool: a zstd frame holding the data raw (a valid "raw block" frame).
        _ => raw_zstd_frame(data),
    }
}

/// A minimal valid zstd frame with the data in one raw block (RFC 8878), so the test does not
/// depend on the zstd command-line tool.
fn raw_zstd_frame(data: &[u8]) -> Vec<u8> {
    assert!(data.len() < (1 << 21));
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD];
    // Frame header: single segment, 4-byte content size.
    f.push(0b1010_0000);
    f.extend_from_slice(&(data.len() as u32).to_le_bytes());
    // Block header: last block, raw, size.
    let header = 1u32 | ((data.len() as u32) << 3);
    f.extend_from_slice(&header.to_le_bytes()[..3]);
    f.extend_from_slice(data);
    f
}

#[test]
fn kept_lines_are_the_input_objects_with_the_cluster_keys_set_once() {
    let dir = tempfile::tempdir().unwrap();
    let a = prose(1);
    let b = format!("{a} Updated.");
    // Key order, escapes, unicode, nested values and spacing as written; an input copy of a
    // key kept.jsonl sets is replaced, never duplicated.
    let first = format!(
        "{{\"id\":\"a\",\"cluster_size\":99,\"url\":\"https://x.example/a\",\"body_text\":{}}}",
        serde_json::to_string(&a).unwrap()
    );
    let input = format!(
        "{}\n{}\n{{ \"id\" : \"c\", \"body_text\" : {}, \"meta\": {{\"n\": [1, 2.5e3, null]}}, \"note\": \"caf\\u00e9 \\\"q\\\"\" }}\n",
        first,
        serde_json::json!({"id": "b", "url": "https://y.example/b", "body_text": b, "source_urls": ["stale"]}),
        serde_json::to_string(&prose(2)).unwrap(),
    );
    write(dir.path(), "in.jsonl", input);
    let run = cmd(
        dir.path(),
        "dedup --jsonl in.jsonl --out out --store s.db --quiet",
    );
    run.assert_ok();
    let raw = std::fs::read_to_string(dir.path().join("out/kept.jsonl")).unwrap();
    let kept: Vec<&str> = raw.lines().collect();
    assert_eq!(kept.len(), 2, "{raw}");
    assert_eq!(raw.matches("\"cluster_size\"").count(), 2, "{raw}");
    assert_eq!(raw.matches("\"source_urls\"").count(), 2, "{raw}");
    let first: Value = serde_json::from_str(kept[0]).unwrap();
    assert_eq!(first["id"], "a");
    assert_eq!(first["cluster_size"], 2);
    assert_eq!(
        first["source_urls"],
        serde_json::json!(["https://x.example/a", "https://y.example/b"])
    );
    // The first record's own cluster_size is left out, its other members kept as written,
    // in their order.
    assert!(
        kept[0].starts_with("{\"id\":\"a\",\"url\":\"https://x.example/a\",\"body_text\":"),
        "{}",
        kept[0]
    );
    // The third record is written as read, with the added keys after its own.
    assert!(
        kept[1].starts_with("{ \"id\" : \"c\", \"body_text\" : "),
        "{}",
        kept[1]
    );
    assert!(kept[1]
        .contains("\"meta\": {\"n\": [1, 2.5e3, null]}, \"note\": \"caf\\u00e9 \\\"q\\\"\","));
    let third: Value = serde_json::from_str(kept[1]).unwrap();
    assert_eq!(third["note"], "café \"q\"");
    assert_eq!(third["cluster_size"], 1);
}

/// A site's navigation bar: 20 words a host's pages share.
const TEMPLATE: &str = "home news sport weather contact about privacy terms subscribe login \
                        register search archive topics latest popular newsletter follow share print";

/// Asserts that the report `r` names one host that learned boilerplate: big.example, from
/// its 20 pages, with at least 10 shingles of its template. Returns that host's entry.
#[track_caller]
fn assert_only_big_example_learned_boilerplate(r: &Value) -> &Value {
    let hosts = r["boilerplate_hosts"].as_array().expect("a list");
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    assert_eq!(hosts[0]["host"], "big.example");
    assert_eq!(hosts[0]["pages_learned_from"], 20);
    assert!(
        hosts[0]["boilerplate_shingles"].as_u64().unwrap() >= 10,
        "the template's shingles: {hosts:?}"
    );
    &hosts[0]
}

/// Runs `neardup dedup` with the defaults on `lines` in `dir` and answers its report.
/// A run with boilerplate learning on (`--boilerplate`) over `lines`.
fn dedup_lines(dir: &Path, lines: &[String]) -> Value {
    write(dir, "in.jsonl", lines.join("\n"));
    let run = cmd(
        dir,
        "dedup --jsonl in.jsonl --out out --store s.db -q --boilerplate",
    );
    run.assert_ok();
    report(&dir.join("out"))
}

#[test]
fn boilerplate_is_learned_from_every_page_of_a_host_that_reaches_the_minimum() {
    // 20 pages of big.example (the minimum) with a shared template, interleaved with 19
    // pages of small.example with the same template: big.example's first 19 pages are seen
    // before it qualifies, and must count all the same (with only its 20th counted, the
    // template, on fewer than --boilerplate-min-count pages, would not be learned).
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for i in 0..20 {
        for (host, n) in [("big.example", i), ("small.example", 100 + i)] {
            if host == "small.example" && i == 19 {
                continue;
            }
            let body = format!("{TEMPLATE} {}", prose(n + 1));
            lines.push(
                serde_json::json!({"id": format!("{host}/{i}"),
                "url": format!("https://{host}/{i}"), "body_text": body})
                .to_string(),
            );
        }
    }
    let r = dedup_lines(dir.path(), &lines);
    let host = assert_only_big_example_learned_boilerplate(&r);
    // The template's 20 words of each page's 140 went before fingerprinting, and the
    // report counts them for the host.
    let share = host["share_of_shingles_removed"].as_f64().unwrap();
    assert!((0.05..0.3).contains(&share), "{host:?}");
}

#[test]
fn a_crawl_mirrored_to_disk_learns_boilerplate_per_host_directory() {
    // wget's layout: www.big.example/ (20 pages with a template), and 20 pages directly
    // under news/, whose name is not a host's: only big.example learns boilerplate.
    let dir = tempfile::tempdir().unwrap();
    let page = |n: usize| {
        format!(
            "<html><body><div class=menu>{TEMPLATE}</div><div class=story><p>{}</p></div></body></html>",
            prose(n + 1)
        )
    };
    for i in 0..20 {
        for (sub, n) in [("www.big.example/docs", i), ("news", 100 + i)] {
            let path = dir.path().join("mirror").join(sub);
            std::fs::create_dir_all(&path).unwrap();
            write(&path, &format!("{i}.html"), page(n));
        }
    }
    let run = cmd(
        dir.path(),
        "dedup mirror --out out --store s.db -q --boilerplate",
    );
    run.assert_ok();
    let r = report(&dir.path().join("out"));
    assert_eq!(r["input_records"], 40);
    assert_only_big_example_learned_boilerplate(&r);
}

#[test]
fn pages_that_repeat_a_page_byte_for_byte_count_for_boilerplate() {
    // big.example: 5 pages with a template, 5 byte-for-byte copies of the first of them
    // (the boilerplate pass counts those with the first page's shingles instead of
    // analysing them again) and 10 pages without it. The template is on 10 pages, the
    // minimum: learned only if every copy counts. The first page's own text is on 6, too
    // few to be boilerplate.
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    let page = |i: usize, body: String| {
        serde_json::json!({"id": format!("p{i}"), "url": format!("https://big.example/{i}"),
            "body_text": body})
        .to_string()
    };
    for i in 0..20 {
        let body = match i {
            0..5 => format!("{TEMPLATE} {}", prose(i + 1)),
            5..10 => format!("{TEMPLATE} {}", prose(1)),
            _ => prose(i + 1),
        };
        lines.push(page(i, body));
    }
    let report = dedup_lines(dir.path(), &lines);
    assert_eq!(report["decisions"]["exact"], 5, "{report}");
    let hosts = report["boilerplate_hosts"]
        .as_array()
        .expect("a list")
        .clone();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    assert_eq!(hosts[0]["pages_learned_from"], 20);
    // The template's 17 shingles (20 words), and none of the first page's own.
    let learned = hosts[0]["boilerplate_shingles"].as_u64().unwrap();
    assert!((10..=17).contains(&learned), "{hosts:?}");
}

#[test]
fn kept_records_are_the_same_whether_the_input_is_mapped_or_read() {
    // Plain files are mapped and kept objects are written from the input at the end; .gz
    // files and --no-mmap read the input and spool copies. The outputs must not differ.
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for i in 0..40usize {
        let body = if i % 4 == 3 {
            format!("{} extra words here", prose(i - 1))
        } else {
            prose(i)
        };
        // Keys in an order serde_json would not write them, so objects kept as read show.
        // No first_seen: kept.jsonl sets that key, so an object holding it is rewritten;
        // every fifth record holds another such key.
        let own = if i % 5 == 0 {
            ",\"cluster_size\":99"
        } else {
            ""
        };
        lines.push(format!(
            "  {{\"id\":\"r{i}\",\"url\":\"https://h{}.example/{i}\",\"body_text\":\"{body}\"{own}}}  ",
            i % 3
        ));
    }
    let text = lines.join("\n") + "\n";
    write(dir.path(), "in.jsonl", &text);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
    write(dir.path(), "in.jsonl.gz", gz.finish().unwrap());
    let mut kept = Vec::new();
    for (name, input, extra) in [
        ("mapped", "in.jsonl", None),
        ("read", "in.jsonl.gz", None),
        ("streamed", "in.jsonl", Some("--no-mmap")),
    ] {
        let store = format!("{name}.db");
        let mut args = vec![
            "dedup", "--jsonl", input, "--out", name, "--store", &store, "-q",
        ];
        args.extend(extra);
        let run = neardup(dir.path(), &args);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let k = std::fs::read_to_string(dir.path().join(name).join("kept.jsonl")).unwrap();
        assert!(k.lines().count() >= 20, "{name}: {k}");
        // Records without a first_seen are stamped with the time of their run.
        let k: Vec<Value> = k
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).expect("a JSON line");
                v["first_seen"] = Value::Null;
                v
            })
            .collect();
        kept.push((
            k,
            std::fs::read_to_string(dir.path().join(name).join("kept.jsonl")).unwrap(),
        ));
    }
    assert_eq!(kept[0].0, kept[1].0, "mapped and read inputs");
    assert_eq!(kept[0].0, kept[2].0, "mapped and streamed inputs");
    let raw = &kept[0].1;
    assert!(
        raw.contains("{\"id\":\"r1\",\"url\""),
        "objects as read: {raw}"
    );
    assert!(
        !raw.contains("\"cluster_size\":99"),
        "the input's own value is replaced"
    );
}

#[test]
fn kept_lines_follow_the_input_order_over_many_render_chunks() {
    // kept.jsonl is rendered in chunks of spool lines while a writer thread writes the
    // chunks before them: thousands of survivors must still come out in input order, each
    // once, the copies among them left out.
    let dir = tempfile::tempdir().unwrap();
    let word = |mut x: u64| {
        let mut w = String::new();
        for _ in 0..7 {
            w.push((b'a' + (x % 26) as u8) as char);
            x /= 26;
        }
        w
    };
    let body = |i: u64| {
        (0..60u64)
            .map(|j| word((i * 1_000_003 + j * 7_919).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut text = String::new();
    let mut expected = Vec::new();
    for i in 0..5000u64 {
        // Every seventh record copies the one three before it (ids padded: of two copies
        // without a first-seen time, the smaller id survives).
        let copy = i % 7 == 6;
        let b = if copy { body(i - 3) } else { body(i) };
        if !copy {
            expected.push(format!("r{i:05}"));
        }
        text += &format!(
            "{{\"id\":\"r{i:05}\",\"url\":\"https://h{}.example/{i}\",\"body_text\":\"{b}\"}}\n",
            i % 50
        );
    }
    write(dir.path(), "in.jsonl", text);
    let run = cmd(
        dir.path(),
        "dedup --jsonl in.jsonl --out out --store s.db -q",
    );
    run.assert_ok();
    let kept: Vec<String> = lines(&dir.path().join("out/kept.jsonl"))
        .iter()
        .map(|v| v["id"].as_str().expect("an id").to_owned())
        .collect();
    assert_eq!(kept.len(), expected.len());
    assert_eq!(kept, expected);
}

#[test]
fn a_batch_run_killed_mid_way_leaves_a_store_that_a_rerun_completes() {
    // Batch runs commit through a rollback journal (SqliteStore::open_bulk): a kill -9 can
    // land mid-commit and leave a hot journal, which the next open must roll back. The
    // rerun then completes the work: every record stored once, no record merged twice.
    let dir = tempfile::tempdir().unwrap();
    let n = 6000usize;
    let mut input = String::new();
    for i in 0..n {
        // Pairs: record 2k+1 is record 2k with one word changed.
        let mut text = prose(i / 2);
        if i % 2 == 1 {
            text.push_str(" amended");
        }
        input.push_str(&serde_json::json!({"id": format!("r{i}"), "body_text": text}).to_string());
        input.push('\n');
    }
    write(dir.path(), "in.jsonl", input);
    let line = |out: &str| {
        format!("dedup --jsonl in.jsonl --out {out} --store s.db --batch-size 64 --quiet")
    };
    let mut child = start(
        dir.path(),
        &argv(&line("out1")),
        Stdio::inherit(),
        Stdio::null(),
    );
    // Kill it once a good part of the input is committed (the store's file grows with
    // each commit), not before the first commit.
    let db = dir.path().join("s.db");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let killed = loop {
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        if std::fs::metadata(&db).is_ok_and(|m| m.len() > 600_000) {
            child.kill().unwrap();
            child.wait().unwrap();
            break true;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run made no progress"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(
        killed,
        "the run finished before it could be killed: make the input larger"
    );
    let stored_before: i64 = rusqlite_count(&db);
    assert!(
        stored_before > 0 && (stored_before as usize) < n,
        "{stored_before}"
    );

    let rerun = cmd(dir.path(), &line("out2"));
    rerun.assert_ok();
    let r = report(&dir.path().join("out2"));
    assert_eq!(r["accounting_balanced"], true);
    assert_eq!(r["input_records"], n);
    assert_eq!(r["store"]["records"], n);
    assert_eq!(r["decisions"]["already_stored"], stored_before);
    // Every record is kept or merged exactly once over both runs: the merge log names each
    // merged record once, and the second run's outputs cover the whole input.
    let merges = lines(&dir.path().join("out2/merges.jsonl"));
    let mut merged: Vec<&str> = merges
        .iter()
        .map(|m| m["merged"].as_str().unwrap())
        .collect();
    let count = merged.len();
    merged.sort_unstable();
    merged.dedup();
    assert_eq!(merged.len(), count, "a record was merged twice");
    assert_eq!(
        r["kept"].as_u64().unwrap() + r["merged"].as_u64().unwrap(),
        n as u64
    );
    assert_eq!(r["merged"].as_u64().unwrap() as usize, count);
    assert!(count >= n / 2 - 10, "the pairs were not merged: {count}");
    let ok: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

fn rusqlite_count(db: &Path) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap()
}

/// Waits until `command` holds the writer lock of the store at `store` (its lock file
/// names it).
fn wait_for_lock(store: &Path, command: &str) {
    let mut lock = store.as_os_str().to_owned();
    lock.push(".lock");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.starts_with(command)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{command} never took the lock of {}",
            store.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Starts the command `line` in `dir` in the background, its stdout dropped and its stderr
/// going to `stderr`, and waits until it holds the store `s.db` there (until its lock file
/// names it).
fn start_holding_store(dir: &Path, line: &str, stderr: Stdio) -> Child {
    let child = start(dir, &argv(line), Stdio::null(), stderr);
    let command = line.split_whitespace().next().expect("a command");
    wait_for_lock(&dir.join("s.db"), &format!("neardup {command}"));
    child
}

#[test]
fn a_second_run_on_a_store_waits_for_the_first_and_both_account_for_their_input() {
    // One process writes to a store file at a time: a short run started while a long run
    // writes says it waits, waits, and then deduplicates against everything the long run
    // stored. Each run's outputs account for its own input.
    let dir = tempfile::tempdir().unwrap();
    let n = 6000usize;
    let text_of = |m: usize| format!("{} {m}", prose(m));
    let mut input = String::new();
    for i in 0..n {
        let mut text = text_of(i / 2);
        if i % 2 == 1 {
            text.push_str(" amended");
        }
        let url = format!("https://site{}.example/r{i}", i % 40);
        let line = serde_json::json!({"id": format!("r{i}"), "url": url, "body_text": text});
        input.push_str(&line.to_string());
        input.push('\n');
    }
    write(dir.path(), "in.jsonl", input);
    let long = start_holding_store(
        dir.path(),
        "dedup in.jsonl --out out-long --store s.db --batch-size 32",
        Stdio::piped(),
    );
    let line = serde_json::json!({"id": "s0", "body_text": text_of(7)});
    write(dir.path(), "short.jsonl", format!("{line}\n"));
    // Refused at once with --no-wait, naming the holder (unless the long run just ended).
    let refused = cmd(
        dir.path(),
        "dedup short.jsonl --out out-refused --store s.db --no-wait",
    );
    let short = cmd(dir.path(), "dedup short.jsonl --out out-short --store s.db");
    let long = long.wait_with_output().unwrap();
    assert!(
        long.status.success(),
        "{}",
        String::from_utf8_lossy(&long.stderr)
    );
    short.assert_ok();
    if refused.code != 0 {
        assert_eq!(refused.code, 5, "{}", refused.stderr);
        assert_contains(&refused.stderr, "s.db is in use by neardup dedup (pid ");
        assert_contains(&short.stderr, "is in use by neardup dedup (pid ");
        assert_contains(&short.stderr, "waiting for it to finish");
    }
    let r = report(&dir.path().join("out-long"));
    assert_eq!(r["accounting_balanced"], true);
    assert_eq!(r["input_records"], n);
    let kept = lines(&dir.path().join("out-long/kept.jsonl")).len() as u64;
    let merges = lines(&dir.path().join("out-long/merges.jsonl"));
    assert_eq!(kept, r["kept"].as_u64().unwrap());
    assert_eq!(merges.len() as u64, r["merged"].as_u64().unwrap());
    assert_eq!(kept + merges.len() as u64, n as u64);
    // The short run came after: its copy of r14 is an exact duplicate of it.
    let merges = lines(&dir.path().join("out-short/merges.jsonl"));
    assert_eq!(merges.len(), 1, "{merges:?}");
    assert_eq!(merges[0]["merged"], "s0");
    assert_eq!(merges[0]["rule"], "exact");
}

#[test]
fn issue_41_a_repeated_id_is_rejected_naming_the_first_and_every_record_is_accounted_for() {
    let dir = tempfile::tempdir().unwrap();
    let a = prose(1);
    let b = prose(2);
    let records = [
        serde_json::json!({"id": "a", "body_text": a}),
        serde_json::json!({"id": "b", "body_text": b}),
        // A near copy of a: merged into it.
        serde_json::json!({"id": "a2", "body_text": a.replacen("storm", "gale", 1)}),
        // The kept record again, the merged record again, and a's id over other text.
        serde_json::json!({"id": "a", "body_text": a}),
        serde_json::json!({"id": "a2", "body_text": a.replacen("storm", "gale", 1)}),
        serde_json::json!({"id": "a", "body_text": prose(3)}),
    ];
    let input: String = records.iter().map(|r| format!("{r}\n")).collect();
    write(dir.path(), "in.jsonl", input);
    let args = ["dedup", "in.jsonl", "--out", "out", "--store", "s.db"];
    for run_number in 0..2 {
        let run = neardup(dir.path(), &args);
        assert_eq!(run.code, 2, "run {run_number}: {}", run.stderr);
        let out = dir.path().join("out");
        let r = report(&out);
        assert_eq!(r["accounting_balanced"], true, "{r}");
        assert_eq!(
            (r["kept"].as_u64(), r["merged"].as_u64()),
            (Some(2), Some(1)),
            "{r}"
        );
        assert_eq!(r["rejected"], 3);
        assert_eq!(r["decisions"]["duplicate_ids"], 3);
        let rejects = lines(&out.join("rejects.jsonl"));
        let got: Vec<(u64, &str, &str)> = rejects
            .iter()
            .map(|r| {
                (
                    r["line"].as_u64().unwrap(),
                    r["id"].as_str().unwrap(),
                    r["reason"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!((got[0].0, got[0].1), (4, "a"));
        assert!(
            got[0]
                .2
                .starts_with("duplicate id \"a\": the same record as in.jsonl:1"),
            "{}",
            got[0].2
        );
        assert_eq!((got[1].0, got[1].1), (5, "a2"));
        assert!(
            got[1].2.contains("the same record as in.jsonl:3"),
            "{}",
            got[1].2
        );
        assert_eq!((got[2].0, got[2].1), (6, "a"));
        assert!(
            got[2].2.starts_with(
                "duplicate id with different text: \"a\" was first used by in.jsonl:1"
            ),
            "{}",
            got[2].2
        );
        // Each merged record is in merges.jsonl once; the kept ones in kept.jsonl once.
        let merges = lines(&out.join("merges.jsonl"));
        assert_eq!(merges.len(), 1, "run {run_number}: {merges:?}");
        assert_eq!(merges[0]["merged"], "a2");
        let kept: Vec<String> = lines(&out.join("kept.jsonl"))
            .iter()
            .map(|k| k["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(kept, ["a", "b"]);
    }
    // The first text of "a" stays in the store: a query by it finds a.
    let stored: String = rusqlite::Connection::open(dir.path().join("s.db"))
        .unwrap()
        .query_row("SELECT count(*) FROM records", [], |r| r.get::<_, i64>(0))
        .map(|n| n.to_string())
        .unwrap();
    assert_eq!(stored, "3");
}

#[test]
fn issue_41_exit_codes_follow_the_documented_table() {
    let dir = tempfile::tempdir().unwrap();
    // A usage error is an error (3), not "some records rejected" (2).
    let run = cmd(dir.path(), "dedup --no-such-flag");
    assert_eq!(run.code, 3, "{}", run.stderr);
    // Help documents the table and exits 0.
    let help = cmd(dir.path(), "dedup --help");
    assert_eq!(help.code, 0);
    assert_contains_all(
        &help.stdout,
        &[
            "Exit codes:",
            "2  done, but some records were rejected",
            "5  the store is in use",
        ],
    );
    // A clean run is 0; --strict makes a reject an error.
    let good = serde_json::json!({"id": "a", "body_text": prose(1)});
    let dup = serde_json::json!({"id": "a", "body_text": prose(1)});
    write(dir.path(), "ok.jsonl", format!("{good}\n"));
    write(dir.path(), "dup.jsonl", format!("{good}\n{dup}\n"));
    cmd(dir.path(), "dedup ok.jsonl --out o1 --store s1.db").assert_ok();
    let strict = "dedup dup.jsonl --out o2 --store s2.db --strict";
    cmd(dir.path(), strict).assert_fails(3, "dup.jsonl:2: duplicate id");
}

#[test]
fn issue_41_a_busy_store_is_refused_with_no_wait_naming_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_holding_store(
        dir.path(),
        "serve --store s.db --listen 127.0.0.1:0",
        Stdio::null(),
    );
    let good = serde_json::json!({"id": "a", "body_text": prose(1)});
    write(dir.path(), "in.jsonl", format!("{good}\n"));
    let run = cmd(dir.path(), "dedup in.jsonl --out o --store s.db --no-wait");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "s.db is in use by neardup serve (pid {}",
            server.id()
        )),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("o/report.json").exists());
    // Once the server is gone, the same run goes through.
    let run = cmd(dir.path(), "dedup in.jsonl --out o --store s.db --no-wait");
    run.assert_ok();
}

/// A chain of pages: each differs from the one before it in four more words, so neighbours
/// verify (Jaccard about 0.92) and the ends do not (under 0.5).
fn chain(links: usize) -> Vec<String> {
    let base: Vec<String> = (0..400u64)
        .map(|i| format!("w{}", (i * 2_654_435_761) % 20_011))
        .collect();
    (0..links)
        .map(|l| {
            let mut words = base.clone();
            for k in 0..l * 4 {
                let at = (k * 37 + 11) % words.len();
                words[at] = format!("edit{k}");
            }
            words.join(" ")
        })
        .collect()
}

#[test]
fn issue_36_single_linkage_chains_are_reported_and_pairs_listed() {
    let dir = tempfile::tempdir().unwrap();
    let input: String = chain(10)
        .iter()
        .enumerate()
        .map(|(i, text)| {
            serde_json::json!({"id": format!("c{i}"), "body_text": text}).to_string() + "\n"
        })
        .collect();
    write(dir.path(), "in.jsonl", input);
    let run = |linkage: &str, floor: &str| -> (Run, Value) {
        let out = format!("out-{linkage}-{floor}");
        let run = neardup(
            dir.path(),
            &[
                "dedup",
                "in.jsonl",
                "--out",
                &out,
                "--store",
                &format!("{linkage}-{floor}.db"),
                "--linkage",
                linkage,
                "--chain-floor",
                floor,
                "--pairs",
            ],
        );
        run.assert_ok();
        let r = report(&dir.path().join(&out));
        (run, r)
    };
    // Pure connected components: the whole chain in one group, reported.
    let (single, r) = run("single", "0");
    assert_eq!(r["rule"]["linkage"], "single");
    assert_eq!(r["kept"], 1, "one chain, one cluster: {r}");
    let check = &r["cluster_check"];
    assert!(check["pairs_below_0_5"].as_u64().unwrap() > 0, "{check}");
    let groups = check["suspicious_groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{check}");
    assert_eq!(groups[0]["size"], 10);
    assert!(groups[0]["weakest_pairs"][0]["jaccard"].as_f64().unwrap() < 0.5);
    assert_eq!(r["largest_group"]["suspicious"], true);
    assert_contains(&single.stderr, "is suspicious");
    // Every neighbouring pair was verified, and is listed once with its scores.
    let pairs = lines(&dir.path().join("out-single-0/pairs.jsonl"));
    for i in 1..10 {
        let (a, b) = (format!("c{i}"), format!("c{}", i - 1));
        let p = pairs
            .iter()
            .find(|p| p["a"] == a.as_str() && p["b"] == b.as_str())
            .unwrap_or_else(|| panic!("{a} ~ {b} missing: {pairs:?}"));
        assert!(p["jaccard"].as_f64().unwrap() >= 0.8, "{p}");
        assert_eq!(p["rule"], "simhash+jaccard");
    }
    assert!(pairs.iter().all(|p| p["jaccard"].as_f64().unwrap() >= 0.8));

    // The default chain floor cuts the chain before it holds a pair under 0.5.
    let (floored, r) = run("single", "0.5");
    assert!(r["kept"].as_u64().unwrap() > 1, "{r}");
    assert_eq!(r["cluster_check"]["pairs_below_0_5"], 0, "{r}");
    assert!(
        !floored.stderr.contains("under Jaccard 0.5"),
        "{}",
        floored.stderr
    );

    // Guarded linkage keeps the chain in groups whose pairs verify: nothing suspicious.
    let (guarded, r) = run("guarded", "0.5");
    assert!(r["kept"].as_u64().unwrap() > 1, "{r}");
    assert_eq!(r["cluster_check"]["pairs_below_0_5"], 0, "{r}");
    assert_eq!(
        r["cluster_check"]["suspicious_groups"],
        serde_json::json!([])
    );
    assert!(!guarded.stderr.contains("suspicious"), "{}", guarded.stderr);
    // The same verified pairs, whatever the linkage made of them.
    assert_eq!(
        lines(&dir.path().join("out-guarded-0.5/pairs.jsonl")).len(),
        pairs.len()
    );
    // Without --pairs, no pairs.jsonl (an old one is removed).
    let again = cmd(
        dir.path(),
        "dedup in.jsonl --out out-single-0 --store single-0.db",
    );
    again.assert_ok();
    assert!(!dir.path().join("out-single-0/pairs.jsonl").exists());
}

#[test]
fn issue_36_a_store_decided_under_the_old_defaults_is_told_they_changed() {
    let dir = tempfile::tempdir().unwrap();
    let line = |id: &str, seed: usize| serde_json::json!({"id": id, "body_text": prose(seed)});
    write(dir.path(), "a.jsonl", format!("{}\n", line("a", 1)));
    write(dir.path(), "b.jsonl", format!("{}\n", line("b", 2)));
    let run = |input: &str| {
        neardup(
            dir.path(),
            &["dedup", input, "--out", "o", "--store", "s.db"],
        )
    };
    let note = "the defaults changed since this store's records were decided";
    // A new store: nothing to say; the next run on it neither.
    let first = run("a.jsonl");
    first.assert_ok();
    assert!(!first.stderr.contains(note), "{}", first.stderr);
    let second = run("b.jsonl");
    assert!(!second.stderr.contains(note), "{}", second.stderr);
    // A store made by a release before the change has no record of its defaults.
    rusqlite::Connection::open(dir.path().join("s.db"))
        .unwrap()
        .execute("DELETE FROM meta WHERE key = 'cli.defaults'", [])
        .unwrap();
    let third = run("b.jsonl");
    third.assert_ok();
    assert_contains(&third.stderr, note);
    assert_contains(&third.stderr, "--linkage guarded");
    // Said once: the run records this release's defaults.
    assert!(!run("a.jsonl").stderr.contains(note));
    // Release 2 changed nothing for words since; code mode's threshold changed in 3.
    let set_release_2 = |store: &str| {
        rusqlite::Connection::open(dir.path().join(store))
            .unwrap()
            .execute("UPDATE meta SET value = '2' WHERE key = 'cli.defaults'", [])
            .unwrap()
    };
    assert_eq!(set_release_2("s.db"), 1);
    assert!(!run("b.jsonl").stderr.contains(note));
    let code = |input: &str| {
        let argv = [
            "dedup",
            input,
            "--out",
            "c",
            "--store",
            "c.db",
            "--features",
            "code",
        ];
        neardup(
            dir.path(),
            &[&argv[..], &["--code-lang", "python"]].concat(),
        )
    };
    code("a.jsonl").assert_ok();
    assert_eq!(set_release_2("c.db"), 1);
    let told = code("b.jsonl");
    told.assert_ok();
    assert_contains(&told.stderr, note);
    assert_contains(&told.stderr, "--min-jaccard is 0.7 (before: 0.8)");
    assert!(!code("a.jsonl").stderr.contains(note));
}

#[test]
fn issue_36_template_pages_that_differ_in_their_item_are_not_merged() {
    // Reference pages of one template, under 50 words, that differ only in the item they
    // document (its name, six times): character 3-grams find them alike (the short-text
    // rule merged them), their word shingles do not (Jaccard about 0.3).
    let dir = tempfile::tempdir().unwrap();
    let page = |item: &str| {
        format!(
            "{item} reference page. The {item} function returns a new handle for the given \
             path. Call {item} before any read and check the result of {item} for errors. \
             See also the examples of {item} in the guide and the {item} section of the manual."
        )
    };
    let items = ["open_reader", "open_writer", "open_append", "open_buffer"];
    let input: String = items
        .iter()
        .map(|item| serde_json::json!({"id": item, "body_text": page(item)}).to_string() + "\n")
        .collect();
    write(dir.path(), "in.jsonl", input);
    let run = |out: &str, extra: &[&str]| -> Value {
        let mut args = vec!["dedup", "in.jsonl", "--out", out, "--store"];
        let store = format!("{out}.db");
        args.push(&store);
        args.extend_from_slice(extra);
        let run = neardup(dir.path(), &args);
        run.assert_ok();
        report(&dir.path().join(out))
    };
    let defaults = run("defaults", &[]);
    assert_eq!(defaults["merged"], 0, "{defaults}");
    // The old short-text rule merges them: what this test guards against.
    let old = run("chars", &["--min-words", "50", "--short-text", "chars"]);
    assert!(old["merged"].as_u64().unwrap() > 0, "{old}");
}

#[test]
fn max_candidates_bounds_the_pairs_verified_not_the_clusters() {
    let dir = tempfile::tempdir().unwrap();
    // Twelve near copies of one text: every pair within the radius and over 0.8.
    let base: Vec<String> = (0..400u64)
        .map(|i| format!("w{}", (i * 2_654_435_761) % 20_011))
        .collect();
    let input: String = (0..12)
        .map(|i| {
            let mut words = base.clone();
            words[(i * 31 + 5) % 400] = format!("edit{i}");
            serde_json::json!({"id": format!("n{i:02}"), "body_text": words.join(" ")}).to_string()
                + "\n"
        })
        .collect();
    write(dir.path(), "in.jsonl", input);
    let run = |cap: &str| -> (Value, usize) {
        let out = format!("out-{cap}");
        let line = format!(
            "dedup in.jsonl --out {out} --store {cap}.db --chain-floor 0 --pairs --max-candidates {cap}"
        );
        let run = cmd(dir.path(), &line);
        run.assert_ok();
        let pairs = lines(&dir.path().join(&out).join("pairs.jsonl")).len();
        (report(&dir.path().join(&out)), pairs)
    };
    let (all, all_pairs) = run("1000");
    let (two, two_pairs) = run("2");
    assert_eq!(all_pairs, 12 * 11 / 2, "every pair verified");
    assert!(two_pairs < all_pairs && two_pairs >= 11, "{two_pairs}");
    assert_eq!(
        (all["kept"].clone(), two["kept"].clone()),
        (1.into(), 1.into())
    );
    let zero = cmd(
        dir.path(),
        "dedup in.jsonl --out o0 --store z.db --max-candidates 0",
    );
    assert_ne!(zero.code, 0);
    assert_contains(&zero.stderr, "--max-candidates");
}

/// A copy of Rust `source` as someone hiding it would make it: every word that is not a
/// keyword or a primitive type renamed (identifiers, types, macro names, words in strings
/// alike), comments dropped, the indentation halved and blank lines added.
fn disguised(source: &str) -> String {
    const KEYWORDS: [&str; 52] = [
        "as", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
        "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
        "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
        "unsafe", "use", "where", "while", "async", "await", "u8", "u16", "u32", "u64", "u128",
        "usize", "i8", "i16", "i32", "i64", "i128", "isize", "bool", "char",
    ];
    let mut out = String::new();
    for line in source.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        out.push_str(&" ".repeat((line.len() - code.len()) / 2));
        let mut word = String::new();
        for c in code.chars().chain(std::iter::once('\n')) {
            if c.is_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            let starts_alpha = word.starts_with(|c: char| c.is_alphabetic() || c == '_');
            if starts_alpha && !KEYWORDS.contains(&word.as_str()) {
                word.push_str("_v2");
            }
            out.push_str(&word);
            word.clear();
            out.push(c);
        }
        if out.len().is_multiple_of(7) {
            out.push('\n');
        }
    }
    out
}

#[test]
fn code_lang_auto_reads_each_file_as_its_own_language() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rust = std::fs::read_to_string(root.join("crates/neardup/src/index/linear.rs")).unwrap();
    let python = std::fs::read_to_string(root.join("scripts/semantic/docstrings.py")).unwrap();
    // A Python copy with its functions and variables renamed (indentation kept).
    let mut renamed_python = python.clone();
    for (from, to) in [
        ("walk", "crawl"),
        ("docs", "texts"),
        ("visit", "see"),
        ("node", "n"),
        ("name", "label"),
        ("root", "top"),
    ] {
        renamed_python = renamed_python.replace(from, to);
    }
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("py")).unwrap();
    write(&input, "linear.rs", &rust);
    write(&input, "renamed.rs", disguised(&rust));
    write(&input.join("py"), "docstrings.py", &python);
    write(&input.join("py"), "renamed.py", &renamed_python);
    write(
        &input,
        "notes.txt",
        "Not source code: left out in code mode.",
    );

    let run = cmd(
        dir.path(),
        "dedup in --features code --code-lang auto --out auto --store auto.db",
    );
    run.assert_ok();
    assert_contains(&run.stderr, "by --code-lang auto");
    let r = report(&dir.path().join("auto"));
    assert_eq!(r["input_records"], 4, "{r}");
    assert_eq!(
        r["code_fallbacks"], 0,
        "each file parsed as its own language: {r}"
    );
    assert!(
        r["rule"]["profile"]
            .as_str()
            .unwrap()
            .ends_with("/tok=code-auto"),
        "{r}"
    );
    let merges = lines(&dir.path().join("auto/merges.jsonl"));
    let mut pairs: Vec<(String, String)> = merges
        .iter()
        .map(|m| {
            let mut p = [
                m["kept"].as_str().unwrap().to_owned(),
                m["merged"].as_str().unwrap().to_owned(),
            ];
            p.sort();
            (p[0].clone(), p[1].clone())
        })
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("linear.rs".to_owned(), "renamed.rs".to_owned()),
            ("py/docstrings.py".to_owned(), "py/renamed.py".to_owned())
        ],
        "{merges:?}"
    );

    // explain reads two files of one language as that language.
    let explain = |lang: &str| {
        cmd(
            dir.path(),
            &format!(
                "explain --features code --code-lang {lang} --json in/linear.rs in/renamed.rs"
            ),
        )
        .json()
    };
    let (auto, rust) = (explain("auto"), explain("rust"));
    assert!(
        rust["distance"].is_u64() && rust["shared_shingles"].as_u64() > Some(100),
        "{rust}"
    );
    assert_eq!(auto["distance"], rust["distance"], "{auto}");
    assert_eq!(auto["shared_shingles"], rust["shared_shingles"], "{auto}");
    assert_eq!(auto["jaccard"], rust["jaccard"], "{auto}");

    // One language reads only its files.
    let run = cmd(
        dir.path(),
        "dedup in --features code --code-lang python --out py --store py.db",
    );
    run.assert_ok();
    assert_eq!(report(&dir.path().join("py"))["input_records"], 2);
}

#[test]
fn code_mode_reads_a_directorys_sources_and_merges_a_renamed_copy_word_mode_misses() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../neardup/src");
    let original = std::fs::read_to_string(src.join("index/linear.rs")).unwrap();
    let other = std::fs::read_to_string(src.join("text/sort.rs")).unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    write(&input, "linear.rs", &original);
    write(&input, "renamed.rs", disguised(&original));
    write(&input, "sort.rs", &other);
    write(
        &input,
        "notes.txt",
        "Not source code: left out in code mode.",
    );

    let run = cmd(
        dir.path(),
        "dedup in --features code --code-lang rust --out code --store code.db",
    );
    run.assert_ok();
    assert_contains(
        &run.stderr,
        "rust source files are read, by --features code",
    );
    let r = report(&dir.path().join("code"));
    assert_eq!(r["input_records"], 3, "{r}");
    let merges = lines(&dir.path().join("code/merges.jsonl"));
    assert_eq!(merges.len(), 1, "{merges:?}");
    let ids = [&merges[0]["kept"], &merges[0]["merged"]];
    assert!(ids.contains(&&Value::from("linear.rs")), "{merges:?}");
    assert!(ids.contains(&&Value::from("renamed.rs")), "{merges:?}");
    let profile = r["rule"]["profile"].as_str().unwrap_or_default();
    assert!(profile.ends_with("/tok=code-rust"), "{r}");
    // Code mode's own default threshold (DEFAULT_CODE_MIN_JACCARD); words keep 0.8, and a
    // threshold given is kept.
    assert_eq!(r["rule"]["min_jaccard"], 0.7, "{r}");
    for (flags, expected) in [
        ("", 0.8),
        ("--features code --code-lang rust --min-jaccard 0.9", 0.9),
    ] {
        let out = format!("out{expected}");
        let store = format!("s{expected}.db");
        cmd(
            dir.path(),
            &format!("dedup in {flags} --out {out} --store {store}"),
        )
        .assert_ok();
        let r = report(&dir.path().join(&out));
        assert_eq!(r["rule"]["min_jaccard"], expected, "{flags}: {r}");
    }

    // explain lists the syntax-tree features the copy and its original share.
    let explain = cmd(
        dir.path(),
        "explain --features code --code-lang rust --json in/linear.rs in/renamed.rs",
    );
    let v = explain.json();
    let both = v["shingles"]["passages_both"].as_array().unwrap();
    assert!(!both.is_empty(), "{v}");
    assert!(
        both.iter().any(|p| p
            .as_str()
            .unwrap()
            .contains("function_item visibility_modifier")),
        "{both:?}"
    );
    assert_contains(
        &cmd(
            dir.path(),
            "explain --features code --code-lang rust in/linear.rs in/renamed.rs",
        )
        .stdout,
        "in both ",
    );

    // Word mode, given the same three files: the renamed copy shares too few words.
    let run = cmd(
        dir.path(),
        "dedup --format text in/linear.rs in/renamed.rs in/sort.rs --out words --store words.db",
    );
    run.assert_ok();
    assert!(lines(&dir.path().join("words/merges.jsonl")).is_empty());

    // The language is needed, and only with code.
    cmd(dir.path(), "dedup in --features code --out x --store x.db")
        .assert_fails(3, "--features code needs --code-lang");
    cmd(dir.path(), "dedup in --code-lang rust --out x --store x.db")
        .assert_fails(3, "--code-lang applies to --features code");
    cmd(
        dir.path(),
        "dedup in --features code --code-lang cobol --out x --store x.db",
    )
    .assert_fails(3, "not a language code mode parses");
}

#[test]
fn synonyms_merge_records_that_differ_only_by_words_of_a_group_and_the_store_keeps_the_groups() {
    let dir = tempfile::tempdir().unwrap();
    // Two wordings of real sentences (the GPL's preamble), with five words swapped for
    // synonyms, and a third record that is another text (the MIT licence).
    let a = "The licenses for most software and other practical works are designed to take away \
             your freedom to share and change the works. By contrast, the GNU General Public \
             License is intended to guarantee your freedom to share and change all versions of \
             a program, to make sure it remains free software for all its users.";
    let b = a
        .replace("designed", "intended")
        .replace("freedom", "liberty")
        .replace("change", "modify")
        .replace("guarantee", "ensure");
    let c = "Permission is hereby granted, free of charge, to any person obtaining a copy of this \
             software and associated documentation files, to deal in the Software without \
             restriction, including without limitation the rights to use, copy and modify it.";
    let records = [("a", a.to_owned()), ("b", b), ("c", c.to_owned())]
        .iter()
        .map(|(id, text)| serde_json::json!({"id": id, "text": text}).to_string())
        .collect::<Vec<_>>()
        .join("\n");
    write(dir.path(), "in.jsonl", records + "\n");
    write(
        dir.path(),
        "synonyms.txt",
        "# one group a line\nfreedom liberty\nchange, modify, alter\nguarantee ensure\ndesigned intended\n",
    );

    cmd(dir.path(), "dedup in.jsonl --out plain --store plain.db").assert_ok();
    assert!(lines(&dir.path().join("plain/merges.jsonl")).is_empty());

    cmd(
        dir.path(),
        "dedup in.jsonl --synonyms synonyms.txt --out syn --store syn.db",
    )
    .assert_ok();
    let merges = lines(&dir.path().join("syn/merges.jsonl"));
    assert_eq!(merges.len(), 1, "{merges:?}");
    assert_eq!(merges[0]["merged"], "b");
    assert_eq!(merges[0]["jaccard"], 1.0);
    let profile = report(&dir.path().join("syn"))["rule"]["profile"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(profile.contains("/syn:"), "{profile}");

    // The store keeps the groups: other groups, or none, are refused.
    write(dir.path(), "other.txt", "freedom liberty\n");
    cmd(
        dir.path(),
        "dedup in.jsonl --synonyms other.txt --out o --store syn.db",
    )
    .assert_fails(3, "profile");
    cmd(dir.path(), "dedup in.jsonl --out o --store syn.db").assert_fails(3, "profile");
    // A bad file names its line.
    write(
        dir.path(),
        "bad.txt",
        "freedom liberty\nliberty independence\n",
    );
    cmd(
        dir.path(),
        "dedup in.jsonl --synonyms bad.txt --out o --store b.db",
    )
    .assert_fails(3, "bad.txt line 2");
}
