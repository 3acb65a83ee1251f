//! `Deduper`: `neardup dedup`'s decisions on records from Python, against the same stores.
//!
//! Records go through the library's [`Runner`], as the CLI's do: parsed and analysed in
//! parallel, decided in input order, each batch committed while the next is decided.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::builder::{Float64Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow, Table};
use arrow_schema::{DataType, Field, Schema};
use neardup::pipeline::{BoilerplatePass, Linkage, Runner, Sink, Source};
use neardup::store::{SqliteStore, WriterLock};
use neardup::{Decision, Outcome, Record, Rule, Store, TextField, Timestamp};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::IntoPy;
use crate::options::{self, ProfileOptions};
use crate::texts::{is_arrow, not_a_text, string_at};

/// The store meta key and value `neardup dedup` records its defaults' release under (see the
/// CLI's `cmd/dedup`): the decisions made here are made under the same defaults.
const DEFAULTS_KEY: &str = "cli.defaults";
const DEFAULTS_VERSION: &str = "2";

/// Records per committed batch, as `neardup dedup --batch-size`.
const BATCH: usize = 4096;

/// A deduplicator over a store, with `neardup dedup`'s rule and profile options.
///
/// Deduper(store=None, *, max_distance=16, min_jaccard=0.8, min_words=1, linkage="single",
///         chain_floor=0.5, min_cluster_jaccard=0.74, cluster_quorum=0.75, short_text="chars",
///         boilerplate=False, boilerplate_share=0.05, boilerplate_min_pages=20,
///         boilerplate_min_count=10, profile="xxh3", shingle=4, bits=64, weighting="tf",
///         tokens="words", stopwords=False, idf=None, detect_language=True, threads=None)
///
/// The options are `neardup dedup`'s, with its defaults. `store` is an SQLite file (created
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

#[pymethods]
impl Deduper {
    #[new]
    #[pyo3(signature = (store=None, *, max_distance=16, min_jaccard=0.8, min_words=1, linkage="single", chain_floor=0.5, min_cluster_jaccard=0.74, cluster_quorum=0.75, short_text="chars", boilerplate=false, boilerplate_share=0.05, boilerplate_min_pages=20, boilerplate_min_count=neardup::text::DEFAULT_MIN_COUNT, profile="xxh3", shingle=4, bits=64, weighting="tf", tokens="words", stopwords=false, idf=None, detect_language=true, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        store: Option<PathBuf>,
        max_distance: u32,
        min_jaccard: f64,
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
        profile: &str,
        shingle: usize,
        bits: u32,
        weighting: &str,
        tokens: &str,
        stopwords: bool,
        idf: Option<PathBuf>,
        detect_language: bool,
        threads: Option<usize>,
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
        let rule = Rule {
            max_distance,
            min_jaccard,
            min_words,
            linkage,
            chain_floor,
            min_cluster_jaccard,
            cluster_quorum,
            short_text,
            ..Rule::default()
        };
        rule.validate().py_err()?;
        let profile = ProfileOptions {
            profile: profile.into(),
            shingle,
            bits,
            weighting: weighting.into(),
            idf,
            tokens: tokens.into(),
            stopwords,
        };
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
        let fields = text_fields(text)?;
        let names = Names {
            id,
            text: &fields,
            url,
            first_seen,
        };
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
                .py_err()?
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

/// The field names `process` reads.
struct Names<'a> {
    id: &'a str,
    text: &'a [String],
    url: &'a str,
    first_seen: &'a str,
}

/// The text fields read when `text=` is not given, whichever a record has, as the CLI's
/// `--text-field` default.
const DEFAULT_TEXT_FIELDS: [&str; 4] = ["title", "description", "body_text", "text"];

/// `text=`: one field name or a list of them (default [`DEFAULT_TEXT_FIELDS`]).
fn text_fields(text: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(text) = text else {
        return Ok(DEFAULT_TEXT_FIELDS.iter().map(|&s| s.to_owned()).collect());
    };
    if let Ok(s) = text.cast::<PyString>() {
        return Ok(vec![s.to_cow()?.into_owned()]);
    }
    let names: Vec<String> = text
        .extract()
        .map_err(|_| PyTypeError::new_err("text: a field name or a list of field names"))?;
    if names.is_empty() {
        return Err(PyValueError::new_err("text: at least one field name"));
    }
    Ok(names)
}

/// One input record: the record, or why it is rejected; with its position.
type Item = (usize, Result<Record, Rejected>);

/// An unusable record: its id where it has one, and why.
#[derive(Clone)]
struct Rejected {
    id: Option<String>,
    reason: String,
}

/// The records are read (and checked) while the GIL is held; the runner takes them as
/// they are.
struct Items;

