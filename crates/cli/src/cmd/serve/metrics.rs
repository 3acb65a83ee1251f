//! Counters and latency histograms of the service, written in the Prometheus text format.
//!
//! Hand-rolled on atomics: a handful of fixed series does not need a metrics crate, and
//! recording stays a few relaxed atomic adds per request.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering, Ordering::Relaxed};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;

use super::api::ApiError;
use super::{read, App, Cost};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5,
];

/// Decision kinds, in the order of the counters.
pub const DECISIONS: [&str; 5] = [
    "new",
    "exact_duplicate",
    "near_duplicate",
    "too_short",
    "rejected",
];

#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|&b| s <= b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micros.fetch_add(d.as_micros() as u64, Relaxed);
    }

    fn write(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (i, b) in BUCKETS.iter().enumerate() {
            cumulative += self.buckets[i].load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b}\"}} {cumulative}");
        }
        let count = self.count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
        let sum = self.sum_micros.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
    }
}

/// Every series the service exports, apart from the store's gauges.
#[derive(Default)]
pub struct Metrics {
    /// Inserted records by decision.
    inserted: [AtomicU64; DECISIONS.len()],
    /// Queried records by answer.
    queried: [AtomicU64; DECISIONS.len()],
    already_stored: AtomicU64,
    erased: AtomicU64,
    commits: AtomicU64,
    committed_records: AtomicU64,
    commit_latency: Histogram,
    evicted: AtomicU64,
    /// Request latency by route.
    latency: Mutex<BTreeMap<&'static str, std::sync::Arc<Histogram>>>,
    /// Responses by (route, status).
    responses: Mutex<BTreeMap<(&'static str, u16), u64>>,
    /// With a watchlist: records that raised an alert, by their most severe level.
    alerts: Mutex<BTreeMap<String, u64>>,
}

fn slot(decision: &str) -> usize {
    DECISIONS
        .iter()
        .position(|d| *d == decision)
        .unwrap_or(DECISIONS.len() - 1)
}

impl Metrics {
    pub fn inserted(&self, decision: &str, already_stored: bool) {
        if already_stored {
            self.already_stored.fetch_add(1, Relaxed);
        } else {
            self.inserted[slot(decision)].fetch_add(1, Relaxed);
        }
    }

    pub fn queried(&self, decision: &str) {
        self.queried[slot(decision)].fetch_add(1, Relaxed);
    }

    /// Exports a zero for each alert level before any is raised.
    pub fn alert_levels<'a>(&self, levels: impl IntoIterator<Item = &'a str>) {
        let mut alerts = self.alerts.lock();
        for level in levels {
            alerts.entry(level.to_owned()).or_default();
        }
    }

    pub fn alerted(&self, level: &str) {
        *self.alerts.lock().entry(level.to_owned()).or_default() += 1;
    }

    pub fn erased(&self, n: u64) {
        self.erased.fetch_add(n, Relaxed);
    }

    pub fn evicted(&self, n: u64) {
        self.evicted.fetch_add(n, Relaxed);
    }

    pub fn committed(&self, records: usize, took: Duration) {
        self.commits.fetch_add(1, Relaxed);
        self.committed_records.fetch_add(records as u64, Relaxed);
        self.commit_latency.observe(took);
    }

    pub fn request(&self, route: &'static str, status: u16, took: Duration) {
        let h = self.latency.lock().entry(route).or_default().clone();
        h.observe(took);
        *self.responses.lock().entry((route, status)).or_default() += 1;
    }

