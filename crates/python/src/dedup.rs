//! `Deduper`: `neardup dedup`'s decisions on records from Python, against the same stores.
//!
//! Records go through the library's [`Runner`], as the CLI's do: parsed and analysed in
//! parallel, decided in input order, each batch committed while the next is decided.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use neardup::pipeline::{BoilerplatePass, Linkage, Runner};
use neardup::store::{SqliteStore, WriterLock};
use neardup::text::TokenRule;
use neardup::{Record, Rule, Store};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::IntoPy;
use crate::options::{self, ProfileOptions};
use crate::records::{chunked, read_records, Item, Items, Names};
use crate::rows::Rows;
use crate::texts::not_a_text;

/// The store meta key and value `neardup dedup` records its defaults' release under (see the
/// CLI's `cmd/dedup`): the decisions made here are made under the same defaults.
const DEFAULTS_KEY: &str = "cli.defaults";
const DEFAULTS_VERSION: &str = "2";

/// A deduplicator over a store, with `neardup dedup`'s rule and profile options.
///
/// Deduper(store=None, *, max_distance=16, min_jaccard=None, min_words=1, linkage="single",
///         chain_floor=0.5, min_cluster_jaccard=0.74, cluster_quorum=0.75, short_text="chars",
///         boilerplate=False, boilerplate_share=0.05, boilerplate_min_pages=20,
///         boilerplate_min_count=10, profile="xxh3", shingle=4, bits=64, weighting="tf",
///         tokens="words", stopwords=False, idf=None, detect_language=True, threads=None)
///
/// The options are `neardup dedup`'s, with its defaults (`min_jaccard`: 0.8, or 0.7 with
/// `tokens="code-LANG"`, as `dedup --features code`). `store` is an SQLite file (created
/// if missing; one that `neardup dedup` made opens here and the other way round) or None for
/// memory. While the Deduper is open it holds the store's writer lock, as the CLI's writers
/// do; `close()` (or leaving a `with` block) releases it. With `boilerplate=True` each
/// `process` call first learns its records' hosts' boilerplate, as `dedup --boilerplate`
/// learns from its input. Safe to share between Python threads: calls take turns.
#[pyclass(frozen, module = "neardup")]
pub struct Deduper {
    inner: Mutex<Option<Open>>,
    pool: Arc<rayon::ThreadPool>,
    store: Option<PathBuf>,
    config: Config,
}

struct Open {
    deduper: neardup::Deduper<Box<dyn Store>>,
    _lock: Option<WriterLock>,
}

/// The options a store is opened with, kept for reopening it after a conflict.
#[derive(Clone)]
struct Config {
    profile: ProfileOptions,
    rule: Rule,
    detect_language: bool,
    /// Learn each host's boilerplate from the records of a `process` call first, as
    /// `neardup dedup --boilerplate` does from its input.
    boilerplate: Option<BoilerplatePass>,
}

fn open_store(
    path: &Option<PathBuf>,
    config: &Config,
) -> neardup::Result<neardup::Deduper<Box<dyn Store>>> {
    let store: Box<dyn Store> = match path {
        Some(p) => Box::new(SqliteStore::open_bulk(p)?),
        None => Box::new(neardup::MemoryStore::new()),
    };
    let hasher = config
        .profile
        .builder()
        .map_err(|e| neardup::Error::InvalidInput {
            field: "profile",
            value: String::new(),
            reason: e.to_string(),
        })?
        .detect_language(config.detect_language)
        .build()?;
    neardup::Deduper::builder()
        .hasher(hasher)
        .rule(config.rule)
        .open(store)
}

/// default_min_jaccard(tokens="words") -> float
///
/// The default Jaccard threshold for records read with `tokens` (as `Deduper` and the
/// Spark job take it): 0.8, or 0.7 for source code (`"code-LANG"`, `"code-auto"`).
#[pyfunction]
#[pyo3(signature = (tokens="words"))]
pub fn default_min_jaccard(tokens: &str) -> f64 {
    neardup::pipeline::default_min_jaccard(token_rule(tokens))
}

/// The token rule `tokens` names; anything else reads as words (`ProfileOptions` checks
/// the name where it is used).
fn token_rule(tokens: &str) -> TokenRule {
    TokenRule::parse(tokens).unwrap_or(TokenRule::Unicode)
}