impl Source for Items {
    type Item = Item;
    type Extra = usize;
    type Reject = (usize, Rejected);

    fn parse(&self, (pos, item): Item) -> Result<(Record, usize), (usize, Rejected)> {
        item.map(|r| (r, pos)).map_err(|e| (pos, e))
    }

    fn host(&self, (_, item): &Item) -> Option<String> {
        item.as_ref().ok().and_then(|r| r.effective_host())
    }

    fn size(&self, (_, item): &Item) -> usize {
        item.as_ref()
            .map_or(0, |r| r.fields.iter().map(|f| f.text.len()).sum())
    }
}

fn chunked(items: Vec<Item>) -> Vec<Vec<Item>> {
    let mut chunks = Vec::with_capacity(items.len() / BATCH + 1);
    let mut it = items.into_iter().peekable();
    while it.peek().is_some() {
        chunks.push(it.by_ref().take(BATCH).collect());
    }
    chunks
}

/// Reads `records` into items: dicts one by one, Arrow columns (a pandas DataFrame through
/// pyarrow) by name.
fn read_records(
    py: Python<'_>,
    records: &Bound<'_, PyAny>,
    names: &Names<'_>,
) -> PyResult<Vec<Item>> {
    if records.hasattr("to_dict")? && records.hasattr("columns")? && !is_arrow(records)? {
        // A pandas DataFrame: through pyarrow, as its columns are.
        let table = py
            .import("pyarrow")?
            .getattr("Table")?
            .call_method1("from_pandas", (records,))?;
        return read_records(py, &table, names);
    }
    if records.hasattr("__arrow_c_stream__")? || records.hasattr("__arrow_c_array__")? {
        let batches = if records.hasattr("num_columns")? && records.hasattr("to_batches")? {
            Table::from_pyarrow_bound(records)?.into_inner().0
        } else if records.hasattr("__arrow_c_array__")? {
            vec![RecordBatch::from_pyarrow_bound(records)?]
        } else {
            Table::from_pyarrow_bound(records)?.into_inner().0
        };
        let mut items = Vec::new();
        for batch in &batches {
            read_batch(batch, names, &mut items)?;
        }
        return Ok(items);
    }
    let mut items = Vec::new();
    for (pos, obj) in records.try_iter()?.enumerate() {
        let obj = obj?;
        let dict =
            obj.cast::<PyDict>().map_err(|_| {
                PyTypeError::new_err(format!(
                "records[{pos}] is {}, not a dict (or pass a pyarrow Table or a pandas DataFrame)",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
            })?;
        items.push((pos, record_of_dict(dict, pos, names)?));
    }
    Ok(items)
}

/// A record from a dict, or why it is rejected.
fn record_of_dict(
    dict: &Bound<'_, PyDict>,
    pos: usize,
    names: &Names<'_>,
) -> PyResult<Result<Record, Rejected>> {
    let id = match dict.get_item(names.id)? {
        // Named by its place, as the CLI names a line without an id by its number.
        None => (pos + 1).to_string(),
        Some(v) if v.is_none() => (pos + 1).to_string(),
        Some(v) => match v.cast::<PyString>() {
            Ok(s) => s.to_cow()?.into_owned(),
            Err(_) => match v.extract::<i64>() {
                Ok(n) => n.to_string(),
                Err(_) => {
                    let why = format!(
                        "field {:?} must be a non-empty string or a number",
                        names.id
                    );
                    return Ok(Err(reject(None, pos, why)));
                }
            },
        },
    };
    if id.trim().is_empty() {
        let why = format!(
            "field {:?} must be a non-empty string or a number",
            names.id
        );
        return Ok(Err(reject(None, pos, why)));
    }
    let mut fields = Vec::with_capacity(names.text.len());
    for name in names.text {
        let text = match dict.get_item(name.as_str())? {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => match v.cast::<PyString>() {
                Ok(s) => Some(s.to_cow()?.into_owned()),
                Err(_) => {
                    let why = not_a_text(&v, &format!("field {name:?}")).to_string();
                    return Ok(Err(reject(Some(id), pos, why)));
                }
            },
        };
        if let Some(text) = text {
            fields.push(TextField {
                name: name.clone(),
                text,
                weight: 1,
            });
        }
    }
    fields.retain(|f| !f.text.trim().is_empty());
    if fields.is_empty() {
        let why = format!("no text: {} missing or empty", quoted(names.text));
        return Ok(Err(reject(Some(id), pos, why)));
    }
    let url = optional_str(dict, names.url)?;
    let first_seen = match optional_str(dict, names.first_seen)? {
        None => None,
        Some(t) => match Timestamp::parse_rfc3339(&t) {
            Ok(t) => Some(t),
            Err(e) => {
                let why = format!("field {:?}: {e}", names.first_seen);
                return Ok(Err(reject(Some(id), pos, why)));
            }
        },
    };
    Ok(Ok(Record {
        id,
        url,
        host: None,
        first_seen,
        retention_class: None,
        fields,
    }))
}

fn optional_str(dict: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<String>> {
    match dict.get_item(name)? {
        Some(v) if !v.is_none() => match v.cast::<PyString>() {
            Ok(s) => Ok(Some(s.to_cow()?.into_owned())),
            Err(_) => Ok(Some(v.str()?.to_cow()?.into_owned())),
        },
        _ => Ok(None),
    }
}

/// Field names for a message: `"a", "b"`.
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn reject(id: Option<String>, pos: usize, reason: String) -> Rejected {
    Rejected {
        id,
        reason: format!("records[{pos}]: {reason}"),
    }
}

/// The items of one Arrow record batch, positions continuing from `items`.
fn read_batch(batch: &RecordBatch, names: &Names<'_>, items: &mut Vec<Item>) -> PyResult<()> {
    let column = |name: &str| -> Option<ArrayRef> { batch.column_by_name(name).cloned() };
    let ids = column(names.id);
    // The text columns the batch has (each named one must exist unless they are the
    // defaults, of which at least one must).
    let defaults = names.text.len() == DEFAULT_TEXT_FIELDS.len()
        && names
            .text
            .iter()
            .zip(DEFAULT_TEXT_FIELDS)
            .all(|(a, b)| a == b);
    let mut text_names = Vec::new();
    let mut texts = Vec::new();
    for n in names.text {
        match column(n) {
            Some(c) => {
                check_strings(&c, n)?;
                text_names.push(n.clone());
                texts.push(c);
            }
            None if defaults => {}
            None => {
                return Err(PyValueError::new_err(format!(
                    "no column {n:?} (a text field); pass text=NAME"
                )))
            }
        }
    }
    if texts.is_empty() {
        return Err(PyValueError::new_err(format!(
            "no text column: none of {} (pass text=NAME)",
            quoted(names.text)
        )));
    }
    let urls = column(names.url);
    let times = column(names.first_seen);
    for c in [&urls, &times].into_iter().flatten() {
        check_strings(c, "url/first_seen")?;
    }
    let id_of = |i: usize| -> Option<String> {
        let ids = ids.as_ref()?;
        if ids.is_null(i) {
            return None;
        }
        Some(match ids.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                string_at(ids.as_ref(), i).to_owned()
            }
            _ => arrow_cast_display(ids, i),
        })
    };
    let base = items.len();
    for i in 0..batch.num_rows() {
        let pos = base + i;
        let Some(id) = id_of(i).filter(|s| !s.is_empty()) else {
            items.push((
                pos,
                Err(reject(
                    None,
                    pos,
                    format!("column {:?} is null or empty", names.id),
                )),
            ));
            continue;
        };
        let fields: Vec<TextField> = names
            .text
            .iter()
            .zip(&texts)
            .filter(|(_, c)| !c.is_null(i))
            .map(|(n, c)| TextField {
                name: n.clone(),
                text: string_at(c.as_ref(), i).to_owned(),
                weight: 1,
            })
            .collect();
        if fields.iter().all(|f| f.text.is_empty()) {
            let why = format!(
                "no text: column {:?} is null or empty",
                names.text.join("\", \"")
            );
            items.push((pos, Err(reject(Some(id), pos, why))));
            continue;
        }
        let text_of = |c: &Option<ArrayRef>| {
            c.as_ref()
                .filter(|c| !c.is_null(i))
                .map(|c| string_at(c.as_ref(), i).to_owned())
        };
        let first_seen = match text_of(&times) {
            None => None,
            Some(t) => match Timestamp::parse_rfc3339(&t) {
                Ok(t) => Some(t),
                Err(e) => {
                    let why = format!("column {:?}: {e}", names.first_seen);
                    items.push((pos, Err(reject(Some(id), pos, why))));
                    continue;
                }
            },
        };
        items.push((
            pos,
            Ok(Record {
                id,
                url: text_of(&urls),
                host: None,
                first_seen,
                retention_class: None,
                fields,
            }),
        ));
    }
    Ok(())
}

/// An integer id column's value as text.
fn arrow_cast_display(array: &ArrayRef, i: usize) -> String {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
    match array.data_type() {
        DataType::Int64 => array.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(i).to_string(),
        _ => String::new(),
    }
}

fn check_strings(c: &ArrayRef, name: &str) -> PyResult<()> {
    match c.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(()),
        other => Err(PyTypeError::new_err(format!(
            "column {name:?} is {other}, not strings"
        ))),
    }
}

