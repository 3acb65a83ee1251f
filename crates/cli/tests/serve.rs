//! Starts the real `neardup serve` on a free loopback port and talks HTTP to it: every
//! endpoint, the OpenAPI document, erasure, auth, bad input, concurrent near duplicates,
//! the sliding window, SIGTERM and `kill -9` durability. Nothing but loopback is contacted.

use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::server::Server;

const SYLLABLES: [&str; 32] = [
    "ka", "lo", "mi", "ren", "tu", "sa", "vo", "ne", "dri", "pa", "quo", "zen", "ti", "bor", "la",
    "fi", "gu", "hes", "ja", "mo", "nu", "ple", "ri", "sto", "ux", "va", "wen", "xi", "yo", "zar",
    "bel", "cor",
];

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn word(seed: u64) -> String {
    let h = mix(seed);
    let n = 2 + (h % 2) as usize;
    (0..n)
        .map(|i| SYLLABLES[((h >> (8 + 5 * i)) % 32) as usize])
        .collect()
}

/// 150 pseudo-words, distinct per seed.
fn words(seed: u64) -> Vec<String> {
    (0..150).map(|i| word(seed * 1000 + i)).collect()
}

fn doc(seed: u64) -> String {
    words(seed).join(" ")
}

/// `doc(seed)` with word 70 replaced: a near duplicate of it and of every other variant.
fn variant(seed: u64, edit: u64) -> String {
    let mut w = words(seed);
    w[70] = format!("edit{edit}x{}", word(edit + 77));
    w.join(" ")
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

#[test]
fn every_endpoint_answers_as_dedup_decides() {
    let dir = tempfile::tempdir().unwrap();
    // A short-text threshold, for the too_short decision (the default --min-words is 1).
    let server = Server::start(&dir.path().join("s.db"), &["--min-words", "50"]);

    let a = server.insert(
        json!({"id": "a", "text": doc(1), "url": "https://news.example/a", "first_seen": "2026-01-01T00:00:00Z"}),
    );
    assert_eq!(a["decision"], "new", "{a}");
    assert_eq!(a["of"], Value::Null);
    assert_eq!(s(&a["fingerprint"]).len(), 16);
    let b = server.insert(json!({"id": "b", "text": doc(1), "url": "https://mirror.example/b"}));
    assert_eq!(b["decision"], "exact_duplicate", "{b}");
    assert_eq!(b["of"], "a");
    assert_eq!(b["distance"], 0);
    assert_eq!(b["jaccard"], 1.0);
    let c = server.insert(json!({"id": "c", "title": "Breaking", "body_text": variant(1, 1)}));
    assert_eq!(c["decision"], "near_duplicate", "{c}");
    assert_eq!(c["of"], "a");
    assert!(c["jaccard"].as_f64().unwrap() >= 0.8, "{c}");
    assert!(c["distance"].as_u64().unwrap() <= 12, "{c}");

    // A batch: records are decided in order, against each other too; HTML is reduced to
    // its visible text.
    let html = format!(
        "<html><head><script>var x = 1;</script></head><body><nav>home about</nav><main><p>{}</p></main></body></html>",
        doc(2)
    );
    let (status, batch) = server.call(
        "POST",
        "/v1/records",
        Some(&json!([
            {"id": "d", "html": html},
            {"id": "e", "text": doc(2)},
            {"id": "f", "text": "too short to fingerprint reliably"},
            {"id": "g", "text": "!!! ???"},
        ])),
    );
    assert_eq!(status, 200, "{batch}");
    let decisions: Vec<&str> = batch
        .as_array()
        .unwrap()
        .iter()
        .map(|a| s(&a["decision"]))
        .collect();
    assert_eq!(
        decisions,
        ["new", "exact_duplicate", "too_short", "rejected"],
        "{batch}"
    );
    assert_eq!(batch[1]["of"], "d");
    assert!(s(&batch[3]["error"]).contains("no words"), "{batch}");

    // A retried insert (same id, same text) gets its first answer again.
    let again = server.insert(json!({"id": "c", "title": "Breaking", "body_text": variant(1, 1)}));
    assert_eq!(again["already_stored"], true);
    assert_eq!(again["decision"], c["decision"]);
    assert_eq!(again["of"], c["of"]);
    assert_eq!(again["distance"], c["distance"]);
    // The same id with other text is a conflict.
    let (status, err) = server.call(
        "POST",
        "/v1/records",
        Some(&json!({"id": "c", "text": doc(9)})),
    );
    assert_eq!(status, 409, "{err}");
    assert_eq!(err["field"], "id");

    // Query: the same answer, nothing inserted.
    let q = server.query(json!({"text": variant(1, 2)}));
    assert_eq!(q["decision"], "near_duplicate", "{q}");
    assert_eq!(q["of"], "a");
    assert!(!q["matches"].as_array().unwrap().is_empty());
    let q = server.query(json!({"id": "zz", "text": doc(3)}));
    assert_eq!(q["decision"], "new", "{q}");
    assert_eq!(server.call("GET", "/v1/records/zz", None).0, 404);
    let q = server.query(json!({"text": "too short to fingerprint reliably"}));
    assert_eq!(q["decision"], "exact_duplicate", "{q}");
    let q = server.query(json!({"text": "another short text"}));
    assert_eq!(q["decision"], "too_short", "{q}");
    let (status, qs) = server.call(
        "POST",
        "/v1/query",
        Some(&json!([{"text": doc(1)}, {"text": doc(4)}])),
    );
    assert_eq!(status, 200);
    assert_eq!(qs[0]["decision"], "exact_duplicate");
    assert_eq!(qs[1]["decision"], "new");

    // Records, clusters, merges.
    let (status, r) = server.call("GET", "/v1/records/c", None);
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["survivor"], "a");
    assert_eq!(r["fingerprint"], c["fingerprint"]);
    assert_eq!(r["cluster_size"], 3);
    let (status, cl) = server.call("GET", "/v1/clusters/b", None);
    assert_eq!(status, 200, "{cl}");
    assert_eq!(cl["survivor"], "a");
    assert_eq!(cl["members"], json!(["a", "b", "c"]));
    assert_eq!(
        cl["source_urls"],
        json!(["https://news.example/a", "https://mirror.example/b"])
    );
    assert_eq!(cl["first_seen"], "2026-01-01T00:00:00Z");
    assert_eq!(server.call("GET", "/v1/clusters/nope", None).0, 404);
    let (status, m) = server.call("GET", "/v1/merges", None);
    assert_eq!(status, 200);
    let merged: Vec<&str> = m["merges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| s(&e["merged"]))
        .collect();
    assert_eq!(merged, ["b", "c", "e"], "{m}");
    assert_eq!(m["merges"][1]["rule"], "simhash+jaccard");
    let (_, m) = server.call("GET", "/v1/merges?since=2100-01-01T00:00:00Z", None);
    assert_eq!(m["merges"], json!([]));
    let (_, m) = server.call("GET", "/v1/merges?limit=1", None);
    assert_eq!(m["merges"].as_array().unwrap().len(), 1);
    assert_eq!(m["truncated"], true);
    let (status, err) = server.call("GET", "/v1/merges?since=yesterday", None);
    assert_eq!((status, s(&err["field"])), (400, "since"), "{err}");

    // Metrics.
    let (status, text) = server.call("GET", "/metrics", None);
    assert_eq!(status, 200);
    let text = s(&text).to_owned();
    for line in [
        "neardup_decisions_total{decision=\"new\"} 2",
        "neardup_decisions_total{decision=\"exact_duplicate\"} 2",
        "neardup_decisions_total{decision=\"near_duplicate\"} 1",
        "neardup_decisions_total{decision=\"too_short\"} 1",
        "neardup_already_stored_total 1",
        "neardup_store_records 6",
        "neardup_largest_group_size 3",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    for name in [
        "neardup_request_duration_seconds_bucket{route=\"insert\",le=\"+Inf\"}",
        "neardup_index_largest_bucket ",
        "neardup_store_bytes ",
        "neardup_query_answers_total{decision=\"near_duplicate\"} ",
    ] {
        assert!(text.contains(name), "no {name:?} in\n{text}");
    }
    let (status, health) = server.call("GET", "/healthz", None);
    assert_eq!(status, 200);
    assert_eq!(health["records"], 6);
}

#[test]
fn openapi_document_matches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("s.db"), &[]);
    server.insert(json!({"id": "a", "text": doc(1)}));
    server.insert(json!({"id": "b", "text": variant(1, 1)}));
    let (status, doc) = server.call("GET", "/v1/openapi.json", None);
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.0.3");
    let schemas = &doc["components"]["schemas"];
    let props = |name: &str| keys(&schemas[name]["properties"]);

    // Every documented operation is served and answers one of its documented statuses.
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            operations += 1;
            let concrete = path.replace("{id}", "a");
            let body = json!({"id": "q1", "text": doc_text(5)});
            let (status, answer) = match method.as_str() {
                // Erase last, below: it changes what the other operations see.
                "delete" => server.call("DELETE", &path.replace("{id}", "nope"), None),
                "get" => server.call("GET", &concrete, None),
                "post" => server.call("POST", &concrete, Some(&body)),
                "put" => server.call("PUT", &concrete, Some(&body)),
                other => panic!("undocumented method kind {other}"),
            };
            let documented = keys(&op["responses"]);
            assert!(
                documented.contains(&status.to_string()),
                "{method} {path} answered {status}, documented {documented:?}: {answer}"
            );
        }
    }
    assert_eq!(operations, 16);
    // ... and nothing else is served.
    assert_eq!(server.call("GET", "/v1/records", None).0, 405);
    assert_eq!(server.call("GET", "/v2/records", None).0, 404);

    // The documented record properties are exactly the accepted fields.
    let documented = props("QueryRecord");
    assert_eq!(documented, props("InsertRecord"));
    let (status, err) = server.call(
        "POST",
        "/v1/query",
        Some(&json!({"id": "x", "text": doc_text(1), "zzz": 1})),
    );
    assert_eq!(status, 400);
    let message = s(&err["error"]);
    let accepted: BTreeSet<String> = message
        .split("expected one of ")
        .nth(1)
        .expect("serde lists the accepted fields")
        .split(" at line")
        .next()
        .unwrap()
        .split(", ")
        .map(|f| f.trim_matches('`').to_owned())
        .collect();
    assert_eq!(accepted, documented);
    let mut full = serde_json::Map::new();
    for p in &documented {
        let v = match p.as_str() {
            "first_seen" => json!("2026-01-01T00:00:00Z"),
            "html" => json!("<p>hello there</p>"),
            "url" => json!("https://example.org/x"),
            _ => json!(format!("{p} value words here")),
        };
        full.insert(p.clone(), v);
    }
    let (status, answer) = server.call("POST", "/v1/query", Some(&Value::Object(full)));
    assert_eq!(status, 200, "{answer}");

    // Documented answers are what the server sends.
    let answer_props = props("Answer");
    let required: BTreeSet<String> = schemas["Answer"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| s(v).to_owned())
        .collect();
    let c = server.insert(json!({"id": "c", "text": variant(1, 2)}));
    let q = server.query(json!({"text": variant(1, 3)}));
    for a in [&c, &q, &answer] {
        let k = keys(a);
        assert!(required.is_subset(&k), "{a} lacks {:?}", &required - &k);
        assert!(
            k.is_subset(&answer_props),
            "{a} has {:?}",
            &k - &answer_props
        );
    }
    let decisions: BTreeSet<String> = schemas["Answer"]["properties"]["decision"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| s(v).to_owned())
        .collect();
    assert!(decisions.contains(s(&c["decision"])));
    let (_, r) = server.call("GET", "/v1/records/c", None);
    assert_eq!(keys(&r), props("StoredRecord"));
    let (_, cl) = server.call("GET", "/v1/clusters/c", None);
    assert_eq!(keys(&cl), props("Cluster"));
    let (_, m) = server.call("GET", "/v1/merges", None);
    assert_eq!(keys(&m), props("Merges"));
    // Every documented member but `cosine`, which only the semantic stage writes.
    let mut entry = keys(&m["merges"][0]);
    assert!(!entry.contains("cosine"));
    entry.insert("cosine".to_owned());
    assert_eq!(entry, props("MergeLogEntry"));
    let (_, h) = server.call("GET", "/healthz", None);
    assert!(keys(&h).is_subset(&props("Health")));
    let (_, e) = server.call("GET", "/v1/records/nope", None);
    assert!(keys(&e).is_subset(&props("Error")));
    let (status, erased) = server.call("DELETE", "/v1/records/c", None);
    assert_eq!(status, 200);
    assert_eq!(
        keys(&erased),
        keys(
            &doc["paths"]["/v1/records/{id}"]["delete"]["responses"]["200"]["content"]
                ["application/json"]["schema"]["properties"]
        )
    );
}

