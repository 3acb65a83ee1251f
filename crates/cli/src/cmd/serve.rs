//! `neardup serve`: the online service, an HTTP API over the same store as `neardup dedup`.
//!
//! The library is synchronous; this module owns the async edge. The pipeline is shared as
//! `Arc<RwLock<Deduper>>`: reads (query, records, clusters, merges, metrics) take the read
//! lock on tokio's blocking pool, so many run at once; every change goes through one writer
//! thread ([`writer`]) that groups queued inserts into one durable commit and answers each
//! request after it.

mod api;
mod http;
mod metrics;
mod openapi;
mod review;
mod watch;
mod writer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use neardup::pipeline::{Analyzer, PreparedRecord};
use neardup::{Deduper, Record, Scratch, Store, Timestamp};
use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::args::ScoringArgs;
use crate::cmd::watch::WatchArgs;
use api::{Answer, ApiError, Conversion, Match};
use metrics::Metrics;
use writer::{Job, Shared, WriterConfig, WriterState};

/// Arguments of `neardup serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub scoring: ScoringArgs,
    /// With --watchlist, every inserted and queried record is also checked against it and
    /// its answer lists the alerts; /metrics counts them by level. Changes made to the
    /// watchlist by `neardup watch add`, `erase` or `expire` while the server runs apply
    /// within a second.
    #[command(flatten)]
    pub watch: WatchArgs,
    /// The store: an SQLite file, created if missing; the same store `neardup dedup` uses.
    /// The server holds its writer lock while it runs: a `dedup` on it waits for the server
    /// to stop, and a server started while a `dedup` runs waits for it.
    #[arg(long, value_name = "PATH", default_value = "neardup.db")]
    pub store: PathBuf,
    /// Refuse to start (exit code 5) when another process is writing to the store, instead
    /// of waiting for it to finish.
    #[arg(long)]
    pub no_wait: bool,
    /// Address to listen on. The default is loopback only; port 0 picks a free port (the
    /// address is printed on stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Sliding window, e.g. `5m`, `30s`, `2h`: records are compared only with records first
    /// seen within it; older ones leave the index (not the store) within a second or
    /// window/100, whichever is less.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub window: Option<Duration>,
    /// File holding bearer tokens: every endpoint but /healthz (and the review page's static
    /// files) then needs `Authorization: Bearer TOKEN` (the scheme is case-insensitive).
    /// One token per line, either alone or as `NAME TOKEN`: the name is who the review page's
    /// labels are stored as (`token` for a token alone); `#` starts a comment line. Without
    /// it, anyone who can reach the address can insert and erase records.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Corpus the review page (/review) shows texts from, repeatable (like a PATH argument of
    /// `neardup dedup`; the store keeps no text). Default: the files `neardup dedup` read into
    /// the store, which it records there. Read once at start, for the queued pairs.
    #[arg(long = "review-input", value_name = "FILE")]
    pub review_input: Vec<PathBuf>,
    /// The review queue: this many merges near the threshold, and as many rejected
    /// candidates under it.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub review_sample: usize,
    /// The review queue: this many random merges away from the threshold (an unbiased
    /// precision estimate needs them; 0 for none).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub review_random: usize,
    /// The review queue: pairs whose Jaccard is within this of the threshold are near it.
    #[arg(long, value_name = "M", default_value_t = 0.03)]
    pub review_margin: f64,
    /// Largest request body, bytes (larger ones get 413).
    #[arg(long, value_name = "BYTES", default_value_t = 8 << 20)]
    pub max_body_bytes: usize,
    /// Most records in one request (more get 413).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_batch: usize,
    /// Most records in one group commit: queued inserts share one transaction up to this.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_group: usize,
    /// Weight of a field's shingles, as NAME=N, as in `neardup dedup`.
    #[arg(long = "field-weight", value_name = "NAME=N", value_parser = crate::args::parse_field_weight)]
    pub field_weights: Vec<(String, u32)>,
    /// Detect and store each inserted record's language, as `neardup dedup` does. Off by
    /// default: the language decides nothing (unless --stopwords, which turns it on) and
    /// detecting it is the largest single cost of a query.
    #[arg(long)]
    pub detect_language: bool,
    /// Worker threads for HTTP (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration: expected e.g. 5m, 30s, 2h, 500ms"))?;
    let scale = match unit {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?}: use ms, s, m, h or d"
            ))
        }
    };
    let secs = n * scale;
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("the window must be longer than 0, not {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What every handler shares.
struct Inner {
    deduper: Shared,
    analysis: writer::Analysis,
    /// The writer's queue; taken at shutdown so the writer drains it and stops.
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    writer: Arc<WriterState>,
    metrics: Arc<Metrics>,
    conversion: Conversion,
    /// The accepted bearer tokens; empty: no token is needed.
    tokens: Vec<Token>,
    /// The review page's queue and texts.
    review: Arc<review::Review>,
    max_body_bytes: usize,
    max_batch: usize,
    store_path: PathBuf,
    /// The OpenAPI document of this server (it depends on the token and the limits).
    openapi: Value,
    /// The watchlist records are checked against, if any.
    watch: Option<Arc<watch::Watch>>,
}

type App = Arc<Inner>;

pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    if args.max_batch == 0 || args.max_group == 0 || args.max_body_bytes == 0 {
        bail!("--max-batch, --max-group and --max-body-bytes must be at least 1");
    }
    if !(0.0..=1.0).contains(&args.review_margin) {
        bail!(
            "--review-margin {} must be between 0 and 1",
            args.review_margin
        );
    }
    let tokens = match &args.token_file {
        None => Vec::new(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the token file {}", path.display()))?;
            parse_tokens(&text).with_context(|| format!("the token file {}", path.display()))?
        }
    };
    let _lock = super::lock_store(&args.store, "neardup serve", args.no_wait)?;
    let started = Instant::now();
    let deduper = open(args).with_context(|| format!("opening store {}", args.store.display()))?;
    let records = deduper.stats().records;
    let review = Arc::new(
        review::Review::load(
            deduper.store(),
            &neardup::tune::review::QueueSpec {
                threshold: deduper.rule().min_jaccard,
                margin: args.review_margin,
                sample: args.review_sample,
                random: args.review_random,
                seed: 0,
            },
            &args.review_input,
        )
        .context("loading the review queue")?,
    );
    let analysis = writer::Analysis::new(&deduper);
    let deduper: Shared = Arc::new(RwLock::new(deduper));
    let watch = args
        .watch
        .open(&args.scoring.profile, Some(&args.store))?
        .map(|w| Arc::new(watch::Watch::new(w)));
    let metrics = Arc::new(Metrics::default());
    if let Some(w) = &watch {
        metrics.alert_levels(w.levels().iter().map(String::as_str));
    }
    let writer_state = Arc::new(WriterState {
        failed: AtomicBool::new(false),
        failure: Mutex::new(None),
        records: AtomicUsize::new(records),
    });
    let (tx, rx) = mpsc::channel();
    let writer = {
        let (d, a, s, m) = (
            deduper.clone(),
            analysis.clone(),
            writer_state.clone(),
            metrics.clone(),
        );
        let config = WriterConfig {
            max_group: args.max_group,
            window: args.window,
            remember: 100_000,
        };
        std::thread::Builder::new()
            .name("neardup-writer".into())
            .spawn(move || writer::run(d, a, rx, config, s, m))
            .context("starting the writer thread")?
    };
    let openapi = openapi::document(&openapi::Settings {
        token_required: !tokens.is_empty(),
        max_batch: args.max_batch,
        max_body_bytes: args.max_body_bytes,
    });
    let app: App = Arc::new(Inner {
        deduper,
        analysis,
        jobs: Mutex::new(Some(tx)),
        writer: writer_state,
        metrics,
        conversion: Conversion {
            field_weights: args.field_weights.clone(),
        },
        tokens,
        review,
        max_body_bytes: args.max_body_bytes,
        max_batch: args.max_batch,
        store_path: args.store.clone(),
        openapi,
        watch,
    });

    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all().thread_name("neardup-http");
    if let Some(n) = args.threads {
        runtime.worker_threads(n.max(1));
    }
    let runtime = runtime.build().context("starting the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        let addr = listener.local_addr()?;
        eprintln!(
            "neardup: listening on http://{addr} ({records} records in {}, opened in {:.1}s{})",
            args.store.display(),
            started.elapsed().as_secs_f64(),
            args.window
                .map(|w| format!(", window {}s", w.as_secs_f64()))
                .unwrap_or_default()
        );
        axum::serve(listener, router(app.clone()))
            .with_graceful_shutdown(shutdown_signal())
            .await
            .context("serving")?;
        anyhow::Ok(())
    })?;
    // Every request has been answered; let the writer finish its queue and stop.
    drop(app.jobs.lock().take());
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    eprintln!(
        "neardup: stopped; {} records in {}",
        app.writer.records.load(Ordering::Relaxed),
        args.store.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Opens the pipeline as [`super::open_deduper`] does, language detection aside.
fn open(args: &ServeArgs) -> anyhow::Result<Deduper<Box<dyn Store>>> {
    super::open_deduper_with(
        &args.store,
        &args.scoring.profile,
        &args.scoring.rule,
        0,
        args.detect_language,
        false,
    )
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term => {},
        _ = tokio::signal::ctrl_c() => {},
    }
    eprintln!("neardup: shutting down: finishing requests in flight");
}

