//! The review page (`/review`) and its API: people judge the pairs nearest the threshold
//! side by side, their labels go into the store, and the labels re-decide the thresholds
//! (seed 000's boundary sample, closed into a loop with `tune` and `reevaluate`).
//!
//! The page is static (compiled in, no CDN) and holds no data, so it is served without the
//! token; everything it shows comes from the `/v1/review/...` and `/v1/labels` endpoints,
//! which need it like the rest of the API. The store keeps no text, so the texts come from
//! the corpus given with `--review-input`, read once at start for the queued records.

pub mod diff;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Extension, Json, Router};
use neardup::store::{Label, Verdict};
use neardup::tune::review::{self, Queue, QueueSpec, QueuedPair};
use neardup::tune::{evaluate, GridSpec, DEFAULT_MIN_PRECISION};
use neardup::{Deduper, Store, Timestamp};
use parking_lot::{Mutex, RwLock};
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::ApiError;
use super::{read, App, Cost};
use crate::args::{InputArgs, InputFormat};
use crate::cmd::review::{ReviewInput, REVIEW_INPUT_KEY};
use crate::input;

/// Rows of the side-by-side diff per page.
const ROWS_PER_PAGE: usize = 200;
/// The largest page number asked for (as documented; past the end a page is empty).
const MAX_PAGE: usize = 1_000_000_000;
/// Diffs kept for paging through them.
const CACHED_DIFFS: usize = 8;
/// Changes a dry run lists (it counts them all).
const LISTED_CHANGES: usize = 200;

/// The name a request's token has (`anonymous` without `--token-file`).
#[derive(Debug, Clone)]
pub(super) struct Reviewer(pub String);

/// One record's text, as the corpus gave it.
struct Text {
    text: String,
}

/// The latest diffs by pair, oldest first.
type DiffCache = VecDeque<((String, String), Arc<diff::SideBySide>)>;

/// The review state of a server.
pub(super) struct Review {
    spec: QueueSpec,
    queue: RwLock<Arc<Queue>>,
    texts: HashMap<String, Text>,
    /// Whether a corpus was given at all.
    corpus: bool,
    diffs: Mutex<DiffCache>,
}

impl Review {
    /// Draws the queue from the store and reads the texts of its records from `inputs`.
    pub(super) fn load(
        store: &dyn Store,
        spec: &QueueSpec,
        inputs: &[PathBuf],
    ) -> anyhow::Result<Review> {
        let spec = *spec;
        let queue = review::review_queue(store, &spec)?;
        let corpus = if inputs.is_empty() {
            // What `neardup dedup` read into this store, if it recorded it.
            match store.meta(REVIEW_INPUT_KEY)? {
                Some(json) => {
                    let recorded: ReviewInput = serde_json::from_str(&json)
                        .map_err(|e| anyhow::anyhow!("the store's {REVIEW_INPUT_KEY}: {e}"))?;
                    let args = recorded.input_args()?;
                    if args.is_none() {
                        eprintln!(
                            "neardup: review: the input `neardup dedup` read ({} files) is gone; give --review-input for the texts",
                            recorded.files.len()
                        );
                    }
                    args
                }
                None => None,
            }
        } else {
            // Every option at its default; the format from the file names, as for a PATH.
            let mut corpus = InputArgs::for_files(inputs.to_vec(), InputFormat::Jsonl);
            corpus.format = None;
            corpus.resolve()?;
            Some(corpus)
        };
        let mut texts = HashMap::new();
        if let Some(corpus) = &corpus {
            let wanted: HashSet<&str> = queue
                .pairs
                .iter()
                .flat_map(|p| [p.a.as_str(), p.b.as_str()])
                .collect();
            let mut rejects = 0u64;
            input::for_each(corpus, |r| {
                match r {
                    Ok(record) if wanted.contains(record.id.as_str()) => {
                        let text = record
                            .fields
                            .iter()
                            .map(|(_, t)| t.as_str())
                            .collect::<Vec<_>>()
                            .join("\n\n");
                        texts.insert(record.id, Text { text });
                    }
                    Ok(_) => {}
                    Err(_) => rejects += 1,
                }
                Ok(())
            })?;
            eprintln!(
                "neardup: review: {} pairs queued, texts of {} of their {} records found in {}{}",
                queue.pairs.len(),
                texts.len(),
                wanted.len(),
                if inputs.is_empty() {
                    format!(
                        "the input `neardup dedup` read ({} files)",
                        corpus.files.len()
                    )
                } else {
                    "--review-input".to_owned()
                },
                if rejects > 0 {
                    format!(" ({rejects} unusable records skipped)")
                } else {
                    String::new()
                }
            );
        }
        Ok(Review {
            spec,
            queue: RwLock::new(Arc::new(queue)),
            texts,
            corpus: corpus.is_some(),
            diffs: Mutex::new(VecDeque::new()),
        })
    }