fn doc_text(seed: u64) -> String {
    doc(seed)
}

#[test]
fn erasure_removes_the_record_from_every_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("s.db"), &[]);
    server.insert(json!({"id": "a", "text": doc(1), "first_seen": "2026-01-01T00:00:00Z"}));
    server.insert(json!({"id": "b", "text": variant(1, 1), "first_seen": "2026-01-02T00:00:00Z"}));
    server.insert(json!({"id": "c", "text": variant(1, 2), "first_seen": "2026-01-03T00:00:00Z"}));
    let (status, erased) = server.call("DELETE", "/v1/records/a", None);
    assert_eq!(status, 200, "{erased}");
    assert_eq!(erased["erased"], "a");
    assert_eq!(server.call("GET", "/v1/records/a", None).0, 404);
    assert_eq!(server.call("GET", "/v1/clusters/a", None).0, 404);
    assert_eq!(server.call("DELETE", "/v1/records/a", None).0, 404);
    // The earliest remaining member takes over.
    let (_, cl) = server.call("GET", "/v1/clusters/c", None);
    assert_eq!(cl["survivor"], "b", "{cl}");
    assert_eq!(cl["members"], json!(["b", "c"]));
    // Its fingerprint and text are gone from the index and the exact tier.
    let q = server.query(json!({"text": doc(1)}));
    assert_ne!(q["decision"], "exact_duplicate", "{q}");
    assert!(
        q["matches"]
            .as_array()
            .is_none_or(|m| m.iter().all(|m| m["id"] != "a")),
        "{q}"
    );
    let (_, m) = server.call("GET", "/v1/merges", None);
    assert!(!m.to_string().contains("\"a\""), "{m}");
    // The id is free again, for other text.
    let again = server.insert(json!({"id": "a", "text": doc(7)}));
    assert_eq!(again["decision"], "new");
    assert_eq!(again["already_stored"], false);
    // Percent-encoded ids.
    server.insert(json!({"id": "x/y z", "text": doc(8)}));
    assert_eq!(server.call("GET", "/v1/records/x%2Fy%20z", None).0, 200);
    assert_eq!(server.call("DELETE", "/v1/records/x%2Fy%20z", None).0, 200);
}