/// A bearer token and the name labels made with it are stored under.
struct Token {
    name: String,
    token: String,
}

/// Reads a token file: one token per line, alone or as `NAME TOKEN`; blank lines and lines
/// starting with `#` are skipped.
fn parse_tokens(text: &str) -> anyhow::Result<Vec<Token>> {
    let mut tokens: Vec<Token> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, token) = match words[..] {
            [token] => ("token", token),
            [name, token] => (name, token),
            _ => bail!(
                "line {}: a line holds a token, or a name and a token, not {} words",
                i + 1,
                words.len()
            ),
        };
        if tokens.iter().any(|t| t.token == token) {
            bail!("line {}: the token is on an earlier line too", i + 1);
        }
        tokens.push(Token {
            name: name.to_owned(),
            token: token.to_owned(),
        });
    }
    if tokens.is_empty() {
        bail!("it holds no token");
    }
    Ok(tokens)
}

fn router(app: App) -> Router {
    Router::new()
        .merge(review::routes())
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics::metrics_text))
        .route("/v1/openapi.json", get(openapi_json))
        .route("/v1/records", post(post_records))
        .route("/v1/query", post(post_query))
        .route("/v1/records/{id}", get(get_record).delete(delete_record))
        .route("/v1/clusters/{id}", get(get_cluster))
        .route("/v1/merges", get(get_merges))
        .fallback(http::not_found)
        .method_not_allowed_fallback(http::method_not_allowed)
        .layer(middleware::from_fn_with_state(app.clone(), http::authorize))
        .layer(middleware::from_fn_with_state(app.clone(), http::observe))
        .with_state(app)
}