    fn queue(&self) -> Arc<Queue> {
        self.queue.read().clone()
    }
}

/// The page and its API, to merge into the server's router.
pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/review", get(page))
        .route("/review/app.js", get(script))
        .route("/review/app.css", get(style))
        .route("/v1/review/queue", get(get_queue))
        .route("/v1/review/pair", get(get_pair))
        .route("/v1/review/summary", get(get_summary))
        .route("/v1/review/reevaluate", post(post_reevaluate))
        .route(
            "/v1/labels",
            put(put_label).delete(delete_label).get(get_labels),
        )
}

/// Whether `path` is one of the page's static files (served without the token).
pub(super) fn is_static(path: &str) -> bool {
    matches!(path, "/review" | "/review/app.js" | "/review/app.css")
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'",
            ),
        ],
        body,
    )
        .into_response()
}

async fn page() -> Response {
    asset("text/html; charset=utf-8", include_str!("page.html"))
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("app.js"))
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", include_str!("app.css"))
}

fn label_json(l: &Label) -> Value {
    json!({"a": l.a, "b": l.b, "verdict": l.verdict.as_str(), "source": l.source,
        "distance": l.distance, "jaccard": l.jaccard, "by": l.by, "at": l.at})
}

fn pair_json(p: &QueuedPair, label: Option<&Label>) -> Value {
    json!({
        "a": p.a, "b": p.b, "stratum": p.stratum.as_str(),
        "distance": p.scores.distance, "jaccard": p.scores.jaccard,
        "kept": p.kept, "at": p.at,
        "label": label.map(label_json),
    })
}

fn labels_of(d: &Deduper<Box<dyn Store>>) -> neardup::Result<Vec<Label>> {
    let mut labels = Vec::new();
    d.store().labels(&mut |l| labels.push(l))?;
    Ok(labels)
}

/// Runs `f` with the pipeline's write lock on the blocking pool; `what` names the work in
/// the error of a store failure.
async fn write<T: Send + 'static>(
    app: &App,
    what: &'static str,
    f: impl FnOnce(&mut Deduper<Box<dyn Store>>) -> neardup::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    let deduper = app.deduper.clone();
    tokio::task::spawn_blocking(move || f(&mut deduper.write()))
        .await
        .map_err(|e| ApiError::internal(format!("writer failed: {e}")))?
        .map_err(|e| ApiError::internal(format!("{what}: {e}")))
}

fn store_error(e: neardup::Error) -> ApiError {
    ApiError::internal(format!("reading the store: {e}"))
}

/// Reads the query string as name → value, refusing names not in `known`.
fn params(
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
    known: &[&str],
) -> Result<HashMap<String, String>, ApiError> {
    let Query(q) = q.map_err(|e| {
        ApiError::bad_request(
            "query",
            format!("the query string cannot be read: {}", e.body_text()),
        )
    })?;
    if let Some(name) = q.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(ApiError::bad_request(
            name.clone(),
            format!("unknown query parameter {name:?}: use {}", known.join(", ")),
        ));
    }
    Ok(q)
}

fn required<'a>(q: &'a HashMap<String, String>, name: &str) -> Result<&'a str, ApiError> {
    q.get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request(name, format!("the query parameter {name} is missing"))
        })
}