#[test]
fn without_the_token_every_endpoint_but_healthz_answers_401() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start_with_token(dir.path(), "s.db");
    let record = json!({"id": "a", "text": doc(1)});
    let calls: [(&str, &str, Option<&Value>); 8] = [
        ("GET", "/metrics", None),
        ("GET", "/v1/openapi.json", None),
        ("POST", "/v1/records", Some(&record)),
        ("POST", "/v1/query", Some(&record)),
        ("GET", "/v1/records/a", None),
        ("DELETE", "/v1/records/a", None),
        ("GET", "/v1/clusters/a", None),
        ("GET", "/v1/merges", None),
    ];
    for token in [None, Some("wrong"), Some("s3cret-token-and-more")] {
        server.token = token.map(str::to_owned);
        for (method, path, body) in calls {
            let (status, err) = server.call(method, path, body);
            assert_eq!(status, 401, "{method} {path} with {token:?}: {err}");
            assert!(s(&err["error"]).contains("bearer token"), "{err}");
        }
        assert_eq!(server.call("GET", "/healthz", None).0, 200);
    }
    assert_eq!(server.call("GET", "/v1/records/a", None).0, 401);
    server.token = Some("s3cret-token".into());
    for (method, path, body) in calls {
        let (status, answer) = server.call(method, path, body);
        assert!(
            status != 401 && status < 500,
            "{method} {path}: {status} {answer}"
        );
    }
    server.assert_inserts_new("b", &doc(2));
}