async fn healthz(State(app): State<App>) -> Response {
    let records = app.writer.records.load(Ordering::Relaxed);
    if app.writer.failed.load(Ordering::SeqCst) {
        let error = app.writer.failure.lock().clone();
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "failing", "records": records, "error": error})),
        )
            .into_response();
    }
    Json(json!({"status": "ok", "records": records})).into_response()
}

async fn openapi_json(State(app): State<App>) -> Json<Value> {
    Json(app.openapi.clone())
}

/// How long a read may take.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cost {
    /// Tens of microseconds: memory and the store's page cache.
    Short,
    /// A scan (merge log, statistics, a batch).
    Long,
}

/// Runs `f` with the read lock. A short read runs right here when the lock is free, which
/// saves two thread hand-offs per query; anything else runs on the blocking pool, so that
/// neither a commit in progress nor a scan stalls an async worker.
async fn read<T: Send + 'static>(
    app: &App,
    cost: Cost,
    f: impl FnOnce(&Deduper<Box<dyn Store>>) -> T + Send + 'static,
) -> Result<T, ApiError> {
    if cost == Cost::Short {
        if let Some(d) = app.deduper.try_read() {
            return Ok(f(&d));
        }
    }
    let deduper = app.deduper.clone();
    tokio::task::spawn_blocking(move || f(&deduper.read()))
        .await
        .map_err(|e| ApiError::internal(format!("reader failed: {e}")))
}

fn unavailable(app: &App) -> Option<ApiError> {
    if !app.writer.failed.load(Ordering::SeqCst) {
        return None;
    }
    let failure = app.writer.failure.lock().clone().unwrap_or_default();
    Some(ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("writes are refused until a restart: {failure}"),
    ))
}