async fn get_queue(
    State(app): State<App>,
    Extension(reviewer): Extension<Reviewer>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = params(q, &["refresh"])?;
    let refresh = match q.get("refresh").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(
                "refresh",
                format!("refresh is true or false, not {other:?}"),
            ))
        }
    };
    let review = app.review.clone();
    let (queue, labels) = read(&app, Cost::Long, move |d| {
        let queue = if refresh {
            let fresh = Arc::new(review::review_queue(d.store(), &review.spec)?);
            *review.queue.write() = fresh.clone();
            fresh
        } else {
            review.queue()
        };
        Ok::<_, neardup::Error>((queue, labels_of(d)?))
    })
    .await?
    .map_err(store_error)?;
    let by_pair: HashMap<(&str, &str), &Label> = labels
        .iter()
        .map(|l| ((l.a.as_str(), l.b.as_str()), l))
        .collect();
    let pairs: Vec<Value> = queue
        .pairs
        .iter()
        .map(|p| pair_json(p, by_pair.get(&(p.a.as_str(), p.b.as_str())).copied()))
        .collect();
    let populations: HashMap<&str, u64> = queue
        .populations
        .iter()
        .map(|(s, n)| (s.as_str(), *n))
        .collect();
    Ok(Json(json!({
        "threshold": app.review.spec.threshold,
        "margin": app.review.spec.margin,
        "populations": populations,
        "texts": app.review.corpus,
        // Who labels are stored as; without --token-file the page asks for a name.
        "reviewer": reviewer.0,
        "reviewer_from_token": !app.tokens.is_empty(),
        "pairs": pairs,
    })))
}

fn side_json(id: &str, d: &Deduper<Box<dyn Store>>, texts: &HashMap<String, Text>) -> Value {
    let view = d.record(id);
    json!({
        "id": id,
        "url": view.as_ref().and_then(|v| v.url.clone()),
        "first_seen": view.as_ref().map(|v| v.first_seen.to_rfc3339()),
        "stored": view.is_some(),
        "text": texts.contains_key(id),
    })
}

async fn get_pair(
    State(app): State<App>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = params(q, &["a", "b", "page"])?;
    let (a, b) = (required(&q, "a")?.to_owned(), required(&q, "b")?.to_owned());
    let page: usize = match q.get("page") {
        None => 0,
        Some(v) => v.parse().ok().filter(|p| *p <= MAX_PAGE).ok_or_else(|| {
            ApiError::bad_request(
                "page",
                format!("page is a whole number from 0 to {MAX_PAGE}, not {v:?}"),
            )
        })?,
    };
    let queue = app.review.queue();
    let Some(pair) = queue.find(&a, &b).cloned() else {
        return Err(unknown_pair(&a, &b));
    };
    let review = app.review.clone();
    let (ka, kb) = (a.clone(), b.clone());
    let diff = tokio::task::spawn_blocking(move || diff_of(&review, &ka, &kb))
        .await
        .map_err(|e| ApiError::internal(format!("diff failed: {e}")))?;
    let review = app.review.clone();
    let (sides, label) = read(&app, Cost::Short, move |d| {
        let label = labels_of(d).map(|ls| ls.into_iter().find(|l| l.a == a && l.b == b));
        (
            [
                side_json(&a, d, &review.texts),
                side_json(&b, d, &review.texts),
            ],
            label,
        )
    })
    .await?;
    let label = label.map_err(store_error)?;
    let mut out = pair_json(&pair, label.as_ref());
    out["left"] = sides[0].clone();
    out["right"] = sides[1].clone();
    out["rule"] = json!(if pair.stratum.is_merge() {
        "simhash+jaccard"
    } else {
        "rejected by simhash+jaccard"
    });
    out["diff"] = match diff {
        Some(d) => json!({
            "page": d.page(page, ROWS_PER_PAGE),
            "left_words": d.left_words, "right_words": d.right_words,
            "same_words_left": d.same_words_left, "same_words_right": d.same_words_right,
            "coarse": d.coarse,
        }),
        None => Value::Null,
    };
    Ok(Json(out))
}

/// The side-by-side diff of a pair, from the cache or computed; `None` without both texts.
fn diff_of(review: &Review, a: &str, b: &str) -> Option<Arc<diff::SideBySide>> {
    let key = (a.to_owned(), b.to_owned());
    if let Some((_, d)) = review.diffs.lock().iter().find(|(k, _)| *k == key) {
        return Some(d.clone());
    }
    let (ta, tb) = (review.texts.get(a)?, review.texts.get(b)?);
    let d = Arc::new(diff::side_by_side(&ta.text, &tb.text));
    let mut cache = review.diffs.lock();
    if cache.len() >= CACHED_DIFFS {
        cache.pop_front();
    }
    cache.push_back((key, d.clone()));
    Some(d)
}

