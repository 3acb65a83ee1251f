//! `analyze_batch`: records analysed as the CLI analyses them, and their stable ids.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow};
use neardup::json::{kind, Members, Text};
use neardup::{Record, Scratch};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use crate::options::{install, pool, ProfileOptions};
use crate::records::{check_strings, quoted, read_batch, Item, Names, Rejected};
use crate::texts::string_at;

use super::{arrow_err, batch_of};

/// analyze_batch(batch, *, json=None, id="id", text=None, url="url",
///               first_seen="first_seen", now_ms, profile="xxh3", shingle=4, bits=64,
///               weighting="tf", tokens="words", stopwords=False, idf=None,
///               detect_language=True, boilerplate=None, threads=None) -> pyarrow.RecordBatch
///
/// Each record of `batch` analysed as `neardup dedup` analyses it, one row
/// per input row, in order. The records are the batch's columns `id`, `text`, `url` and
/// `first_seen` (string or timestamp), or with `json=COLUMN` that column's JSON Lines,
/// each checked field by field as the CLI checks a line. Rows: `doc` (int64: the stable
/// document id, [`doc_id`] of the record's id), `id`, `url`, `first_seen` (int64 ms;
/// `now_ms` where the record has none), `fp` and `fp_hi` (the fingerprint's low and high 64
/// bits as int64; `fp_hi` is 0 for 64-bit fingerprints), `content` (16 bytes: the exact
/// tier's hash), `set` (the verification set: sorted distinct 32-bit shingle ids,
/// little-endian), `tokens`, `language` and `reason` (why the record is rejected; the
/// analysis's columns are then null). `boilerplate` (bytes: shingle hashes, 8 bytes each,
/// little-endian, as `BoilerplateLearner.finish` gives a host's) is left out of every
/// record's fingerprint and set, as the CLI leaves out its learned boilerplate (a record
/// that is nothing but boilerplate is analysed whole).
#[pyfunction]
#[pyo3(signature = (batch, *, json=None, id="id", text=None, url="url", first_seen="first_seen", now_ms, detect_language=true, boilerplate=None, threads=None, **profile))]
#[allow(clippy::too_many_arguments)]
pub fn analyze_batch(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    json: Option<&str>,
    id: &str,
    text: Option<&Bound<'_, PyAny>>,
    url: &str,
    first_seen: &str,
    now_ms: i64,
    detect_language: bool,
    boilerplate: Option<&[u8]>,
    threads: Option<usize>,
    profile: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let boilerplate = boilerplate
        .map(super::boilerplate::boilerplate_of)
        .transpose()?;
    let boilerplate = boilerplate.as_ref().filter(|b| !b.is_empty());
    let hasher = ProfileOptions::from_kwargs(profile)?
        .builder()?
        .detect_language(detect_language)
        .build()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let names = Names::new(id, text, url, first_seen)?;
    let pool = pool(threads)?;
    let analysed: Vec<Analysed> = match json {
        Some(column) => {
            let lines = batch
                .column_by_name(column)
                .ok_or_else(|| PyValueError::new_err(format!("no column {column:?}")))?;
            check_strings(lines, column)?;
            py.detach(|| {
                install(&pool, || {
                    (0..lines.len())
                        .into_par_iter()
                        .map_init(Scratch::default, |scratch, i| {
                            if lines.is_null(i) {
                                return rejected(None, "an empty line".into());
                            }
                            match record_of_json(string_at(lines.as_ref(), i), &names) {
                                Ok(record) => {
                                    analyse(&hasher, boilerplate, &record, now_ms, scratch)
                                }
                                Err(r) => rejected(r.id, r.why),
                            }
                        })
                        .collect()
                })
            })
        }
        None => {
            let mut items: Vec<Item> = Vec::with_capacity(batch.num_rows());
            read_batch(&batch, &names, &mut items)?;
            py.detach(|| {
                install(&pool, || {
                    items
                        .par_iter()
                        .map_init(Scratch::default, |scratch, (_, item)| match item {
                            Ok(record) => analyse(&hasher, boilerplate, record, now_ms, scratch),
                            Err(r) => rejected(r.id.clone(), r.why.clone()),
                        })
                        .collect()
                })
            })
        }
    };
    let out = analysed_batch(analysed).map_err(arrow_err)?;
    Ok(out.into_pyarrow(py)?.unbind())
}

/// doc_id(id) -> int
///
/// The stable 64-bit document id of a record id (xxh3-64 of its UTF-8 bytes, as int64):
/// what the Spark job joins and clusters records by, so two runs over the same input give
/// the same clusters and survivors however Spark partitions it.
#[pyfunction]
pub fn doc_id(id: &str) -> i64 {
    xxhash_rust::xxh3::xxh3_64(id.as_bytes()) as i64
}

fn rejected(id: Option<String>, reason: String) -> Analysed {
    Analysed::Rejected { id, reason }
}

