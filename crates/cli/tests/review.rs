//! The review page and its API against a real server on loopback, on a store made from real
//! text (the Debian copyright files of examples/data): the label endpoints' auth and bad
//! input, and a real browser (Debian's chromium, driven through chromedriver) labelling
//! pairs with the keyboard. The browser test needs `chromium` and `chromedriver` (CI installs
//! `chromium chromium-driver`); without them it fails, it never skips.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::server::Server;
use common::{neardup, Run};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// Real text nobody here wrote: 400 copyright files of Debian packages.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/data/debian-copyright.jsonl.gz")
}

/// A store deduplicated at Jaccard 0.9, so that some merges sit near the threshold and
/// some candidates just under it.
fn store(dir: &Path) -> PathBuf {
    let corpus = corpus();
    let run = neardup(
        dir,
        &[
            "dedup",
            "--jsonl",
            corpus.to_str().unwrap(),
            "--out",
            "out",
            "--store",
            "s.db",
            "--min-jaccard",
            "0.9",
        ],
    );
    run.assert_ok();
    dir.join("s.db")
}

/// A server on the store with two named tokens, given the corpus with `--review-input`, or
/// (`review_input` false) finding it where `neardup dedup` recorded it in the store.
fn serve(dir: &Path, review_input: bool) -> Server {
    std::fs::write(dir.join("tokens"), "# reviewers\nana tok-ana\nbo tok-bo\n").unwrap();
    let store = store(dir);
    let tokens = dir.join("tokens");
    let corpus = corpus();
    let mut args = vec![
        "--token-file",
        tokens.to_str().unwrap(),
        "--min-jaccard",
        "0.9",
    ];
    if review_input {
        args.extend(["--review-input", corpus.to_str().unwrap()]);
    }
    let mut server = Server::start(&store, &args);
    server.token = Some("tok-ana".into());
    server
}

fn queue(server: &Server) -> Vec<Value> {
    let (status, q) = server.call("GET", "/v1/review/queue", None);
    assert_eq!(status, 200, "{q}");
    q["pairs"].as_array().unwrap().clone()
}

fn labels(server: &Server) -> Vec<Value> {
    let (status, l) = server.call("GET", "/v1/labels", None);
    assert_eq!(status, 200, "{l}");
    l["labels"].as_array().unwrap().clone()
}

fn put_label(server: &Server, a: &str, b: &str, verdict: &str) -> (u16, Value) {
    server.call(
        "PUT",
        "/v1/labels",
        Some(&json!({"a": a, "b": b, "verdict": verdict})),
    )
}