/// The outcomes as rows, in input order once sorted by position.
#[derive(Default)]
struct Rows {
    strict: bool,
    rows: Vec<Row>,
}

struct Row {
    pos: usize,
    id: Option<String>,
    decision: &'static str,
    survivor: Option<String>,
    matched: Option<String>,
    rule: Option<&'static str>,
    displaced: Option<String>,
    distance: Option<u32>,
    jaccard: Option<f64>,
    reason: Option<String>,
}

/// A Python exception, or a library error to become one (the runner's errors are both).
struct Fail(PyErr);

impl From<neardup::Error> for Fail {
    fn from(e: neardup::Error) -> Self {
        Fail(crate::errors::to_py(e))
    }
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> Self {
        f.0
    }
}

impl Sink<Items> for Rows {
    type Error = Fail;

    fn rejected(&mut self, (pos, r): (usize, Rejected)) -> Result<(), Fail> {
        self.rows.push(Row {
            pos,
            id: r.id,
            decision: "rejected",
            survivor: None,
            matched: None,
            rule: None,
            displaced: None,
            distance: None,
            jaccard: None,
            reason: Some(r.reason),
        });
        Ok(())
    }

    fn decided(&mut self, record: &Record, pos: usize, outcome: Outcome) -> Result<(), Fail> {
        let mut row = Row {
            pos,
            id: Some(record.id.clone()),
            decision: "kept",
            survivor: None,
            matched: None,
            rule: None,
            displaced: None,
            distance: None,
            jaccard: None,
            reason: None,
        };
        match outcome.decision {
            Decision::Kept { displaced, .. } => {
                row.survivor = Some(record.id.clone());
                row.displaced = displaced;
            }
            Decision::Merged {
                survivor,
                matched,
                rule,
                scores,
            } => {
                row.decision = "merged";
                row.survivor = Some(survivor);
                row.matched = Some(matched);
                row.rule = Some(rule.as_str());
                row.distance = Some(scores.distance);
                row.jaccard = Some(scores.jaccard);
            }
            Decision::AlreadyStored { survivor } => {
                row.decision = "already_stored";
                row.survivor = Some(survivor);
            }
            Decision::Rejected { reason } => {
                if self.strict {
                    return Err(Fail(PyValueError::new_err(format!(
                        "records[{pos}] ({:?}): {reason}",
                        record.id
                    ))));
                }
                row.decision = "rejected";
                row.reason = Some(format!("records[{pos}]: {reason}"));
            }
        }
        self.rows.push(row);
        Ok(())
    }

