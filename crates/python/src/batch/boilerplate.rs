//! Boilerplate learning for scale-out: each record's host, and a learner that counts the
//! pages of the hosts a partition holds, as `neardup dedup --boilerplate` counts them.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow};
use neardup::text::BoilerplateLearner;
use neardup::{Record, Scratch, SimHasher};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use crate::options::{install, pool, ProfileOptions};
use crate::records::{check_strings, read_batch, Names};
use crate::texts::string_at;

use super::analyze::{doc_id, record_of_json};
use super::arrow_err;

/// The columns [`with_hosts`] adds.
const HOST: &str = "_nd_host";
const DOC: &str = "_nd_doc";

/// with_hosts(batch, *, json=None, id="id", url="url") -> pyarrow.RecordBatch
///
/// `batch` with two columns added: `_nd_host`, each record's host as the CLI reads it (its
/// URL's host, lower case, without `www.`; null where the record has no URL with a host),
/// and `_nd_doc`, its stable document id (null where it has no id). With `json=COLUMN`
/// both come from that column's JSON Lines (null for a line that is not a JSON object).
/// The boilerplate pass partitions records by host and orders them by document id.
#[pyfunction]
#[pyo3(signature = (batch, *, json=None, id="id", url="url"))]
pub fn with_hosts(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    json: Option<&str>,
    id: &str,
    url: &str,
) -> PyResult<Py<PyAny>> {
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let n = batch.num_rows();
    let keys: Vec<(Option<String>, Option<i64>)> = match json {
        Some(column) => {
            let lines = column_named(&batch, column)?;
            check_strings(&lines, column)?;
            py.detach(|| {
                (0..n)
                    .into_par_iter()
                    .map(|i| {
                        if lines.is_null(i) {
                            return (None, None);
                        }
                        json_keys(string_at(lines.as_ref(), i), id, url)
                    })
                    .collect()
            })
        }
        None => {
            let urls = batch.column_by_name(url).cloned();
            if let Some(c) = &urls {
                check_strings(c, url)?;
            }
            let ids = batch.column_by_name(id).cloned();
            (0..n)
                .map(|i| {
                    let host = urls
                        .as_ref()
                        .filter(|c| !c.is_null(i))
                        .and_then(|c| neardup::record::host_of(string_at(c.as_ref(), i)));
                    let doc = ids.as_ref().filter(|c| !c.is_null(i)).and_then(|c| {
                        let id = match c.data_type() {
                            arrow_schema::DataType::Utf8
                            | arrow_schema::DataType::LargeUtf8
                            | arrow_schema::DataType::Utf8View => {
                                string_at(c.as_ref(), i).to_owned()
                            }
                            _ => crate::records::arrow_cast_display(c, i),
                        };
                        (!id.is_empty()).then(|| doc_id(&id))
                    });
                    (host, doc)
                })
                .collect()
        }
    };
    let mut hosts = StringBuilder::new();
    let mut docs = Int64Builder::with_capacity(n);
    for (host, doc) in keys {
        hosts.append_option(host);
        docs.append_option(doc);
    }
    let mut fields: Vec<arrow_schema::FieldRef> = batch.schema().fields().iter().cloned().collect();
    fields.push(Arc::new(arrow_schema::Field::new(
        HOST,
        arrow_schema::DataType::Utf8,
        true,
    )));
    fields.push(Arc::new(arrow_schema::Field::new(
        DOC,
        arrow_schema::DataType::Int64,
        true,
    )));
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    columns.push(Arc::new(hosts.finish()));
    columns.push(Arc::new(docs.finish()));
    let out = RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), columns)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(out.into_pyarrow(py)?.unbind())
}

/// The host of a JSON line's URL and the document id of its id, as [`record_of_json`]
/// reads them (an id is a non-empty string or an integer).
fn json_keys(line: &str, id: &str, url: &str) -> (Option<String>, Option<i64>) {
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str(line) else {
        return (None, None);
    };
    let host = match object.get(url) {
        Some(serde_json::Value::String(u)) => neardup::record::host_of(u),
        _ => None,
    };
    let doc = match object.get(id) {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Some(doc_id(s)),
        Some(serde_json::Value::Number(n)) if n.is_i64() || n.is_u64() => {
            Some(doc_id(&n.to_string()))
        }
        _ => None,
    };
    (host, doc)
}

fn column_named(batch: &RecordBatch, name: &str) -> PyResult<ArrayRef> {
    batch
        .column_by_name(name)
        .cloned()
        .ok_or_else(|| PyValueError::new_err(format!("no column {name:?}")))
}

/// BoilerplateLearner(*, share=0.05, min_pages=20, min_count=10, sample_pages=1000,
///                    json=None, id="id", text=None, url="url", first_seen="first_seen",
///                    threads=None, **profile)
///
/// Learns each host's boilerplate as `neardup dedup --boilerplate` does: a shingle on more
/// than `share` of a host's pages, and on at least `min_count` of them, of hosts with at
/// least `min_pages` pages, counted over the first `sample_pages` pages of each host in the
/// order they are added (lossy counting past 10 / share pages, as the CLI counts). Feed it
/// batches with [`with_hosts`]'s `_nd_host` column (`add`), then `finish()`.
#[pyclass(name = "BoilerplateLearner", module = "neardup")]
pub struct Learner {
    learner: Option<BoilerplateLearner>,
    hasher: SimHasher,
    json: Option<String>,
    id: String,
    text: Vec<String>,
    url: String,
    first_seen: String,
    pool: Option<Arc<rayon::ThreadPool>>,
}