#[test]
fn the_queue_holds_real_pairs_in_strata_with_texts_and_scores() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), true);
    let pairs = queue(&server);
    let strata = |s: &str| pairs.iter().filter(|p| p["stratum"] == s).count();
    assert!(
        strata("boundary") > 0 && strata("rejected") > 0 && strata("random") > 0,
        "{pairs:?}"
    );
    for p in &pairs {
        let j = p["jaccard"].as_f64().unwrap();
        match p["stratum"].as_str().unwrap() {
            "boundary" => assert!((j - 0.9).abs() <= 0.03, "{p}"),
            "rejected" => assert!((0.87..0.9).contains(&j), "{p}"),
            _ => assert!((j - 0.9).abs() > 0.03 && j >= 0.9, "{p}"),
        }
    }
    // A pair: both sides with URLs and first-seen times, and a diff of the real texts.
    let p = &pairs[0];
    let path = format!(
        "/v1/review/pair?a={}&b={}",
        p["a"].as_str().unwrap(),
        p["b"].as_str().unwrap()
    );
    let (status, pair) = server.call("GET", &path, None);
    assert_eq!(status, 200, "{pair}");
    for side in ["left", "right"] {
        assert_eq!(pair[side]["text"], true, "{pair}");
        assert!(pair[side]["url"]
            .as_str()
            .unwrap()
            .starts_with("file:///usr/share/doc/"));
        assert!(pair[side]["first_seen"].as_str().is_some());
    }
    let diff = &pair["diff"];
    assert!(diff["left_words"].as_u64().unwrap() > 50, "{diff}");
    assert!(diff["same_words_left"].as_u64().unwrap() < diff["left_words"].as_u64().unwrap());
    let rows = diff["page"]["rows"].as_array().unwrap();
    let kinds: Vec<&str> = rows
        .iter()
        .flat_map(|r| ["left", "right"].map(|s| &r[s]))
        .filter_map(|side| side.as_array())
        .flatten()
        .map(|seg| seg["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"same"), "{kinds:?}");
    assert!(
        kinds.iter().any(|k| *k != "same"),
        "a near pair differs somewhere: {kinds:?}"
    );
}

#[test]
fn label_endpoints_need_the_token_name_the_labeller_and_refuse_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path(), true);
    let pairs = queue(&server);
    let (a, b) = (
        pairs[0]["a"].as_str().unwrap(),
        pairs[0]["b"].as_str().unwrap(),
    );

    // The page itself is static and served without the token; the data is not.
    server.token = None;
    assert_eq!(server.try_call("GET", "/review", None).unwrap().0, 200);
    assert_eq!(
        server.try_call("GET", "/review/app.js", None).unwrap().0,
        200
    );
    for (method, path) in [
        ("GET", "/v1/review/queue"),
        ("GET", "/v1/review/summary"),
        ("GET", "/v1/labels"),
        ("DELETE", "/v1/labels?a=x&b=y"),
    ] {
        assert_eq!(server.call(method, path, None).0, 401, "{method} {path}");
    }
    assert_eq!(put_label(&server, a, b, "duplicate").0, 401);
    server.token = Some("tok-wrong".into());
    assert_eq!(put_label(&server, a, b, "duplicate").0, 401);

    // Each token's name is who labelled, and the queue says which name a request has.
    server.token = Some("tok-bo".into());
    let (_, q) = server.call("GET", "/v1/review/queue", None);
    assert_eq!(
        (q["reviewer"].as_str(), q["reviewer_from_token"].as_bool()),
        (Some("bo"), Some(true))
    );
    let (status, label) = put_label(&server, a, b, "not_duplicate");
    assert_eq!(status, 200, "{label}");
    assert_eq!(label["by"], "bo");
    assert_eq!(label["source"], pairs[0]["stratum"]);
    assert_eq!(
        label["jaccard"], pairs[0]["jaccard"],
        "scores come from the server"
    );
    server.token = Some("tok-ana".into());
    assert_eq!(put_label(&server, a, b, "duplicate").1["by"], "ana");
    let stored = labels(&server);
    assert_eq!(stored.len(), 1, "labelling again replaces: {stored:?}");
    assert_eq!(stored[0]["verdict"], "duplicate");

    // Bad input: 4xx naming the field; nothing stored.
    let (status, e) = put_label(&server, a, "no-such-record", "duplicate");
    assert_eq!(status, 404, "{e}");
    assert!(e["error"]
        .as_str()
        .unwrap()
        .contains("not in the review queue"));
    let (status, e) = put_label(&server, a, b, "maybe");
    assert_eq!((status, e["field"].as_str()), (400, Some("verdict")), "{e}");
    let (status, e) = server.call(
        "PUT",
        "/v1/labels",
        Some(&json!({"a": a, "b": b, "verdict": "duplicate", "colour": "red"})),
    );
    assert_eq!(status, 400, "{e}");
    let (status, _) = server.raw("PUT", "/v1/labels", "{not json");
    assert_eq!(status, 400);
    let (status, e) = server.call("DELETE", "/v1/labels?a=x", None);
    assert_eq!((status, e["field"].as_str()), (400, Some("b")), "{e}");
    let (status, _) = server.call("DELETE", &format!("/v1/labels?a={b}&b={a}"), None);
    assert_eq!(status, 404, "no label on the reversed pair");
    let (status, e) = server.call("GET", "/v1/labels?format=xml", None);
    assert_eq!((status, e["field"].as_str()), (400, Some("format")), "{e}");
    let (status, _) = server.call("GET", "/v1/review/pair?a=x&b=y", None);
    assert_eq!(status, 404);
    let (status, e) = server.call(
        "POST",
        "/v1/review/reevaluate",
        Some(&json!({"max_distance": 9, "min_jaccard": 1.5})),
    );
    assert_eq!(
        (status, e["field"].as_str()),
        (400, Some("min_jaccard")),
        "{e}"
    );
    assert_eq!(labels(&server).len(), 1);

    // Undo is a delete; erasing a record takes its labels with it.
    let (status, _) = server.call("DELETE", &format!("/v1/labels?a={a}&b={b}"), None);
    assert_eq!(status, 200);
    assert!(labels(&server).is_empty());
    assert_eq!(put_label(&server, a, b, "duplicate").0, 200);
    let (status, _) = server.call("DELETE", &format!("/v1/records/{b}"), None);
    assert_eq!(status, 200);
    assert!(
        labels(&server).is_empty(),
        "erasure removes the labels naming the record"
    );
}