/// Queues the job `job` makes with a reply channel for the writer, and waits for its
/// answer: 503 when the writer is gone or shutting down, or the job failed.
async fn ask_writer<T>(
    app: &App,
    job: impl FnOnce(oneshot::Sender<Result<T, String>>) -> Job,
) -> Result<T, ApiError> {
    let (reply, answer) = oneshot::channel();
    {
        let jobs = app.jobs.lock();
        let shutting_down = || ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
        jobs.as_ref()
            .ok_or_else(shutting_down)?
            .send(job(reply))
            .map_err(|_| shutting_down())?;
    }
    answer
        .await
        .map_err(|_| ApiError::internal("the writer stopped"))?
        .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e))
}

/// The reply to records inserted or queried: every answer for a batch; for one record its
/// answer, or its rejection as an error.
fn reply(answers: Vec<Answer>, batch: bool) -> Result<Response, ApiError> {
    if batch {
        return Ok(Json(answers).into_response());
    }
    let answer = answers.into_iter().next().expect("one record, one answer");
    if answer.decision == "rejected" {
        return Err(api::rejection_error(&answer));
    }
    Ok(Json(answer).into_response())
}

async fn post_records(
    State(app): State<App>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if let Some(e) = unavailable(&app) {
        return Err(e);
    }
    let (records, batch) = http::records_of(&app, &headers, body, true).await?;
    if records.is_empty() {
        return Ok(Json(json!([])).into_response());
    }
    // Analysed here, on the request's thread, so the single writer only decides and
    // commits (and analysis overlaps the writer's previous group).
    let (records, prepared, _) = analysed(&app, records).await?;
    let (records, alerts) = watch::alerts_of(&app, records).await?;
    let mut answers = ask_writer(&app, |reply| Job::Insert {
        records,
        prepared,
        reply,
    })
    .await?;
    watch::attach(&app, &mut answers, alerts);
    reply(answers, batch)
}

/// Records analysed outside every lock: inline for one record, on the blocking pool for a
/// batch. Returns the analyser copy used.
async fn analysed(
    app: &App,
    records: Vec<Record>,
) -> Result<(Vec<Record>, Vec<PreparedRecord>, Arc<Analyzer>), ApiError> {
    let analyzer = app.analysis.get();
    let analyse = move |records: Vec<Record>| {
        let mut scratch = Scratch::default();
        let prepared: Vec<PreparedRecord> = records
            .iter()
            .map(|r| analyzer.prepare_one(r, &mut scratch))
            .collect();
        (records, prepared, analyzer)
    };
    if records.len() <= 1 {
        Ok(analyse(records))
    } else {
        tokio::task::spawn_blocking(move || analyse(records))
            .await
            .map_err(|e| ApiError::internal(format!("analysis failed: {e}")))
    }
}

async fn post_query(
    State(app): State<App>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (records, batch) = http::records_of(&app, &headers, body, false).await?;
    let cost = if records.len() > 1 {
        Cost::Long
    } else {
        Cost::Short
    };
    let (records, prepared, analyzer) = analysed(&app, records).await?;
    let (records, alerts) = watch::alerts_of(&app, records).await?;
    let shared = app.analysis.clone();
    let answers = read(&app, cost, move |d| {
        let answers = records
            .iter()
            .zip(prepared)
            .map(|(r, p)| query_one(d, r, p))
            .collect::<Vec<_>>();
        if analyzer.generation() != d.analyzer_generation() {
            shared.refresh(d);
        }
        answers
    })
    .await?;
    for a in &answers {
        app.metrics.queried(a.decision);
    }
    let mut answers = answers;
    watch::attach(&app, &mut answers, alerts);
    reply(answers, batch)
}