#[test]
fn bad_input_gets_a_4xx_naming_the_field_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("s.db"), &["--max-body-bytes", "4000"]);
    let cases: Vec<(&str, &str, String, u16, &str)> = vec![
        (
            "POST",
            "/v1/records",
            "{\"id\": \"a\", \"text\": ".into(),
            400,
            "body",
        ),
        ("POST", "/v1/records", "not json".into(), 400, "body"),
        ("POST", "/v1/records", "".into(), 400, "body"),
        ("POST", "/v1/records", "\"a string\"".into(), 400, "body"),
        (
            "POST",
            "/v1/records",
            r#"{"id": 5, "text": "x"}"#.into(),
            400,
            "id",
        ),
        (
            "POST",
            "/v1/records",
            r#"{"id": "a", "text": ["x"]}"#.into(),
            400,
            "text",
        ),
        (
            "POST",
            "/v1/records",
            r#"{"id": "a", "text": "x", "colour": "red"}"#.into(),
            400,
            "colour",
        ),
        (
            "POST",
            "/v1/records",
            r#"[{"id": "a", "text": "x"}, {"id": "b", "txt": "y"}]"#.into(),
            400,
            "[1].txt",
        ),
        (
            "POST",
            "/v1/records",
            r#"{"text": "no id here"}"#.into(),
            400,
            "id",
        ),
        (
            "POST",
            "/v1/records",
            r#"{"id": "  ", "text": "x"}"#.into(),
            400,
            "id",
        ),
        (
            "POST",
            "/v1/records",
            r#"{"id": "a", "text": ""}"#.into(),
            400,
            "text",
        ),
        (
            "POST",
            "/v1/records",
            r#"{"id": "a", "body_text": "   "}"#.into(),
            400,
            "body_text",
        ),
        ("POST", "/v1/records", r#"{"id": "a"}"#.into(), 400, "text"),
        (
            "POST",
            "/v1/records",
            r#"{"id": "a", "text": "hello", "first_seen": "yesterday"}"#.into(),
            400,
            "first_seen",
        ),
        (
            "POST",
            "/v1/records",
            r#"[{"id": "a", "text": "x"}, {"id": "b", "text": "y", "first_seen": 3}]"#.into(),
            400,
            "[1].first_seen",
        ),
        (
            "POST",
            "/v1/records",
            r#"{"id": "a", "text": "!!! ..."}"#.into(),
            422,
            "text",
        ),
        ("POST", "/v1/query", r#"{"text": 1.5}"#.into(), 400, "text"),
        (
            "POST",
            "/v1/query",
            r#"{"id": "q", "text": "", "html": ""}"#.into(),
            400,
            "text",
        ),
        (
            "POST",
            "/v1/records",
            format!(r#"{{"id": "big", "text": "{}"}}"#, "word ".repeat(1000)),
            413,
            "body",
        ),
        (
            "GET",
            "/v1/merges?since=2026-01-01T00:00:00Z&colour=red",
            String::new(),
            400,
            "colour",
        ),
        ("GET", "/v1/merges?limit=0", String::new(), 400, "limit"),
    ];
    for (method, path, body, status, field) in &cases {
        let (got, err) = if *method == "POST" {
            server.raw(method, path, body)
        } else {
            server.call(method, path, None)
        };
        assert_eq!(got, *status, "{body:?} -> {err}");
        assert_eq!(err["field"], *field, "{body:?} -> {err}");
        assert!(!s(&err["error"]).is_empty());
    }
    // A batch over --max-batch.
    let many: Vec<Value> = (0..1001)
        .map(|i| json!({"id": i.to_string(), "text": "w"}))
        .collect();
    let server2 = Server::start(&dir.path().join("t.db"), &[]);
    let (status, err) = server2.call("POST", "/v1/records", Some(&Value::Array(many)));
    assert_eq!((status, s(&err["field"])), (413, "body"), "{err}");
    // Nothing was stored by the refused requests, and the server still works.
    let (_, health) = server.call("GET", "/healthz", None);
    assert_eq!(health["records"], 0, "{health}");
    server.assert_inserts_new("a", &doc(1));
}

#[test]
fn near_duplicates_posted_at_once_by_many_clients_are_merged() {
    let dir = tempfile::tempdir().unwrap();
    let server = Arc::new(Server::start(&dir.path().join("s.db"), &[]));
    const CLIENTS: usize = 8;
    for round in 0..4u64 {
        let barrier = Arc::new(Barrier::new(CLIENTS));
        let handles: Vec<_> = (0..CLIENTS as u64)
            .map(|client| {
                let (server, barrier) = (server.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let record = json!({"id": format!("r{round}-c{client}"), "text": variant(100 + round, client)});
                    barrier.wait();
                    server.insert(record)
                })
            })
            .collect();
        let answers: Vec<Value> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let new: Vec<&Value> = answers.iter().filter(|a| a["decision"] == "new").collect();
        assert_eq!(new.len(), 1, "round {round}: {answers:#?}");
        for a in &answers {
            assert!(
                a["decision"] == "new" || a["decision"] == "near_duplicate",
                "{a}"
            );
        }
        let (_, cluster) = server.call("GET", &format!("/v1/clusters/r{round}-c0"), None);
        assert_eq!(cluster["size"], CLIENTS, "round {round}: {cluster}");
    }
    let (_, health) = server.call("GET", "/healthz", None);
    assert_eq!(health["records"], 4 * CLIENTS);
}

#[test]
fn acknowledged_writes_survive_kill_9_and_the_index_answers_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let probes: Vec<Value> = (0..6)
        .map(|i| json!({"text": if i % 2 == 0 { variant(i, 99) } else { doc(i + 50) }}))
        .collect();

    // Quiet phase: insert, ask, kill -9 with nothing in flight, ask again.
    let server = Server::start(&store, &[]);
    let mut acked: HashMap<String, Value> = HashMap::new();
    for i in 0..6u64 {
        let batch: Vec<Value> = (0..3)
            .map(|j| json!({"id": format!("q{i}-{j}"), "text": if j == 0 { doc(i) } else { variant(i, j) }}))
            .collect();
        let (status, answers) = server.call("POST", "/v1/records", Some(&Value::Array(batch)));
        assert_eq!(status, 200);
        for a in answers.as_array().unwrap() {
            acked.insert(s(&a["id"]).to_owned(), a.clone());
        }
    }
    let before: Vec<Value> = probes.iter().map(|p| server.query(p.clone())).collect();
    server.kill9();
    let server = Server::start(&store, &[]);
    let after: Vec<Value> = probes.iter().map(|p| server.query(p.clone())).collect();
    assert_eq!(before, after);

    // Busy phase: kill -9 while clients insert; every acknowledged record is there after.
    let server = Arc::new(server);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Acknowledgements received so far: the kill waits for them, not for the store's count,
    // which may hold a record whose answer is still on its way.
    let received = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handles: Vec<_> = (0..3u64)
        .map(|client| {
            let (server, stop, received) = (server.clone(), stop.clone(), received.clone());
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                for n in 0..1000u64 {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        break;
                    }
                    let seed = 1000 + client * 1000 + n;
                    let record = json!({"id": format!("k{client}-{n}"), "text": if n % 3 == 2 { variant(seed - 1, 5) } else { doc(seed) }});
                    match server.try_call("POST", "/v1/records", Some(&record.to_string())) {
                        Ok((200, body)) => {
                            acked.push(serde_json::from_str::<Value>(&body).unwrap());
                            received.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        Ok((status, body)) => panic!("{status} {body}"),
                        Err(_) => break, // killed
                    }
                }
                acked
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while received.load(std::sync::atomic::Ordering::SeqCst) < 30 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = server.pid();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for h in handles {
        for a in h.join().unwrap() {
            acked.insert(s(&a["id"]).to_owned(), a);
        }
    }
    drop(server);
    assert!(acked.len() >= 18 + 30, "{}", acked.len());
    let server = Server::start(&store, &[]);
    for (id, a) in &acked {
        let (status, r) = server.call("GET", &format!("/v1/records/{id}"), None);
        assert_eq!(status, 200, "acknowledged {id} lost after kill -9: {a}");
        assert_eq!(r["fingerprint"], a["fingerprint"], "{id}");
    }
    let again: Vec<Value> = probes.iter().map(|p| server.query(p.clone())).collect();
    for (b, a) in before.iter().zip(&again) {
        assert_eq!(b["decision"], a["decision"]);
        assert_eq!(b["of"], a["of"]);
    }
}

#[test]
fn sigterm_finishes_the_request_in_flight_then_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut server = Server::start(&store, &[]);
    let addr = server.base.trim_start_matches("http://").to_owned();
    let body = json!([{"id": "a", "text": doc(1)}, {"id": "b", "text": variant(1, 1)}]).to_string();
    let (head, tail) = body.split_at(body.len() / 2);
    let mut conn = TcpStream::connect(&addr).unwrap();
    write!(
        conn,
        "POST /v1/records HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{head}",
        body.len()
    )
    .unwrap();
    conn.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(server.pid(), libc::SIGTERM) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    conn.write_all(tail.as_bytes()).unwrap();
    let mut response = String::new();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = conn.read_to_string(&mut response);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("near_duplicate"), "{response}");
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}: {}", server.log());
    assert!(server.log().contains("stopped"), "{}", server.log());
    // New connections are refused once it stopped; what it answered is stored.
    assert!(TcpStream::connect(&addr).is_err());
    drop(server);
    let server = Server::start(&store, &[]);
    let (_, cl) = server.call("GET", "/v1/clusters/b", None);
    assert_eq!(cl["members"], json!(["a", "b"]));
}