/// A record from one JSON line, checked as `neardup dedup` checks a line: an object whose
/// id is a non-empty string or an integer, whose text fields are strings (at least one not
/// empty), whose `url` is a string and whose `first_seen` is an RFC 3339 time.
pub(super) fn record_of_json(line: &str, names: &Names<'_>) -> Result<Record, Rejected> {
    let bad = |id: Option<&String>, why: String| Rejected {
        id: id.cloned(),
        pos: 0,
        why,
    };
    let object = Members::parse(line).map_err(|why| bad(None, why))?;
    let not_an_id = || {
        let why = format!(
            "field {:?} must be a non-empty string or an integer",
            names.id
        );
        bad(None, why)
    };
    let id = match object.get(names.id).map(|raw| (raw, kind(raw))) {
        None | Some((_, "null")) => {
            return Err(bad(
                None,
                format!(
                    "no {:?} field (a scale-out run names records by their id)",
                    names.id
                ),
            ))
        }
        Some((_, "a string")) => match object.text(names.id) {
            Ok(Text::Present(s)) => s,
            _ => return Err(not_an_id()),
        },
        Some((raw, "a number")) => match serde_json::from_str::<serde_json::Number>(raw) {
            Ok(n) if n.is_i64() || n.is_u64() => n.to_string(),
            _ => return Err(not_an_id()),
        },
        Some(_) => return Err(not_an_id()),
    };
    // Absent, null, empty and blank strings are no value; other types are rejected.
    let string = |name: &str| object.string(name).map_err(|why| bad(Some(&id), why));
    let mut fields = Vec::with_capacity(names.text.len());
    for name in &names.text {
        if let Some(text) = string(name)? {
            fields.push(neardup::TextField {
                name: name.clone(),
                text,
                weight: 1,
            });
        }
    }
    if fields.is_empty() {
        let why = format!("no text: {} missing or empty", quoted(&names.text));
        return Err(bad(Some(&id), why));
    }
    let url = string(names.url)?;
    let first_seen = match string(names.first_seen)? {
        None => None,
        Some(t) => Some(
            neardup::Timestamp::parse_rfc3339(&t)
                .map_err(|e| bad(Some(&id), format!("field {:?}: {e}", names.first_seen)))?,
        ),
    };
    Ok(crate::records::record(id, url, first_seen, fields))
}

/// One record's analysis, or why it is rejected.
enum Analysed {
    Done {
        id: String,
        url: Option<String>,
        first_seen: i64,
        fingerprint: u128,
        content: u128,
        set: Arc<[u32]>,
        tokens: usize,
        language: Option<&'static str>,
    },
    Rejected {
        id: Option<String>,
        reason: String,
    },
}

fn analyse(
    hasher: &neardup::SimHasher,
    boilerplate: Option<&neardup::Boilerplate>,
    record: &Record,
    now_ms: i64,
    scratch: &mut Scratch,
) -> Analysed {
    let fields = hasher.fields_of(record);
    let analysis = match hasher.analyze_ids(&fields, boilerplate, scratch) {
        // Nothing but boilerplate: the whole text, as the CLI analyses such a page.
        Err(neardup::Error::EmptyFeatureBag { .. }) if boilerplate.is_some() => {
            hasher.analyze_ids(&fields, None, scratch)
        }
        analysis => analysis,
    };
    scratch.release_large();
    match analysis {
        Ok(a) => Analysed::Done {
            id: record.id.clone(),
            url: record.url.clone(),
            first_seen: record.first_seen.map_or(now_ms, |t| t.0),
            fingerprint: a.fingerprint.value(),
            content: a.content_hash.0,
            set: a.shingles,
            tokens: a.token_count,
            language: a.language.map(|l| l.code),
        },
        // The pipeline's words for it (`neardup dedup`'s rejects).
        Err(neardup::Error::EmptyFeatureBag { .. }) => Analysed::Rejected {
            id: Some(record.id.clone()),
            reason: "no words to fingerprint".into(),
        },
        Err(e) => Analysed::Rejected {
            id: Some(record.id.clone()),
            reason: e.to_string(),
        },
    }
}

fn analysed_batch(rows: Vec<Analysed>) -> Result<RecordBatch, String> {
    let n = rows.len();
    let mut doc = Int64Builder::with_capacity(n);
    let mut id = StringBuilder::new();
    let mut url = StringBuilder::new();
    let mut first_seen = Int64Builder::with_capacity(n);
    let mut fp = Int64Builder::with_capacity(n);
    let mut fp_hi = Int64Builder::with_capacity(n);
    let mut content = BinaryBuilder::new();
    let mut set = BinaryBuilder::new();
    let mut tokens = Int32Builder::with_capacity(n);
    let mut language = StringBuilder::new();
    let mut reason = StringBuilder::new();
    for row in rows {
        match row {
            Analysed::Done {
                id: i,
                url: u,
                first_seen: t,
                fingerprint,
                content: c,
                set: s,
                tokens: w,
                language: l,
            } => {
                doc.append_value(doc_id(&i));
                id.append_value(i);
                url.append_option(u);
                first_seen.append_value(t);
                fp.append_value(fingerprint as u64 as i64);
                fp_hi.append_value((fingerprint >> 64) as u64 as i64);
                content.append_value(c.to_le_bytes());
                let bytes: Vec<u8> = s.iter().flat_map(|x| x.to_le_bytes()).collect();
                set.append_value(bytes);
                tokens.append_value(i32::try_from(w).unwrap_or(i32::MAX));
                language.append_option(l);
                reason.append_null();
            }
            Analysed::Rejected { id: i, reason: r } => {
                doc.append_option(i.as_deref().map(doc_id));
                id.append_option(i);
                url.append_null();
                first_seen.append_null();
                fp.append_null();
                fp_hi.append_null();
                content.append_null();
                set.append_null();
                tokens.append_null();
                language.append_null();
                reason.append_value(r);
            }
        }
    }
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("doc", Arc::new(doc.finish())),
        ("id", Arc::new(id.finish())),
        ("url", Arc::new(url.finish())),
        ("first_seen", Arc::new(first_seen.finish())),
        ("fp", Arc::new(fp.finish())),
        ("fp_hi", Arc::new(fp_hi.finish())),
        ("content", Arc::new(content.finish())),
        ("set", Arc::new(set.finish())),
        ("tokens", Arc::new(tokens.finish())),
        ("language", Arc::new(language.finish())),
        ("reason", Arc::new(reason.finish())),
    ];
    batch_of(columns)
}