    /// The exposition text, with the store's gauges appended by the caller.
    pub fn render(&self, out: &mut String) {
        by_decision(
            out,
            "neardup_decisions_total",
            "Inserted records by decision (POST /v1/records).",
            &self.inserted,
        );
        counter(
            out,
            "neardup_already_stored_total",
            "Inserted records whose id was already stored with the same text (retries).",
            &self.already_stored,
        );
        by_decision(
            out,
            "neardup_query_answers_total",
            "Queried records by answer (POST /v1/query).",
            &self.queried,
        );
        counter(out, "neardup_erased_total", "Records erased.", &self.erased);
        counter(
            out,
            "neardup_window_evicted_total",
            "Records taken out of the index by the sliding window.",
            &self.evicted,
        );
        counter(
            out,
            "neardup_commits_total",
            "Store commits (each one durable transaction for every insert request queued).",
            &self.commits,
        );
        counter(
            out,
            "neardup_committed_records_total",
            "Records processed by those commits.",
            &self.committed_records,
        );
        family(
            out,
            "neardup_commit_duration_seconds",
            "histogram",
            "Time of one group commit: analysis, decisions and the durable store write.",
        );
        self.commit_latency
            .write(out, "neardup_commit_duration_seconds", "writer=\"records\"");
        family(
            out,
            "neardup_request_duration_seconds",
            "histogram",
            "HTTP request latency by route, from request to response headers.",
        );
        for (route, h) in self.latency.lock().iter() {
            h.write(
                out,
                "neardup_request_duration_seconds",
                &format!("route=\"{route}\""),
            );
        }
        family(
            out,
            "neardup_http_responses_total",
            "counter",
            "HTTP responses by route and status.",
        );
        for ((route, status), n) in self.responses.lock().iter() {
            let _ = writeln!(
                out,
                "neardup_http_responses_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        let alerts = self.alerts.lock();
        if !alerts.is_empty() {
            family(
                out,
                "neardup_watchlist_alerts_total",
                "counter",
                "Inserted and queried records that raised a watchlist alert, by their most severe level.",
            );
            for (level, n) in alerts.iter() {
                let _ = writeln!(
                    out,
                    "neardup_watchlist_alerts_total{{level=\"{level}\"}} {n}"
                );
            }
        }
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Appends one counter.
fn counter(out: &mut String, name: &str, help: &str, value: &AtomicU64) {
    family(out, name, "counter", help);
    let _ = writeln!(out, "{name} {}", value.load(Relaxed));
}

/// Appends a counter with one series per decision kind ([`DECISIONS`]).
fn by_decision(out: &mut String, name: &str, help: &str, values: &[AtomicU64; DECISIONS.len()]) {
    family(out, name, "counter", help);
    for (d, value) in DECISIONS.iter().zip(values) {
        let _ = writeln!(out, "{name}{{decision=\"{d}\"}} {}", value.load(Relaxed));
    }
}

/// Appends one gauge.
fn gauge(out: &mut String, name: &str, help: &str, value: f64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
    );
}

/// `GET /metrics`: the service's series, then the store's gauges.
pub(super) async fn metrics_text(State(app): State<App>) -> Result<Response, ApiError> {
    let stats = read(&app, Cost::Long, |d| d.stats()).await?;
    let mut out = String::with_capacity(8192);
    app.metrics.render(&mut out);
    let gauges = [
        (
            "neardup_store_records",
            "Records stored.",
            stats.records as f64,
        ),
        (
            "neardup_store_clusters",
            "Clusters (survivors) stored.",
            stats.clusters as f64,
        ),
        (
            "neardup_store_bytes",
            "Size of the store's files (database and write-ahead log).",
            store_bytes(&app.store_path) as f64,
        ),
        (
            "neardup_largest_group_size",
            "Records in the largest cluster: thousands usually mean an empty identity field or an extraction failure.",
            stats.largest_cluster as f64,
        ),
        (
            "neardup_index_fingerprints",
            "Fingerprints in the Hamming index (within the window, if any).",
            stats.index.len as f64,
        ),
        (
            "neardup_index_largest_bucket",
            "The longest bucket of the Hamming index: it bounds the cost of an unlucky probe.",
            stats.index.largest_bucket as f64,
        ),
        (
            "neardup_index_memory_bytes",
            "Approximate heap bytes of the Hamming index.",
            stats.index.memory_bytes as f64,
        ),
        (
            "neardup_write_failed",
            "1 after a failed commit (writes refused until a restart).",
            f64::from(u8::from(app.writer.failed.load(Ordering::SeqCst))),
        ),
    ];
    for (name, help, value) in gauges {
        gauge(&mut out, name, help, value);
    }
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        out,
    )
        .into_response())
}

/// The bytes of the SQLite store at `path`: the database and its write-ahead log.
fn store_bytes(path: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            std::fs::metadata(PathBuf::from(p)).ok()
        })
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::default();
        m.request("query", 200, Duration::from_micros(300));
        m.request("query", 200, Duration::from_millis(3));
        m.inserted("near_duplicate", false);
        let mut out = String::new();
        m.render(&mut out);
        assert!(out
            .contains("neardup_request_duration_seconds_bucket{route=\"query\",le=\"0.0005\"} 1"));
        assert!(
            out.contains("neardup_request_duration_seconds_bucket{route=\"query\",le=\"+Inf\"} 2")
        );
        assert!(out.contains("neardup_decisions_total{decision=\"near_duplicate\"} 1"));
        assert!(out.contains("neardup_http_responses_total{route=\"query\",status=\"200\"} 2"));
    }
}