#[test]
fn window_compares_only_with_records_first_seen_within_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("s.db"), &["--window", "5m"]);
    let old =
        server.insert(json!({"id": "old", "text": doc(1), "first_seen": "2001-01-01T00:00:00Z"}));
    assert_eq!(old["decision"], "new");
    let fresh = server.insert(json!({"id": "fresh", "text": variant(1, 1)}));
    assert_eq!(
        fresh["decision"], "new",
        "the old record is out of the window: {fresh}"
    );
    let exact = server.insert(json!({"id": "exact", "text": doc(1)}));
    assert_ne!(exact["of"], "old", "{exact}");
    let near = server.insert(json!({"id": "near", "text": variant(1, 2)}));
    assert_eq!(near["decision"], "near_duplicate", "{near}");
    let (_, r) = server.call("GET", "/v1/records/old", None);
    assert_eq!(r["indexed"], false, "{r}");
    let (_, r) = server.call("GET", "/v1/records/fresh", None);
    assert_eq!(r["indexed"], true, "{r}");
    let q = server.query(json!({"text": doc(1)}));
    assert_ne!(q["of"], "old", "{q}");
}

/// The statuses the document lists for an operation.
fn documented_statuses(doc: &Value, path: &str, method: &str) -> BTreeSet<String> {
    keys(&doc["paths"][path][method]["responses"])
}