/// A free loopback port (another process may take it before chromedriver does; the test
/// then fails with chromedriver's message).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// chromedriver on a free port; killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Driver {
        let port = free_port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("chromedriver does not run ({e}): apt-get install chromium chromium-driver")
            });
        let driver = Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{}/status", driver.url)).call().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        driver
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn browser(driver: &Driver) -> Client {
    let chromium = std::env::var("NEARDUP_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "{chromium} is missing: apt-get install chromium chromium-driver (or set NEARDUP_CHROMIUM)"
    );
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"binary": chromium, "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--window-size=1500,1000"]}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a chromium session")
}

/// Waits until `script` (a JS expression) is truthy, up to 20 s.
async fn until(client: &Client, script: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = client
            .execute(&format!("return !!({script});"), vec![])
            .await
            .unwrap();
        if v == Value::Bool(true) {
            return;
        }
        if Instant::now() > deadline {
            let status = client
                .execute(
                    "return document.getElementById('status').textContent;",
                    vec![],
                )
                .await
                .unwrap_or_default();
            panic!("waited 20 s for {what} ({script}); status: {status}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text(client: &Client, id: &str) -> String {
    client
        .find(Locator::Id(id))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn key(client: &Client, k: &str) {
    client
        .active_element()
        .await
        .unwrap()
        .send_keys(k)
        .await
        .unwrap();
}

#[test]
fn people_label_pairs_with_the_keyboard_and_the_labels_reach_the_store_the_plot_and_tune() {
    let dir = tempfile::tempdir().unwrap();
    // No --review-input: the texts are where `neardup dedup` read them.
    let server = serve(dir.path(), false);
    assert!(
        server
            .log()
            .contains("found in the input `neardup dedup` read"),
        "{}",
        server.log()
    );
    let pairs = queue(&server);
    let n = pairs.len();
    let driver = Driver::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = browser(&driver).await;
        client.goto(&format!("{}/review", server.base)).await.unwrap();
        // The server needs a token: the page asks for it.
        until(&client, "!document.getElementById('login').hidden", "the token form").await;
        let token = client.find(Locator::Id("token")).await.unwrap();
        token.send_keys("tok-ana").await.unwrap();
        token.send_keys("\u{E007}").await.unwrap(); // Enter
        until(&client, "!document.getElementById('app').hidden", "the page").await;
        until(
            &client,
            &format!("document.querySelectorAll('#queue li').length === {n}"),
            "the queue",
        )
        .await;
        until(&client, "document.getElementById('status').textContent.startsWith('Pair 1 of')", "the first pair").await;
        // With a token, the page labels under the token's name and asks for none.
        assert!(text(&client, "reviewer-line").await.contains("Labelling as ana"));
        let asks = client
            .execute("return document.getElementById('reviewer-form').hidden;", vec![])
            .await
            .unwrap();
        assert_eq!(asks, json!(true));
        // The pair's texts side by side, with what differs marked.
        until(
            &client,
            "document.querySelectorAll('#diff-body tr.row-same').length > 0 && document.querySelectorAll('#diff-body del, #diff-body ins, #diff-body .seg-moved').length > 0",
            "the texts side by side",
        )
        .await;
        let labelled = |k: usize| format!("document.getElementById('queue-info').textContent.startsWith('{k} of {n} labelled')");

        // Ten pairs with the keyboard: d, d, n, d, d, n, d, d, n, d.
        let keys: Vec<&str> = (0..10).map(|i| if i % 3 == 2 { "n" } else { "d" }).collect();
        for (i, k) in keys.iter().enumerate() {
            key(&client, k).await;
            until(&client, &labelled(i + 1), "a label").await;
        }
        // Undo the last (a duplicate), then call that pair unsure: 6, 3 and 1.
        key(&client, "z").await;
        until(&client, &labelled(9), "the undo").await;
        assert!(text(&client, "status").await.starts_with("Undone"));
        key(&client, "u").await;
        until(&client, &labelled(10), "the unsure label").await;

        // The summary: a precision estimate, the plot redrawn, a recommendation.
        until(&client, "!document.getElementById('plot-figure').hidden", "the plot").await;
        until(&client, "document.getElementById('plot').src.startsWith('data:image/svg+xml')", "the plot image").await;
        assert!(text(&client, "precision").await.contains('%'));
        assert!(text(&client, "recommendation").await.contains("Recommended"));
        // The dry run of reevaluate.
        client
            .find(Locator::Css("#dry-run button[type=submit]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        until(&client, "document.getElementById('dry-result').textContent.includes('would split')", "the dry run").await;
        // At a stricter threshold some merges would split; applying them redraws the queue.
        let j = client.find(Locator::Id("dry-j")).await.unwrap();
        j.clear().await.unwrap();
        j.send_keys("0.97\u{E007}").await.unwrap(); // Enter submits the form
        until(&client, "document.getElementById('apply') !== null", "the apply button").await;
        client
            .execute("window.confirm = () => true;", vec![])
            .await
            .unwrap();
        client.find(Locator::Id("apply")).await.unwrap().click().await.unwrap();
        until(&client, "document.getElementById('status').textContent.startsWith('Applied')", "the applied changes").await;
        assert!(text(&client, "dry-result").await.contains("did split"));

        // Every control has a name a screen reader reads; the status is announced.
        let unnamed = client
            .execute(
                "return [...document.querySelectorAll('input')].filter(i => i.labels.length === 0).length
                    + [...document.querySelectorAll('button')].filter(b => !(b.textContent.trim() || b.getAttribute('aria-label'))).length;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(unnamed, json!(0));
        let live = client
            .execute("return document.getElementById('status').getAttribute('aria-live');", vec![])
            .await
            .unwrap();
        assert_eq!(live, json!("polite"));
        // j and k move through the queue.
        key(&client, "k").await;
        until(&client, "document.getElementById('status').textContent.startsWith('Pair 10 of')", "k").await;
        client.close().await.unwrap();
    });

    // The labels are in the store, with who labelled them.
    let stored = labels(&server);
    assert_eq!(stored.len(), 10, "{stored:?}");
    assert!(stored.iter().all(|l| l["by"] == "ana"));
    let count = |v: &str| stored.iter().filter(|l| l["verdict"] == v).count();
    assert_eq!(
        (count("duplicate"), count("not_duplicate"), count("unsure")),
        (6, 3, 1)
    );
    // The first pair labelled is the queue's first (nearest the threshold), a duplicate.
    let first = stored
        .iter()
        .find(|l| l["a"] == pairs[0]["a"] && l["b"] == pairs[0]["b"])
        .expect("the first pair is labelled");
    assert_eq!(first["verdict"], "duplicate");

    // The export, from the CLI while the server runs: the pairs file tune reads.
    let run: Run = neardup(
        dir.path(),
        &[
            "review",
            "--store",
            "s.db",
            "--threshold",
            "0.9",
            "--export",
            "labels.jsonl",
        ],
    );
    run.assert_ok();
    let exported = std::fs::read_to_string(dir.path().join("labels.jsonl")).unwrap();
    let lines: Vec<Value> = exported
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 9, "unsure left out: {exported}");
    assert!(lines
        .iter()
        .all(|l| l["weight"].as_f64().unwrap() >= 1.0 && l["by"] == "ana"));
    let (status, api_export) = server.call("GET", "/v1/labels?format=pairs", None);
    assert_eq!(status, 200);
    assert_eq!(
        api_export.as_str().unwrap(),
        exported,
        "the API exports the same file"
    );
    let tune = neardup(
        dir.path(),
        &["tune", "--pairs", "labels.jsonl", "--store", "s.db"],
    );
    tune.assert_ok();
    assert!(tune.stdout.contains("recommend"), "{}", tune.stdout);
}

#[test]
fn reevaluate_lists_the_changes_applies_them_and_review_prints_the_strata() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let args = [
        "reevaluate",
        "--store",
        "s.db",
        "--jaccard",
        "0.97",
        "--distance",
        "16",
    ];
    let dry = neardup(dir.path(), &args);
    dry.assert_ok();
    let lines: Vec<&str> = dry.stdout.lines().collect();
    assert_eq!(lines[0], "change\trecord\tother\tdistance\tjaccard\tnote");
    let splits = lines.iter().filter(|l| l.starts_with("split\t")).count();
    assert!(splits > 0, "{}", dry.stdout);
    for l in &lines[1..] {
        let jaccard: f64 = l.split('\t').nth(4).unwrap().parse().unwrap();
        if l.starts_with("split") {
            assert!(jaccard < 0.97, "{l}");
        }
    }
    assert!(dry.stderr.contains("nothing written"), "{}", dry.stderr);
    let applied = neardup(dir.path(), &[&args[..], &["--apply"]].concat());
    applied.assert_ok();
    assert!(
        applied.stderr.contains("neardup: applied"),
        "{}",
        applied.stderr
    );
    let again = neardup(dir.path(), &args);
    assert_eq!(
        again
            .stdout
            .lines()
            .filter(|l| l.starts_with("split"))
            .count(),
        0
    );
    let bad = neardup(
        dir.path(),
        &[
            "reevaluate",
            "--store",
            "s.db",
            "--jaccard",
            "1.5",
            "--distance",
            "3",
        ],
    );
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains("--jaccard 1.5"), "{}", bad.stderr);

    // review: CSV of the strata, every row's stratum and scores in its band.
    let review = neardup(
        dir.path(),
        &[
            "review",
            "--store",
            "s.db",
            "--threshold",
            "0.9",
            "--random",
            "5",
        ],
    );
    review.assert_ok();
    let rows: Vec<&str> = review.stdout.lines().collect();
    assert_eq!(rows[0], "stratum,a,b,distance,jaccard,kept,at,verdict");
    assert!(
        rows[1..].iter().any(|r| r.starts_with("random,")),
        "{}",
        review.stdout
    );
    assert_eq!(
        rows[1..]
            .iter()
            .filter(|r| r.starts_with("random,"))
            .count(),
        5
    );
}

#[test]
fn without_a_token_file_labels_carry_the_name_the_page_sends() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let server = Server::start(&store, &["--min-jaccard", "0.9"]);
    let (status, q) = server.call("GET", "/v1/review/queue", None);
    assert_eq!(status, 200, "{q}");
    assert_eq!(q["reviewer"], "anonymous");
    assert_eq!(q["reviewer_from_token"], false);
    let p = &q["pairs"][0];
    let (a, b) = (p["a"].as_str().unwrap(), p["b"].as_str().unwrap());
    let (status, label) = server.call(
        "PUT",
        "/v1/labels",
        Some(&json!({"a": a, "b": b, "verdict": "duplicate", "by": "zoe"})),
    );
    assert_eq!(status, 200, "{label}");
    assert_eq!(label["by"], "zoe");
    let (_, label) = put_label(&server, a, b, "unsure");
    assert_eq!(label["by"], "anonymous");
}