    fn stops_at(&mut self, (_, r): &(usize, Rejected)) -> Option<Fail> {
        self.strict
            .then(|| Fail(PyValueError::new_err(r.reason.clone())))
    }
}

impl Rows {
    fn into_table(mut self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        self.rows.sort_unstable_by_key(|r| r.pos);
        let n = self.rows.len();
        let mut pos = UInt64Builder::with_capacity(n);
        let mut id = StringBuilder::new();
        let mut decision = StringBuilder::new();
        let mut survivor = StringBuilder::new();
        let mut matched = StringBuilder::new();
        let mut rule = StringBuilder::new();
        let mut displaced = StringBuilder::new();
        let mut distance = UInt32Builder::with_capacity(n);
        let mut jaccard = Float64Builder::with_capacity(n);
        let mut reason = StringBuilder::new();
        for r in self.rows {
            pos.append_value(r.pos as u64);
            id.append_option(r.id);
            decision.append_value(r.decision);
            survivor.append_option(r.survivor);
            matched.append_option(r.matched);
            rule.append_option(r.rule);
            displaced.append_option(r.displaced);
            distance.append_option(r.distance);
            jaccard.append_option(r.jaccard);
            reason.append_option(r.reason);
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("position", DataType::UInt64, false),
            Field::new("id", DataType::Utf8, true),
            Field::new("decision", DataType::Utf8, false),
            Field::new("survivor", DataType::Utf8, true),
            Field::new("matched", DataType::Utf8, true),
            Field::new("rule", DataType::Utf8, true),
            Field::new("displaced", DataType::Utf8, true),
            Field::new("distance", DataType::UInt32, true),
            Field::new("jaccard", DataType::Float64, true),
            Field::new("reason", DataType::Utf8, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(pos.finish()),
            Arc::new(id.finish()),
            Arc::new(decision.finish()),
            Arc::new(survivor.finish()),
            Arc::new(matched.finish()),
            Arc::new(rule.finish()),
            Arc::new(displaced.finish()),
            Arc::new(distance.finish()),
            Arc::new(jaccard.finish()),
            Arc::new(reason.finish()),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Table::try_new(vec![batch], schema)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?
            .into_pyarrow(py)
    }
}