/// Whether `key` appears anywhere in `v`, at any depth.
fn has_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| k == key || has_key(v, key)),
        Value::Array(a) => a.iter().any(|v| has_key(v, key)),
        _ => false,
    }
}

#[test]
fn authorization_scheme_is_case_insensitive() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_token(dir.path(), "s.db");
    for (authorization, status) in [
        ("Bearer s3cret-token", 200),
        ("bearer s3cret-token", 200),
        ("BEARER s3cret-token", 200),
        ("bEaReR   s3cret-token", 200),
        // The token itself is compared exactly.
        ("bearer S3CRET-TOKEN", 401),
        ("Basic s3cret-token", 401),
        ("Bearers3cret-token", 401),
        ("s3cret-token", 401),
        ("bearer", 401),
    ] {
        let (got, body) = server.http(
            &format!("GET /v1/merges HTTP/1.1\r\nAuthorization: {authorization}"),
            "",
        );
        assert_eq!(got, status, "{authorization:?}: {body}");
    }
    let record = json!({"id": "a", "text": doc(1)}).to_string();
    server.assert_posted_record_is_new(
        "Authorization: bearer s3cret-token\r\nContent-Type: application/json",
        &record,
    );
}

#[test]
fn bodies_not_sent_as_json_get_415_and_store_nothing() {
    // No token: a browser's cross-site form or text/plain post (sent without asking the
    // server first) must not insert records.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("s.db"), &[]);
    let record = json!({"id": "a", "text": doc(1)}).to_string();
    for path in ["/v1/records", "/v1/query"] {
        for content_type in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=----x"),
            Some("application/json; charset=iso-8859-1"),
            None,
        ] {
            let head = match content_type {
                Some(t) => format!("POST {path} HTTP/1.1\r\nContent-Type: {t}"),
                None => format!("POST {path} HTTP/1.1"),
            };
            let (status, err) = server.http(&head, &record);
            assert_eq!(status, 415, "{path} {content_type:?}: {err}");
            assert_eq!(err["field"], "Content-Type", "{err}");
            assert!(s(&err["error"]).contains("application/json"), "{err}");
        }
    }
    let (status, _) = server.http(
        "POST /v1/records HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded",
        "id=a&text=hello+there+general+kenobi",
    );
    assert_eq!(status, 415);
    let (_, health) = server.call("GET", "/healthz", None);
    assert_eq!(health["records"], 0, "{health}");

    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON;Charset=\"UTF-8\"",
    ] {
        let (status, answer) = server.http(
            &format!("POST /v1/query HTTP/1.1\r\nContent-Type: {content_type}"),
            &record,
        );
        assert_eq!(status, 200, "{content_type}: {answer}");
    }
    server.assert_posted_record_is_new("Content-Type: application/json; charset=utf-8", &record);
}