fn unknown_pair(a: &str, b: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("the pair ({a:?}, {b:?}) is not in the review queue: GET /v1/review/queue lists its pairs"),
    )
}

/// A label as the page sends it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelIn {
    a: String,
    b: String,
    verdict: String,
    /// Who, when the server has no token file (else the token's name is used).
    by: Option<String>,
}

async fn put_label(
    State(app): State<App>,
    Extension(reviewer): Extension<Reviewer>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Json<Value>, ApiError> {
    let bytes = super::http::json_body(&app, &headers, body).await?;
    let input: LabelIn = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request("body", format!("the label cannot be read: {e}")))?;
    let Some(verdict) = Verdict::parse(&input.verdict) else {
        return Err(ApiError::bad_request(
            "verdict",
            format!(
                "unknown verdict {:?}: use duplicate, not_duplicate or unsure",
                input.verdict
            ),
        ));
    };
    let by = match (&app.tokens.is_empty(), input.by) {
        (true, Some(by)) if !by.trim().is_empty() => by.trim().to_owned(),
        _ => reviewer.0,
    };
    let queue = app.review.queue();
    let Some(pair) = queue.find(&input.a, &input.b) else {
        return Err(unknown_pair(&input.a, &input.b));
    };
    let label = Label {
        a: pair.a.clone(),
        b: pair.b.clone(),
        verdict,
        source: pair.stratum.as_str().to_owned(),
        distance: pair.scores.distance,
        jaccard: pair.scores.jaccard,
        by,
        at: Timestamp::now().to_rfc3339(),
    };
    let stored = label.clone();
    write(&app, "storing the label", move |d| d.put_label(&stored)).await?;
    Ok(Json(label_json(&label)))
}

async fn delete_label(
    State(app): State<App>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = params(q, &["a", "b"])?;
    let (a, b) = (required(&q, "a")?.to_owned(), required(&q, "b")?.to_owned());
    let (ka, kb) = (a.clone(), b.clone());
    let removed = write(&app, "removing the label", move |d| {
        d.remove_label(&ka, &kb)
    })
    .await?;
    if !removed {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("the pair ({a:?}, {b:?}) has no label"),
        ));
    }
    Ok(Json(json!({"a": a, "b": b, "removed": true})))
}

async fn get_labels(
    State(app): State<App>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = params(q, &["format"])?;
    let pairs_file = match q.get("format").map(String::as_str) {
        None | Some("json") => false,
        Some("pairs") => true,
        Some(other) => {
            return Err(ApiError::bad_request(
                "format",
                format!(
                    "format is json or pairs (the JSON Lines `neardup tune` reads), not {other:?}"
                ),
            ))
        }
    };
    let labels = read(&app, Cost::Long, labels_of)
        .await?
        .map_err(store_error)?;
    if pairs_file {
        let queue = app.review.queue();
        let mut text = String::new();
        for line in crate::cmd::review::export_lines(&queue, &labels) {
            text.push_str(&line.to_string());
            text.push('\n');
        }
        return Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], text).into_response());
    }
    let labels: Vec<Value> = labels.iter().map(label_json).collect();
    Ok(Json(json!({ "labels": labels })).into_response())
}

async fn get_summary(State(app): State<App>) -> Result<Json<Value>, ApiError> {
    let (rule, labels) = read(&app, Cost::Long, |d| labels_of(d).map(|l| (d.rule(), l)))
        .await?
        .map_err(store_error)?;
    let queue = app.review.queue();
    tokio::task::spawn_blocking(move || {
        summary(&queue, &labels, rule.max_distance, rule.min_jaccard)
    })
    .await
    .map_err(|e| ApiError::internal(format!("summary failed: {e}")))?
    .map(Json)
}