#[pymethods]
impl Deduper {
    #[new]
    #[pyo3(signature = (store=None, *, max_distance=16, min_jaccard=None, min_words=1, linkage="single", chain_floor=0.5, min_cluster_jaccard=0.74, cluster_quorum=0.75, short_text="chars", boilerplate=false, boilerplate_share=0.05, boilerplate_min_pages=20, boilerplate_min_count=neardup::text::DEFAULT_MIN_COUNT, detect_language=true, threads=None, **profile))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        store: Option<PathBuf>,
        max_distance: u32,
        min_jaccard: Option<f64>,
        min_words: usize,
        linkage: &str,
        chain_floor: f64,
        min_cluster_jaccard: f64,
        cluster_quorum: f64,
        short_text: &str,
        boilerplate: bool,
        boilerplate_share: f64,
        boilerplate_min_pages: u64,
        boilerplate_min_count: u64,
        detect_language: bool,
        threads: Option<usize>,
        profile: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let linkage = match linkage {
            "single" => Linkage::Single,
            "guarded" => Linkage::Guarded,
            other => {
                return Err(PyValueError::new_err(format!(
                    "linkage {other:?}: expected \"single\" or \"guarded\""
                )))
            }
        };
        let short_text = match short_text {
            "chars" => neardup::pipeline::DEFAULT_SHORT_TEXT,
            "exact" => neardup::pipeline::ShortText::ExactOnly,
            other => {
                return Err(PyValueError::new_err(format!(
                    "short_text {other:?}: expected \"chars\" or \"exact\""
                )))
            }
        };
        let profile = ProfileOptions::from_kwargs(profile)?;
        let rule = Rule {
            max_distance,
            min_jaccard: min_jaccard.unwrap_or_else(|| default_min_jaccard(&profile.tokens)),
            min_words,
            linkage,
            chain_floor,
            min_cluster_jaccard,
            cluster_quorum,
            short_text,
            ..Rule::default()
        };
        rule.validate().py_err()?;
        profile.builder()?;
        let config = Config {
            profile,
            rule,
            detect_language,
            boilerplate: boilerplate.then_some(BoilerplatePass {
                max_share: boilerplate_share,
                min_pages: boilerplate_min_pages,
                min_count: boilerplate_min_count,
                ..BoilerplatePass::default()
            }),
        };
        let pool = match options::pool(threads)? {
            Some(p) => p,
            None => Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .thread_name(|i| format!("neardup-analysis-{i}"))
                    .build()
                    .map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
            ),
        };
        let open = py.detach(|| -> neardup::Result<Open> {
            let lock = match &store {
                Some(p) => Some(WriterLock::acquire(p, "python neardup.Deduper", |_| {})?),
                None => None,
            };
            Ok(Open {
                deduper: open_store(&store, &config)?,
                _lock: lock,
            })
        });
        let open = open.py_err()?;
        Ok(Deduper {
            inner: Mutex::new(Some(open)),
            pool,
            store,
            config,
        })
    }

    /// process(records, *, id="id", text=None, url="url", first_seen="first_seen",
    ///         strict=False) -> pyarrow.Table
    ///
    /// Decides `records` (an iterable of dicts, a pyarrow Table or RecordBatch, or a pandas
    /// DataFrame) against the store and stores them. `text` names the text field or fields
    /// (default: `title`, `description`, `body_text` and `text`, whichever a record has, as
    /// the CLI reads them); a record without an id is named by its position from 1, as the
    /// CLI names a line by its number; `url` and `first_seen` (RFC 3339) are optional.
    ///
    /// Returns one row per record, in input order: `position`, `id`, `decision` (`kept`,
    /// `merged`, `already_stored` or `rejected`), `survivor` (its cluster's survivor when it
    /// was decided), `matched`, `rule` (`exact` or `simhash+jaccard` for a merge),
    /// `displaced` (the survivor a kept record took the place of: the earlier first-seen
    /// time survives), `distance`, `jaccard` and `reason` (why a record was rejected). Each
    /// row is the decision when the record arrived: a later record may displace a kept one or
    /// fuse its cluster with another; `clusters()` and `merges()` give the store's state.
    ///
    /// With `strict=True` an unusable record raises `ValueError` naming it before anything
    /// is stored; a record the deduper refuses (an id already used with other text) raises
    /// when it is reached, the batches before it stored.
    #[pyo3(signature = (records, *, id="id", text=None, url="url", first_seen="first_seen", strict=false))]
    #[allow(clippy::too_many_arguments)]
    fn process<'py>(
        &self,
        py: Python<'py>,
        records: &Bound<'py, PyAny>,
        id: &str,
        text: Option<&Bound<'py, PyAny>>,
        url: &str,
        first_seen: &str,
        strict: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let names = Names::new(id, text, url, first_seen)?;
        let items = read_records(py, records, &names)?;
        let (config, store, pool) = (&self.config, &self.store, self.pool.clone());
        let rows = py.detach(|| -> PyResult<Rows> {
            let mut guard = self.inner.lock().expect("not poisoned");
            let open = guard
                .as_mut()
                .ok_or_else(|| PyRuntimeError::new_err("the Deduper is closed"))?;
            let mut rows = Rows {
                strict,
                ..Rows::default()
            };
            let chunks: Vec<Vec<Item>> = chunked(items);
            let expected = chunks.iter().map(|c| c.len() as u64).sum();
            let mut runner = Runner::new(&mut open.deduper)
                .analysis_pool(pool)
                .expected_records(expected);
            if let Some(pass) = &config.boilerplate {
                runner
                    .learn_boilerplate(&Items, chunks.clone(), pass, |_| {})
                    .py_err()?;
            }
            runner.run(&Items, chunks, &mut rows, |_| {
                Ok(open_store(store, config)?)
            })?;
            open.deduper
                .set_store_meta(DEFAULTS_KEY, DEFAULTS_VERSION)
                .py_err()?;
            Ok(rows)
        })?;
        rows.into_table(py)
    }

    /// query(text, k=None) -> list[tuple[str, int, float]]
    ///
    /// The stored near-duplicates of `text` that pass verification: (id, distance, Jaccard),
    /// nearest first; `k` caps the distance (the rule's max_distance by default).
    #[pyo3(signature = (text, k=None))]
    fn query(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        k: Option<u32>,
    ) -> PyResult<Vec<(String, u32, f64)>> {
        let text = match text.cast::<PyString>() {
            Ok(s) => s.to_cow()?.into_owned(),
            Err(_) => return Err(not_a_text(text, "text")),
        };
        py.detach(|| {
            let guard = self.inner.lock().expect("not poisoned");
            let open = guard
                .as_ref()
                .ok_or_else(|| PyRuntimeError::new_err("the Deduper is closed"))?;
            let found = open.deduper.query(&Record::new("query", text)).py_err()?;
            Ok(found
                .into_iter()
                .filter(|(_, s)| k.is_none_or(|k| s.distance <= k))
                .map(|(id, s)| (id, s.distance, s.jaccard))
                .collect())
        })
    }

    /// erase(ids) -> list[str]: erases records (record, fingerprint, index entries and
    /// shingles; the merge log keeps nothing of them) and returns the ids that were stored.
    fn erase(&self, py: Python<'_>, ids: Vec<String>) -> PyResult<Vec<String>> {
        py.detach(|| {
            let mut guard = self.inner.lock().expect("not poisoned");
            let open = guard
                .as_mut()
                .ok_or_else(|| PyRuntimeError::new_err("the Deduper is closed"))?;
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            open.deduper.erase(&refs).py_err()
        })
    }

    /// clusters() -> list[dict]: every cluster of two or more records: `survivor`,
    /// `members` (survivor first), `source_urls`, `first_seen`.
    fn clusters<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let clusters = {
            let guard = self.inner.lock().expect("not poisoned");
            let open = guard
                .as_ref()
                .ok_or_else(|| PyRuntimeError::new_err("the Deduper is closed"))?;
            open.deduper.clusters()
        };
        clusters
            .into_iter()
            .filter(|c| c.members.len() > 1)
            .map(|c| {
                let d = PyDict::new(py);
                d.set_item("survivor", c.survivor)?;
                d.set_item("members", c.members)?;
                d.set_item("source_urls", c.source_urls)?;
                d.set_item("first_seen", c.first_seen.to_rfc3339())?;
                Ok(d)
            })
            .collect()
    }

    /// merges() -> list[dict]: the merge log, oldest first: `kept`, `merged`, `rule`,
    /// `distance`, `jaccard`, `matched`, `source_urls`, `at`.
    fn merges<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut entries = Vec::new();
        {
            let guard = self.inner.lock().expect("not poisoned");
            let open = guard
                .as_ref()
                .ok_or_else(|| PyRuntimeError::new_err("the Deduper is closed"))?;
            open.deduper
                .store()
                .merges(&mut |m| entries.push(m))
                .py_err()?;
        }
        entries
            .into_iter()
            .map(|m| {
                let d = PyDict::new(py);
                d.set_item("kept", m.kept)?;
                d.set_item("merged", m.merged)?;
                d.set_item("rule", m.rule)?;
                d.set_item("distance", m.distance)?;
                d.set_item("jaccard", m.jaccard)?;
                d.set_item("matched", m.matched)?;
                d.set_item("source_urls", m.source_urls)?;
                d.set_item("at", m.at)?;
                Ok(d)
            })
            .collect()
    }

    /// The Jaccard threshold in use: `min_jaccard`, or the default for the tokens.
    #[getter]
    fn min_jaccard(&self) -> f64 {
        self.config.rule.min_jaccard
    }

    /// The profile as the CLI prints it, e.g. `neardup/4/xxh3/w4/b64/tf`.
    #[getter]
    fn profile(&self) -> PyResult<String> {
        let guard = self.inner.lock().expect("not poisoned");
        let open = guard
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the Deduper is closed"))?;
        Ok(open.deduper.hasher().profile().to_string())
    }

    fn __len__(&self) -> PyResult<usize> {
        let guard = self.inner.lock().expect("not poisoned");
        let open = guard
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the Deduper is closed"))?;
        Ok(open.deduper.len())
    }

    /// Closes the store and releases its writer lock; the Deduper refuses calls after.
    fn close(&self, py: Python<'_>) {
        py.detach(|| drop(self.inner.lock().expect("not poisoned").take()));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> bool {
        self.close(py);
        false
    }
}