#[test]
fn openapi_document_requires_the_token_only_when_the_server_does() {
    let dir = tempfile::tempdir().unwrap();
    let open = Server::start(&dir.path().join("open.db"), &[]);
    let (_, doc) = open.call("GET", "/v1/openapi.json", None);
    assert!(!has_key(&doc, "security"), "{doc}");
    assert!(!has_key(&doc, "securitySchemes"), "{doc}");
    assert!(!has_key(&doc, "401"), "{doc}");
    assert!(!s(&doc["info"]["description"]).contains("Bearer"));
    drop(open);

    let mut server = Server::start_with_token(dir.path(), "closed.db");
    server.token = Some("s3cret-token".into());
    let (_, doc) = server.call("GET", "/v1/openapi.json", None);
    assert_eq!(doc["security"], json!([{"bearer": []}]));
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    let mut protected = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            let statuses = documented_statuses(&doc, path, method);
            if path == "/healthz" {
                assert_eq!(op["security"], json!([]));
                assert!(!statuses.contains("401"));
            } else {
                protected += 1;
                assert!(statuses.contains("401"), "{method} {path}: {statuses:?}");
            }
        }
    }
    assert_eq!(protected, 15);
    // The documented 401 is what the server sends, header included.
    let (status, err) = server.http("GET /v1/merges HTTP/1.1", "");
    assert_eq!(status, 401);
    assert_eq!(err["field"], "Authorization");
    let mut conn = TcpStream::connect(server.base.trim_start_matches("http://")).unwrap();
    write!(
        conn,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    conn.read_to_string(&mut response).unwrap();
    assert!(
        response
            .to_ascii_lowercase()
            .contains("\r\nwww-authenticate: bearer\r\n"),
        "{response}"
    );
    let header = &doc["components"]["responses"]["Unauthorized"]["headers"]["WWW-Authenticate"];
    assert_eq!(header["schema"]["enum"], json!(["Bearer"]));
}