#[pymethods]
impl Learner {
    #[new]
    #[pyo3(signature = (*, share=0.05, min_pages=20, min_count=neardup::text::DEFAULT_MIN_COUNT, sample_pages=1000, json=None, id="id", text=None, url="url", first_seen="first_seen", threads=None, **profile))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        share: f64,
        min_pages: u64,
        min_count: u64,
        sample_pages: u64,
        json: Option<String>,
        id: &str,
        text: Option<&Bound<'_, PyAny>>,
        url: &str,
        first_seen: &str,
        threads: Option<usize>,
        profile: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if !(share > 0.0 && share < 1.0) {
            return Err(PyValueError::new_err(format!(
                "share {share}: a share of a host's pages, above 0 and below 1"
            )));
        }
        if sample_pages == 0 {
            return Err(PyValueError::new_err("sample_pages must be at least 1"));
        }
        let hasher = ProfileOptions::from_kwargs(profile)?
            .builder()?
            .build()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let names = Names::new(id, text, url, first_seen)?;
        Ok(Learner {
            learner: Some(
                BoilerplateLearner::new(share, min_pages, sample_pages).with_min_count(min_count),
            ),
            hasher,
            json,
            id: id.to_owned(),
            text: names.text,
            url: url.to_owned(),
            first_seen: first_seen.to_owned(),
            pool: pool(threads)?,
        })
    }

    /// Counts the records of `batch` (which has [`with_hosts`]'s `_nd_host` column), in
    /// order; records without a host are not counted, and sampled records that are not
    /// usable (no text, a bad field) count as pages but not as sampled pages.
    fn add(&mut self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = RecordBatch::from_pyarrow_bound(batch)?;
        let hosts = column_named(&batch, HOST)?;
        check_strings(&hosts, HOST)?;
        let learner = self
            .learner
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("the learner has finished"))?;
        let mut sampled: Vec<(usize, String)> = Vec::new();
        for i in 0..batch.num_rows() {
            if hosts.is_null(i) {
                continue;
            }
            let host = string_at(hosts.as_ref(), i);
            if learner.begin_page(host) {
                sampled.push((i, host.to_owned()));
            }
        }
        if sampled.is_empty() {
            return Ok(());
        }
        let names = Names {
            id: &self.id,
            text: self.text.clone(),
            url: &self.url,
            first_seen: &self.first_seen,
        };
        let records: Vec<Option<Record>> = match &self.json {
            Some(column) => {
                let lines = column_named(&batch, column)?;
                check_strings(&lines, column)?;
                py.detach(|| {
                    sampled
                        .par_iter()
                        .map(|&(i, _)| {
                            (!lines.is_null(i))
                                .then(|| record_of_json(string_at(lines.as_ref(), i), &names).ok())
                                .flatten()
                        })
                        .collect()
                })
            }
            None => {
                let mut items = Vec::with_capacity(batch.num_rows());
                read_batch(&batch, &names, &mut items)?;
                sampled
                    .iter()
                    .map(|&(i, _)| items[i].1.as_ref().ok().cloned())
                    .collect()
            }
        };
        let hasher = &self.hasher;
        let pages: Vec<(String, Arc<[u64]>)> = py.detach(|| {
            install(&self.pool, || {
                sampled
                    .into_par_iter()
                    .zip(records)
                    .filter_map(|((_, host), record)| Some((host, record?)))
                    .map_init(Scratch::default, |scratch, (host, record)| {
                        let set = page_shingles(hasher, &record, scratch);
                        scratch.release_large();
                        (host, set)
                    })
                    .collect()
            })
        });
        learner.sample_pages(pages);
        Ok(())
    }

    /// The learned boilerplate of the hosts with enough pages, sorted by host: `host`,
    /// `pages` (the host's pages counted) and `shingles` (the boilerplate's shingle hashes,
    /// ascending, 8 bytes each, little-endian). The learner cannot be used after.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let learner = self
            .learner
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the learner has finished"))?;
        let learned = py.detach(|| learner.finish());
        let mut host = StringBuilder::new();
        let mut pages = Int64Builder::with_capacity(learned.len());
        let mut shingles = BinaryBuilder::new();
        for (h, p, set) in learned {
            host.append_value(h);
            pages.append_value(i64::try_from(p).unwrap_or(i64::MAX));
            let bytes: Vec<u8> = set.iter().flat_map(|x| x.to_le_bytes()).collect();
            shingles.append_value(bytes);
        }
        let out = super::batch_of(vec![
            ("host", Arc::new(host.finish()) as ArrayRef),
            ("pages", Arc::new(pages.finish())),
            ("shingles", Arc::new(shingles.finish())),
        ])
        .map_err(arrow_err)?;
        Ok(out.into_pyarrow(py)?.unbind())
    }
}

/// A page's distinct shingle hashes as the CLI's boilerplate pass takes them: from the
/// first half of its analysis where that applies, else from its fields' texts.
fn page_shingles(hasher: &SimHasher, record: &Record, scratch: &mut Scratch) -> Arc<[u64]> {
    let fields = hasher.fields_of(record);
    if let Some(Ok(pre)) = hasher.pre_analyze(&fields, scratch) {
        return pre.shingles().clone();
    }
    let texts: Vec<&str> = record.fields.iter().map(|f| f.text.as_str()).collect();
    hasher.distinct_shingles_with(&texts, scratch)
}

/// Boilerplate from `shingles`, 8 bytes per hash, little-endian (as
/// [`Learner::finish`] writes a host's).
pub(super) fn boilerplate_of(bytes: &[u8]) -> PyResult<neardup::Boilerplate> {
    if !bytes.len().is_multiple_of(8) {
        return Err(PyValueError::new_err(format!(
            "boilerplate: {} bytes, not a whole number of 8-byte shingle hashes",
            bytes.len()
        )));
    }
    Ok(neardup::Boilerplate::from_hashes(
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
    ))
}