fn summary(
    queue: &Queue,
    labels: &[Label],
    max_distance: u32,
    min_jaccard: f64,
) -> Result<Value, ApiError> {
    let s = review::summarize(queue, labels);
    let pairs: Vec<_> = review::labelled_pairs(queue, labels)
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    let mut out = json!({
        "labels": labels.len(),
        "counts": s.counts,
        "precision": s.precision,
        "precision_by_stratum": s.precision_by_stratum,
        "boundary_only": s.boundary_only,
        "current": {"max_distance": max_distance, "min_jaccard": min_jaccard},
        "recommended": null,
        "plot_svg": null,
        "note": null,
    });
    match evaluate(&pairs, &GridSpec::default()) {
        Ok(grid) => {
            let rec = grid.recommend(DEFAULT_MIN_PRECISION);
            out["recommended"] = json!({
                "max_distance": rec.cell.max_distance,
                "min_jaccard": rec.cell.min_jaccard,
                "precision": rec.cell.precision,
                "recall": rec.cell.recall,
                "f1": rec.cell.f1,
                "min_precision": rec.min_precision,
                "meets_min_precision": rec.meets_min_precision,
            });
            let data = crate::cmd::tune::plot::PlotData {
                grid: &grid,
                max_distance: rec.cell.max_distance,
                min_jaccard: rec.cell.min_jaccard,
                pairs: &pairs,
                current: Some((max_distance, min_jaccard)),
            };
            match crate::cmd::tune::plot::svg(&data, (900, 640)) {
                Ok(svg) => out["plot_svg"] = json!(svg),
                Err(e) => out["note"] = json!(format!("the plot could not be drawn: {e}")),
            }
        }
        Err(e) => out["note"] = json!(format!("no recommendation yet: {e}")),
    }
    Ok(out)
}

/// `reevaluate` under other thresholds: a dry run, or applied.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReevaluateIn {
    max_distance: u32,
    min_jaccard: f64,
    /// Apply the changes (as `neardup reevaluate --apply`), not only list them.
    #[serde(default)]
    apply: bool,
}

async fn post_reevaluate(
    State(app): State<App>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Json<Value>, ApiError> {
    let bytes = super::http::json_body(&app, &headers, body).await?;
    let input: ReevaluateIn = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(
            "body",
            format!("send {{\"max_distance\": BITS, \"min_jaccard\": J}}: {e}"),
        )
    })?;
    if !(0.0..=1.0).contains(&input.min_jaccard) {
        return Err(ApiError::bad_request(
            "min_jaccard",
            format!("min_jaccard {} must be between 0 and 1", input.min_jaccard),
        ));
    }
    if input.max_distance > 64 {
        return Err(ApiError::bad_request(
            "max_distance",
            format!("max_distance {} is beyond 64 bits", input.max_distance),
        ));
    }
    let (k, j) = (input.max_distance, input.min_jaccard);
    let (changes, applied) = if input.apply {
        // Decided and applied under the write lock, so that nothing commits in between.
        let spec = app.review.spec;
        let (changes, applied, queue) = write(&app, "applying the changes", move |d| {
            let changes = d.reevaluate(k, j)?;
            let applied = d.apply_changes(&changes, Timestamp::now())?;
            let queue = review::review_queue(d.store(), &spec);
            Ok((changes, applied, queue))
        })
        .await?;
        // The queue is drawn again: merges were split and made.
        if let Ok(queue) = queue {
            *app.review.queue.write() = Arc::new(queue);
        }
        (changes, Some(applied))
    } else {
        let changes = read(&app, Cost::Long, move |d| d.reevaluate(k, j))
            .await?
            .map_err(|e| ApiError::internal(format!("re-evaluating: {e}")))?;
        (changes, None)
    };
    let (splits, merges, blocked) = neardup::pipeline::Change::counts(&changes);
    let listed: Vec<Value> = changes
        .iter()
        .take(LISTED_CHANGES)
        .map(|c| {
            let s = c.scores();
            json!({"change": c.name(), "record": c.record(), "other": c.other(),
                "distance": s.distance, "jaccard": s.jaccard, "applicable": c.applicable()})
        })
        .collect();
    Ok(Json(json!({
        "max_distance": input.max_distance, "min_jaccard": input.min_jaccard,
        "splits": splits, "merges": merges, "not_applicable": blocked,
        "changes": listed, "truncated": changes.len() > listed.len(),
        "applied": applied,
    })))
}