#[test]
fn records_the_schema_refuses_are_refused_with_documented_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("s.db"), &["--max-batch", "3"]);
    let (_, doc) = server.call("GET", "/v1/openapi.json", None);
    let insert = &doc["components"]["schemas"]["InsertRecord"];
    assert_eq!(insert["required"], json!(["id"]));
    assert_eq!(insert["properties"]["id"]["minLength"], 1);
    assert!(insert["properties"]["id"]["pattern"].is_string());
    assert_eq!(insert["anyOf"].as_array().unwrap().len(), 5);
    let batch = &doc["paths"]["/v1/records"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"]["oneOf"][1];
    assert_eq!(batch["maxItems"], 3, "--max-batch is in the document");
    let documented = documented_statuses(&doc, "/v1/records", "post");
    for status in ["200", "400", "409", "413", "415", "422", "500", "503"] {
        assert!(documented.contains(status), "{status}: {documented:?}");
    }
    assert!(documented_statuses(&doc, "/v1/query", "post").contains("415"));

    let text = doc_text(1);
    let cases: Vec<(Value, u16, &str)> = vec![
        // `required: [id]`
        (json!({"text": text}), 400, "id"),
        // `pattern`: whitespace only, Unicode's included
        (json!({"id": " \u{3000}\u{2028}", "text": text}), 400, "id"),
        // `anyOf`: some text field, not blank
        (json!({"id": "a"}), 400, "text"),
        (json!({"id": "a", "title": " ", "text": "\t"}), 400, "text"),
        (json!({"id": "a", "text": null}), 400, "text"),
        // No words: 422, stated in the document (JSON Schema cannot count words).
        (json!({"id": "a", "text": "!!! ???"}), 422, "text"),
        (
            json!({"id": "a", "html": "<p> </p><script>x</script>"}),
            422,
            "text",
        ),
    ];
    for (record, status, field) in &cases {
        let (got, err) = server.call("POST", "/v1/records", Some(record));
        assert_eq!(
            (got, &err["field"]),
            (*status, &json!(field)),
            "{record} -> {err}"
        );
        assert!(documented.contains(&got.to_string()));
    }
    let (status, answers) = server.call(
        "POST",
        "/v1/records",
        Some(&json!([
            {"id": "b", "title": " ", "text": doc_text(2), "url": null, "first_seen": null},
            {"id": "c", "html": "<p> </p>"},
        ])),
    );
    assert_eq!(status, 200, "{answers}");
    assert_eq!(answers[0]["decision"], "new");
    assert_eq!(answers[1]["decision"], "rejected");
    let too_many: Vec<Value> = (0..4)
        .map(|i| json!({"id": format!("m{i}"), "text": "w"}))
        .collect();
    let (status, _) = server.call("POST", "/v1/records", Some(&Value::Array(too_many)));
    assert_eq!(status, 413);
    // Querying: `id` is optional, null or absent.
    let (status, answer) = server.call(
        "POST",
        "/v1/query",
        Some(&json!({"id": null, "text": doc_text(2)})),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"], "exact_duplicate");
    let (status, err) = server.call(
        "POST",
        "/v1/query",
        Some(&json!({"id": " ", "text": doc_text(2)})),
    );
    assert_eq!((status, s(&err["field"])), (400, "id"));
    let (_, health) = server.call("GET", "/healthz", None);
    assert_eq!(health["records"], 1, "{health}");
}

/// A man page of this machine (a fixture of the library's tests).
fn man_page(lang: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../neardup/tests/data/text")
        .join(format!("man_{lang}.txt"));
    std::fs::read_to_string(path).expect("fixture")
}

/// `neardup watch add` of `records` under `class` to the watchlist `w.db` in `dir`.
fn watch_add(dir: &Path, class: &str, records: &[Value]) {
    let file = dir.join(format!("{class}.jsonl"));
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let file = file.to_str().unwrap();
    run_ok(
        dir,
        &[
            "watch",
            "add",
            "--watchlist",
            "w.db",
            "--class",
            class,
            file,
        ],
    );
}

/// Runs `neardup ARGS` in `dir` and asserts that it succeeded.
fn run_ok(dir: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
}

#[test]
fn watchlist_alerts_come_with_answers_and_metrics_and_follow_its_changes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    watch_add(
        d,
        "farm",
        &[json!({"id": "man-de", "text": man_page("de")})],
    );
    let server = Server::start(
        &d.join("s.db"),
        &["--watchlist", d.join("w.db").to_str().unwrap()],
    );
    // A copy of the watched page: its insert is new to the store, and red.
    let a = server.insert(json!({"id": "a", "text": man_page("de")}));
    assert_eq!(a["decision"], "new");
    assert_eq!(
        a["alerts"],
        json!([{"level": "red", "watched": "man-de", "class": "farm", "distance": 0, "jaccard": 1.0}])
    );
    // Unrelated text: an empty list, so a client can tell "checked, nothing" apart.
    let q = server.query(json!({"text": man_page("ru")}));
    assert_eq!(q["alerts"], json!([]));
    // A batch answers each record.
    let (status, batch) = server.call(
        "POST",
        "/v1/query",
        Some(&json!([{"text": man_page("de")}, {"text": man_page("tr")}])),
    );
    assert_eq!(status, 200);
    assert_eq!(batch[0]["alerts"][0]["watched"], "man-de");
    assert_eq!(batch[1]["alerts"], json!([]));
    let (_, text) = server.call("GET", "/metrics", None);
    let text = s(&text).to_owned();
    for line in [
        "neardup_watchlist_alerts_total{level=\"red\"} 2",
        "neardup_watchlist_alerts_total{level=\"orange\"} 0",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }

    // Content added to the watchlist while the server runs raises alerts within seconds.
    watch_add(
        d,
        "leak",
        &[json!({"id": "man-ru", "text": man_page("ru")})],
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let q = server.query(json!({"text": man_page("ru")}));
        if q["alerts"][0]["watched"] == "man-ru" {
            assert_eq!(q["alerts"][0]["class"], "leak");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new watched record never alerted: {q}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // And erased content stops alerting.
    run_ok(d, &["erase", "--store", "w.db", "man-ru"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let q = server.query(json!({"text": man_page("ru")}));
        if q["alerts"] == json!([]) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the erased record still alerts: {q}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