/// The answer an insert of `r` (analysed as `prepared`) would get now.
fn query_one(d: &Deduper<Box<dyn Store>>, r: &Record, prepared: PreparedRecord) -> Answer {
    let mut a = Answer::blank(&r.id, "new");
    // The fingerprint and length as the pipeline computes them (host boilerplate removed,
    // or the whole text when nothing else is left; character n-grams for short text).
    let (Some(fingerprint), Some(tokens)) = (prepared.fingerprint(), prepared.tokens()) else {
        a.decision = "rejected";
        a.error = Some(
            prepared
                .rejection()
                .unwrap_or("cannot be analysed")
                .to_owned(),
        );
        return a;
    };
    a.fingerprint = Some(match d.hasher().profile().bits() {
        neardup::FingerprintBits::Bits64 => format!("{:016x}", fingerprint as u64),
        neardup::FingerprintBits::Bits128 => format!("{fingerprint:032x}"),
    });
    let matches = match d.query_prepared(r, prepared) {
        Ok(m) => m,
        Err(e) => {
            a.decision = "rejected";
            a.error = Some(e.to_string());
            return a;
        }
    };
    let Some((best, scores)) = matches.first() else {
        if tokens < d.rule().min_words {
            a.decision = "too_short";
        }
        return a;
    };
    // The exact tier reports Jaccard 1 (identical normalised text); a verified near
    // duplicate with an identical shingle set is as good as exact.
    a.decision = if scores.jaccard >= 1.0 {
        "exact_duplicate"
    } else {
        "near_duplicate"
    };
    let survivor = d.record(best).map(|v| v.survivor);
    a.of = survivor.clone().or_else(|| Some(best.clone()));
    a.survivor = survivor;
    a.matched = Some(best.clone());
    a.distance = Some(scores.distance);
    a.jaccard = Some(scores.jaccard);
    a.matches = Some(
        matches
            .iter()
            .take(10)
            .map(|(id, s)| Match {
                id: id.clone(),
                distance: s.distance,
                jaccard: s.jaccard,
            })
            .collect(),
    );
    a
}

async fn get_record(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    read_by_id(&app, id, |d, id| {
        d.record(id)
            .map(|r| api::record_json(&r, d.cluster_of(id).as_ref()))
    })
    .await
}

/// What `view` shows of the record whose id the path names, read with the read lock;
/// 404 naming the id when it shows nothing.
async fn read_by_id(
    app: &App,
    id: Result<Path<String>, PathRejection>,
    view: impl FnOnce(&Deduper<Box<dyn Store>>, &str) -> Option<Value> + Send + 'static,
) -> Result<Json<Value>, ApiError> {
    let id = http::path_id(id)?;
    let found = read(app, Cost::Short, {
        let id = id.clone();
        move |d| view(d, &id)
    })
    .await?;
    found
        .map(Json)
        .ok_or_else(|| ApiError::not_found("record", &id))
}

async fn delete_record(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = http::path_id(id)?;
    if let Some(e) = unavailable(&app) {
        return Err(e);
    }
    let erased = ask_writer(&app, |reply| Job::Erase {
        id: id.clone(),
        reply,
    })
    .await?;
    if erased {
        Ok(Json(json!({"erased": id})))
    } else {
        Err(ApiError::not_found("record", &id))
    }
}

async fn get_cluster(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    read_by_id(&app, id, |d, id| {
        d.cluster_of(id).map(|c| api::cluster_json(&c))
    })
    .await
}

async fn get_merges(
    State(app): State<App>,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(params) = params.map_err(|e| {
        ApiError::bad_request(
            "query",
            format!(
                "the query string cannot be read ({}): use since=RFC3339-TIME and limit=N",
                e.body_text()
            ),
        )
    })?;
    let mut since = None;
    let mut limit = 1000usize;
    for (name, value) in &params {
        match name.as_str() {
            "since" => {
                since = Some(
                    Timestamp::parse_rfc3339(value)
                        .map_err(|e| ApiError::bad_request("since", e.to_string()))?,
                )
            }
            "limit" => {
                limit = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=100_000).contains(n))
                    .ok_or_else(|| {
                        ApiError::bad_request(
                            "limit",
                            format!("limit must be a whole number from 1 to 100000, not {value:?}"),
                        )
                    })?
            }
            other => {
                return Err(ApiError::bad_request(
                    other,
                    format!("unknown query parameter {other:?}: use since and limit"),
                ))
            }
        }
    }
    let result = read(&app, Cost::Long, move |d| {
        let mut out = Vec::new();
        d.store()
            .merges_since(since, limit, &mut |m| out.push(api::merge_json(&m)))
            .map(|truncated| json!({"merges": out, "truncated": truncated}))
    })
    .await?;
    result
        .map(Json)
        .map_err(|e| ApiError::internal(format!("reading the merge log: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("5 weeks").is_err());
        assert!(parse_duration("0s").is_err());
    }
}
