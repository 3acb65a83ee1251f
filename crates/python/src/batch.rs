//! Arrow batch kernels for scale-out. The Spark job (`neardup.spark`) runs its stages in the
//! executors through `mapInArrow` and `applyInArrow`, one Arrow batch at a time, so no row
//! crosses into Python: analysis (the CLI's normalising, shingling, fingerprint, content hash
//! and verification set), the pigeonhole blocks a fingerprint is shuffled under, the pairs
//! within `k` bits in one block's group, and the exact Jaccard of candidate pairs. Each is the
//! library's own code, so a distributed run's fingerprints, sets and scores are the CLI's, bit
//! for bit.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow, Table};
use arrow_schema::{Field, Schema};
use neardup::fingerprint::Field as TextWeight;
use neardup::index::linear::scan;
use neardup::index::self_join;
use neardup::verify::id_jaccard;
use neardup::{Record, Scratch};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::options::{install, pool, ProfileOptions};
use crate::records::{check_strings, quoted, read_batch, text_fields, Item, Names, Rejected};
use crate::texts::string_at;

/// analyze_batch(batch, *, json=None, id="id", text=None, url="url",
///               first_seen="first_seen", now_ms, profile="xxh3", shingle=4, bits=64,
///               weighting="tf", tokens="words", stopwords=False, idf=None,
///               detect_language=True, threads=None) -> pyarrow.RecordBatch
///
/// Each record of `batch` analysed as `neardup dedup` analyses it (no boilerplate), one row
/// per input row, in order. The records are the batch's columns `id`, `text`, `url` and
/// `first_seen` (string or timestamp), or with `json=COLUMN` that column's JSON Lines,
/// each checked field by field as the CLI checks a line. Rows: `doc` (int64: the stable
/// document id, [`doc_id`] of the record's id), `id`, `url`, `first_seen` (int64 ms;
/// `now_ms` where the record has none), `fp` and `fp_hi` (the fingerprint's low and high 64
/// bits as int64; `fp_hi` is 0 for 64-bit fingerprints), `content` (16 bytes: the exact
/// tier's hash), `set` (the verification set: sorted distinct 32-bit shingle ids,
/// little-endian), `tokens`, `language` and `reason` (why the record is rejected; the
/// analysis's columns are then null).
#[pyfunction]
#[pyo3(signature = (batch, *, json=None, id="id", text=None, url="url", first_seen="first_seen", now_ms, profile="xxh3", shingle=4, bits=64, weighting="tf", tokens="words", stopwords=false, idf=None, detect_language=true, threads=None))]
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
    profile: &str,
    shingle: usize,
    bits: u32,
    weighting: &str,
    tokens: &str,
    stopwords: bool,
    idf: Option<std::path::PathBuf>,
    detect_language: bool,
    threads: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let hasher = ProfileOptions::new(profile, shingle, bits, weighting, idf, tokens, stopwords)
        .builder()?
        .detect_language(detect_language)
        .build()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let text = text_fields(text)?;
    let names = Names {
        id,
        text: &text,
        url,
        first_seen,
    };
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
                                Ok(record) => analyse(&hasher, &record, now_ms, scratch),
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
                            Ok(record) => analyse(&hasher, record, now_ms, scratch),
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
fn record_of_json(line: &str, names: &Names<'_>) -> Result<Record, Rejected> {
    let bad = |id: Option<&String>, why: String| Rejected {
        id: id.cloned(),
        pos: 0,
        why,
    };
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| bad(None, format!("not JSON: {e}")))?;
    let serde_json::Value::Object(object) = value else {
        return Err(bad(None, "not a JSON object".into()));
    };
    let id = match object.get(names.id) {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(serde_json::Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        None | Some(serde_json::Value::Null) => {
            return Err(bad(
                None,
                format!(
                    "no {:?} field (a scale-out run names records by their id)",
                    names.id
                ),
            ))
        }
        Some(_) => {
            let why = format!(
                "field {:?} must be a non-empty string or an integer",
                names.id
            );
            return Err(bad(None, why));
        }
    };
    let string = |name: &str| -> Result<Option<&str>, Rejected> {
        match object.get(name) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(bad(
                Some(&id),
                format!("field {name:?} is {}, not a string", json_kind(other)),
            )),
        }
    };
    let mut fields = Vec::with_capacity(names.text.len());
    for name in names.text {
        if let Some(text) = string(name)? {
            if !text.trim().is_empty() {
                fields.push(neardup::TextField {
                    name: name.clone(),
                    text: text.to_owned(),
                    weight: 1,
                });
            }
        }
    }
    if fields.is_empty() {
        let why = format!("no text: {} missing or empty", quoted(names.text));
        return Err(bad(Some(&id), why));
    }
    let url = string(names.url)?.map(str::to_owned);
    let first_seen = match string(names.first_seen)? {
        None => None,
        Some(t) => Some(
            neardup::Timestamp::parse_rfc3339(t)
                .map_err(|e| bad(Some(&id), format!("field {:?}: {e}", names.first_seen)))?,
        ),
    };
    Ok(crate::records::record(id, url, first_seen, fields))
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
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
    record: &Record,
    now_ms: i64,
    scratch: &mut Scratch,
) -> Analysed {
    let fields: Vec<TextWeight<'_>> = record
        .fields
        .iter()
        .map(|f| TextWeight::weighted(&f.text, f.weight.max(1)))
        .collect();
    let analysis = hasher.analyze_ids(&fields, None, scratch);
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

/// pigeonhole_blocks(batch, *, bits, k) -> pyarrow.RecordBatch
///
/// The `k + 1` blocks each fingerprint of `batch` (columns `doc`, `fp`, `fp_hi`) is shuffled
/// under: two fingerprints within `k` bits agree exactly on at least one of `k + 1` disjoint
/// blocks (the pigeonhole principle), so grouping by (`block`, `value`) puts every such pair
/// in one group at least. Rows: `block` (int32), `value` (int64: the block's bits), `doc`,
/// `fp`, `fp_hi`, and the batch's `set` (binary) and `old` (bool) where it has them, so that
/// a group can verify its pairs itself ([`block_pairs`] with `min_jaccard`).
#[pyfunction]
#[pyo3(signature = (batch, *, bits, k))]
pub fn pigeonhole_blocks(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    bits: u32,
    k: u32,
) -> PyResult<Py<PyAny>> {
    let blocks = Blocks::new(bits, k)?;
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let docs = int64_column(&batch, "doc")?;
    let fps = fingerprints(&batch)?;
    let sets = optional_binary(&batch, "set")?;
    let olds = optional_bool(&batch, "old")?;
    let n = fps.len() * blocks.count as usize;
    let mut block = Int32Builder::with_capacity(n);
    let mut value = Int64Builder::with_capacity(n);
    let mut doc = Int64Builder::with_capacity(n);
    let mut lo = Int64Builder::with_capacity(n);
    let mut hi = Int64Builder::with_capacity(n);
    let set_bytes = sets
        .as_ref()
        .map_or(0, |s| s.value_data().len() * blocks.count as usize);
    let mut set = BinaryBuilder::with_capacity(n, set_bytes);
    let mut old = BooleanBuilder::with_capacity(n);
    for (i, &fp) in fps.iter().enumerate() {
        for j in 0..blocks.count {
            block.append_value(j as i32);
            value.append_value(blocks.value(fp, j) as i64);
            doc.append_value(docs.value(i));
            lo.append_value(fp as u64 as i64);
            hi.append_value((fp >> 64) as u64 as i64);
            if let Some(s) = &sets {
                set.append_option(s.is_valid(i).then(|| s.value(i)));
            }
            if let Some(o) = &olds {
                old.append_option(o.is_valid(i).then(|| o.value(i)));
            }
        }
    }
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        ("block", Arc::new(block.finish())),
        ("value", Arc::new(value.finish())),
        ("doc", Arc::new(doc.finish())),
        ("fp", Arc::new(lo.finish())),
        ("fp_hi", Arc::new(hi.finish())),
    ];
    if sets.is_some() {
        columns.push(("set", Arc::new(set.finish())));
    }
    if olds.is_some() {
        columns.push(("old", Arc::new(old.finish())));
    }
    let out = batch_of(columns).map_err(arrow_err)?;
    Ok(out.into_pyarrow(py)?.unbind())
}

/// block_pairs(rows, *, bits, k, min_jaccard=None) -> pyarrow.RecordBatch
///
/// The pairs within `k` bits among [`pigeonhole_blocks`] rows (a pyarrow Table or
/// RecordBatch), group by group: rows of one (`block`, `value`) are one group, and each pair
/// is emitted only by the lowest block its two fingerprints agree on, so a pair found under
/// several blocks is reported once without a global distinct. The rows may hold any number
/// of groups (a Spark partition of them), in any order. Where they carry `ta`, `tb` (int32)
/// and `side` (int8), a group too large for one task was cut into tiles: (`block`, `value`,
/// `ta`, `tb`) is the group, and where `ta` != `tb` only pairs across the two sides (0 and
/// 1) are reported. Rows: `a`, `b` (docs, `a` < `b`), `distance` (int32).
///
/// With `min_jaccard`, the rows carry each record's verification `set` and the pairs are
/// verified here, where the sets already are: only pairs whose exact Jaccard is at least
/// `min_jaccard` are returned, with a `jaccard` column (float64). Pairs whose set sizes alone
/// rule it out (J <= smaller / larger) are not scored, and where the rows carry `old`, pairs
/// of two old records (decided by an earlier run) are skipped. The schema's metadata
/// `candidates` counts the pairs within `k` found before verification.
#[pyfunction]
#[pyo3(signature = (rows, *, bits, k, min_jaccard=None))]
pub fn block_pairs(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    bits: u32,
    k: u32,
    min_jaccard: Option<f64>,
) -> PyResult<Py<PyAny>> {
    let blocks = Blocks::new(bits, k)?;
    if let Some(t) = min_jaccard {
        if !(0.0..=1.0).contains(&t) {
            return Err(PyValueError::new_err(format!(
                "min_jaccard {t}: a Jaccard threshold is between 0 and 1"
            )));
        }
    }
    let rows = BlockRows::read(rows, min_jaccard.is_some())?;
    let (pairs, candidates) = py.detach(|| rows.pairs(&blocks, min_jaccard));
    let mut a = Int64Builder::with_capacity(pairs.len());
    let mut b = Int64Builder::with_capacity(pairs.len());
    let mut d = Int32Builder::with_capacity(pairs.len());
    let mut jaccard = Float64Builder::with_capacity(pairs.len());
    for (x, y, dist, j) in pairs {
        a.append_value(x.min(y));
        b.append_value(x.max(y));
        d.append_value(dist as i32);
        jaccard.append_option(j);
    }
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        ("a", Arc::new(a.finish())),
        ("b", Arc::new(b.finish())),
        ("distance", Arc::new(d.finish())),
    ];
    if min_jaccard.is_some() {
        columns.push(("jaccard", Arc::new(jaccard.finish())));
    }
    let out = batch_of(columns).map_err(arrow_err)?;
    let metadata = HashMap::from([("candidates".to_owned(), candidates.to_string())]);
    let schema = Arc::new(out.schema().as_ref().clone().with_metadata(metadata));
    let out = out
        .with_schema(schema)
        .map_err(|e| arrow_err(e.to_string()))?;
    Ok(out.into_pyarrow(py)?.unbind())
}

/// [`pigeonhole_blocks`] rows read for [`block_pairs`], column by column.
struct BlockRows {
    docs: Vec<i64>,
    fps: Vec<u128>,
    /// (block, value, ta, tb) of each row: its group.
    keys: Vec<(i32, i64, i32, i32)>,
    sides: Vec<i8>,
    /// Each batch's `set` column, and each row's (batch, position) in them.
    set_columns: Vec<arrow_array::BinaryArray>,
    set_at: Vec<(u32, u32)>,
    olds: Vec<bool>,
}

/// A verified pair: (doc, doc, distance, Jaccard when verified).
type Found = (i64, i64, u32, Option<f64>);

impl BlockRows {
    fn read(rows: &Bound<'_, PyAny>, with_sets: bool) -> PyResult<BlockRows> {
        let mut out = BlockRows {
            docs: Vec::new(),
            fps: Vec::new(),
            keys: Vec::new(),
            sides: Vec::new(),
            set_columns: Vec::new(),
            set_at: Vec::new(),
            olds: Vec::new(),
        };
        for (b, batch) in batches_of(rows)?.into_iter().enumerate() {
            let n = batch.num_rows();
            out.docs
                .extend(int64_column(&batch, "doc")?.values().iter().copied());
            out.fps.extend(fingerprints(&batch)?);
            let block = int32_column(&batch, "block")?;
            let value = int64_column(&batch, "value")?;
            let tiles = match (optional_int32(&batch, "ta")?, optional_int32(&batch, "tb")?) {
                (Some(ta), Some(tb)) => {
                    let side = batch
                        .column_by_name("side")
                        .and_then(|c| c.as_primitive_opt::<Int8Type>().cloned())
                        .ok_or_else(|| {
                            PyValueError::new_err(
                                "tiled rows (ta, tb) need an int8 column \"side\"",
                            )
                        })?;
                    out.sides.extend(side.values().iter().copied());
                    Some((ta, tb))
                }
                (None, None) => {
                    out.sides.extend(std::iter::repeat_n(-1, n));
                    None
                }
                _ => {
                    return Err(PyValueError::new_err(
                        "columns \"ta\" and \"tb\" go together",
                    ))
                }
            };
            for i in 0..n {
                let (ta, tb) = tiles
                    .as_ref()
                    .map_or((0, 0), |(ta, tb)| (ta.value(i), tb.value(i)));
                out.keys.push((block.value(i), value.value(i), ta, tb));
            }
            if with_sets {
                let s = optional_binary(&batch, "set")?.ok_or_else(|| {
                    PyValueError::new_err(
                        "min_jaccard needs the verification sets: a binary column \"set\"",
                    )
                })?;
                if s.null_count() > 0 {
                    return Err(PyValueError::new_err("column \"set\" has nulls"));
                }
                out.set_at.extend((0..n).map(|i| (b as u32, i as u32)));
                out.set_columns.push(s);
                match optional_bool(&batch, "old")? {
                    Some(o) => out.olds.extend((0..n).map(|i| o.is_valid(i) && o.value(i))),
                    None => out.olds.extend(std::iter::repeat_n(false, n)),
                }
            }
        }
        Ok(out)
    }

    /// Row `r`'s verification set: read in place where its bytes are aligned for `u32`
    /// (Arrow buffers are, and every set is a multiple of 4 bytes), copied otherwise.
    fn set(&self, r: usize) -> std::borrow::Cow<'_, [u32]> {
        let (b, i) = self.set_at[r];
        let bytes = self.set_columns[b as usize].value(i as usize);
        match bytemuck::try_cast_slice::<u8, u32>(bytes) {
            Ok(ids) if cfg!(target_endian = "little") => std::borrow::Cow::Borrowed(ids),
            _ => std::borrow::Cow::Owned(ids(bytes)),
        }
    }

    /// Every group's pairs (verified with `min_jaccard`), and the candidates found.
    fn pairs(&self, blocks: &Blocks, min_jaccard: Option<f64>) -> (Vec<Found>, usize) {
        let mut groups: HashMap<(i32, i64, i32, i32), Vec<usize>> = HashMap::new();
        for (i, key) in self.keys.iter().enumerate() {
            groups.entry(*key).or_default().push(i);
        }
        let mut keys: Vec<_> = groups.keys().copied().collect();
        keys.sort_unstable();
        let mut found = Vec::new();
        let mut candidates = 0;
        for key in keys {
            let rows = &groups[&key];
            let (block, _, ta, tb) = key;
            let fps: Vec<u128> = rows.iter().map(|&r| self.fps[r]).collect();
            let sides: Vec<i8> = rows.iter().map(|&r| self.sides[r]).collect();
            let pairs = group_pairs(blocks, block as u32, &fps, (ta != tb).then_some(&sides));
            candidates += pairs.len();
            for (i, j, distance) in pairs {
                let (x, y) = (rows[i], rows[j]);
                let (dx, dy) = (self.docs[x], self.docs[y]);
                match min_jaccard {
                    None => found.push((dx, dy, distance, None)),
                    Some(t) => {
                        let (sx, sy) = (self.set(x), self.set(y));
                        if self.olds[x] && self.olds[y] || !sizes_allow(sx.len(), sy.len(), t) {
                            continue;
                        }
                        let j = id_jaccard(&sx, &sy);
                        if j >= t {
                            found.push((dx, dy, distance, Some(j)));
                        }
                    }
                }
            }
        }
        (found, candidates)
    }
}

/// Whether two sets of these sizes can reach Jaccard `t`: |A & B| / |A | B| is at most
/// min / max, so a pair under `t` by sizes alone is no near-duplicate and is not scored.
/// The margin keeps a pair at exactly `t` from being cut by rounding.
fn sizes_allow(a: usize, b: usize, t: f64) -> bool {
    let (small, large) = (a.min(b), a.max(b));
    large == 0 || small as f64 >= t * large as f64 * (1.0 - 1e-9)
}

/// Groups this large or larger (64-bit, one side) go through the library's all-pairs join;
/// smaller ones are scanned row by row with the library's vectorised XOR-popcount scan,
/// which is faster below it. Measured at k 16 on 60k real records (groups up to 11.8k
/// rows): scanning every group 1.1 s, the join from 4,096 rows 5.3 s. The join's cost
/// grows with its output, the scan's with the square of the group, so the join stays for
/// the groups of millions a raised `max_bucket` makes.
const JOIN_FROM: usize = 1 << 17;

/// The pairs of one group within `k` bits whose lowest agreeing block is `block`: (row i,
/// row j, distance).
fn group_pairs(
    blocks: &Blocks,
    block: u32,
    fps: &[u128],
    sides: Option<&Vec<i8>>,
) -> Vec<(usize, usize, u32)> {
    let k = blocks.k;
    // Two fingerprints within k bits are within k on their low 64 bits: the library's
    // vectorised scan over the low halves finds every such pair (all of them at 64 bits),
    // and the full distance decides at 128.
    let lows: Vec<u64> = fps.iter().map(|&f| f as u64).collect();
    let mut out = Vec::new();
    let mut keep = |i: usize, j: usize| {
        let distance = (fps[i] ^ fps[j]).count_ones();
        if distance <= k && blocks.lowest_agreeing(fps[i], fps[j]) == Some(block) {
            out.push((i, j, distance));
        }
    };
    match sides {
        Some(sides) => {
            let (left, right): (Vec<usize>, Vec<usize>) =
                (0..fps.len()).partition(|&i| sides[i] == 0);
            let right_lows: Vec<u64> = right.iter().map(|&j| lows[j]).collect();
            for &i in &left {
                scan(&right_lows, lows[i], k, |at, _| keep(i, right[at]));
            }
        }
        None if blocks.bits == 64 && fps.len() >= JOIN_FROM => match self_join(&lows, k) {
            Ok(pairs) => {
                for p in pairs {
                    keep(p.a as usize, p.b as usize);
                }
            }
            Err(_) => scan_all(&lows, k, keep),
        },
        None => scan_all(&lows, k, keep),
    }
    out
}

/// Every pair (i, j), i < j, of `lows` within `k` bits, by one scan per row.
fn scan_all(lows: &[u64], k: u32, mut keep: impl FnMut(usize, usize)) {
    for i in 0..lows.len() {
        let rest = &lows[i + 1..];
        scan(rest, lows[i], k, |at, _| keep(i, i + 1 + at));
    }
}

/// `k + 1` disjoint blocks over a fingerprint's `bits` bits, as even as they can be.
struct Blocks {
    bits: u32,
    k: u32,
    count: u32,
}

impl Blocks {
    fn new(bits: u32, k: u32) -> PyResult<Blocks> {
        if bits != 64 && bits != 128 {
            return Err(PyValueError::new_err(format!(
                "bits {bits}: fingerprints have 64 or 128 bits"
            )));
        }
        if k >= bits {
            return Err(PyValueError::new_err(format!(
                "k {k}: a radius under {bits} bits is needed for {} pigeonhole blocks",
                k + 1
            )));
        }
        Ok(Blocks {
            bits,
            k,
            count: k + 1,
        })
    }

    /// The mask of block `j`.
    fn mask(&self, j: u32) -> u128 {
        let start = j * self.bits / self.count;
        let end = (j + 1) * self.bits / self.count;
        let width = end - start;
        let ones = if width >= 128 {
            u128::MAX
        } else {
            (1u128 << width) - 1
        };
        ones << start
    }

    /// Block `j`'s bits as one 64-bit value (folded when the block is wider, as with k = 0
    /// over 128 bits: equal blocks stay equal, and a collision only adds a candidate that
    /// fails the distance test).
    fn value(&self, fp: u128, j: u32) -> u64 {
        let start = j * self.bits / self.count;
        let v = (fp & self.mask(j)) >> start;
        if v >> 64 == 0 {
            v as u64
        } else {
            fold(v)
        }
    }

    /// The lowest block on which `a` and `b` agree, if any.
    fn lowest_agreeing(&self, a: u128, b: u128) -> Option<u32> {
        let diff = a ^ b;
        (0..self.count).find(|&j| diff & self.mask(j) == 0)
    }
}

fn fold(v: u128) -> u64 {
    let lo = v as u64;
    let hi = (v >> 64) as u64;
    lo ^ hi.rotate_left(29).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// jaccard_batch(batch, *, a="a_set", b="b_set") -> pyarrow.Array (float64)
///
/// The exact Jaccard similarity of each row's two verification sets (binary columns of
/// [`analyze_batch`]'s `set`), as the pipeline scores a candidate pair.
#[pyfunction]
#[pyo3(signature = (batch, *, a="a_set", b="b_set"))]
pub fn jaccard_batch(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    a: &str,
    b: &str,
) -> PyResult<Py<PyAny>> {
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let binary = |name: &str| -> PyResult<arrow_array::BinaryArray> {
        let c = batch
            .column_by_name(name)
            .ok_or_else(|| PyValueError::new_err(format!("no column {name:?}")))?;
        c.as_binary_opt::<i32>()
            .cloned()
            .ok_or_else(|| PyTypeError::new_err(format!("column {name:?} is not binary")))
    };
    let (xs, ys) = (binary(a)?, binary(b)?);
    let scores: Vec<Option<f64>> = py.detach(|| {
        (0..xs.len())
            .into_par_iter()
            .map(|i| {
                if xs.is_null(i) || ys.is_null(i) {
                    return None;
                }
                Some(id_jaccard(&ids(xs.value(i)), &ids(ys.value(i))))
            })
            .collect()
    });
    Ok(Float64Array::from(scores)
        .into_data()
        .into_pyarrow(py)?
        .unbind())
}

/// annotate_json(lines, source_urls, first_seen, cluster_size, fingerprint, language)
///     -> pyarrow.Array (string)
///
/// Kept records as `neardup dedup` writes them to kept.jsonl: each JSON line (an object)
/// with `source_urls`, `first_seen` (RFC 3339), `cluster_size`, `neardup_fingerprint` and
/// `neardup_language` (when known) set, its other fields as they were, in order. The
/// arguments are pyarrow arrays of one length: strings, lists of strings, int64 ms, int64,
/// strings, strings.
#[pyfunction]
pub fn annotate_json(
    py: Python<'_>,
    lines: &Bound<'_, PyAny>,
    source_urls: &Bound<'_, PyAny>,
    first_seen: &Bound<'_, PyAny>,
    cluster_size: &Bound<'_, PyAny>,
    fingerprint: &Bound<'_, PyAny>,
    language: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let array = |obj: &Bound<'_, PyAny>| -> PyResult<ArrayRef> {
        Ok(arrow_array::make_array(
            arrow_data::ArrayData::from_pyarrow_bound(obj)?,
        ))
    };
    let (lines, urls, times, sizes, fps, langs) = (
        array(lines)?,
        array(source_urls)?,
        array(first_seen)?,
        array(cluster_size)?,
        array(fingerprint)?,
        array(language)?,
    );
    check_strings(&lines, "lines")?;
    check_strings(&fps, "fingerprint")?;
    check_strings(&langs, "language")?;
    let urls = urls
        .as_list_opt::<i32>()
        .ok_or_else(|| PyTypeError::new_err("source_urls: a list<string> array"))?;
    let times = times
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| PyTypeError::new_err("first_seen: an int64 array"))?;
    let sizes = sizes
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| PyTypeError::new_err("cluster_size: an int64 array"))?;
    let n = lines.len();
    if [urls.len(), times.len(), sizes.len(), fps.len(), langs.len()]
        .iter()
        .any(|&l| l != n)
    {
        return Err(PyValueError::new_err(
            "annotate_json: arrays of different lengths",
        ));
    }
    let mut out = StringBuilder::new();
    for i in 0..n {
        let line = string_at(lines.as_ref(), i);
        let mut object = match serde_json::from_str::<serde_json::Value>(line) {
            Ok(serde_json::Value::Object(o)) => o,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "annotate_json: row {i} is not a JSON object"
                )))
            }
        };
        let url_list = urls.value(i);
        let url_list: Vec<serde_json::Value> = (0..url_list.len())
            .filter(|&j| !url_list.is_null(j))
            .map(|j| serde_json::Value::String(string_at(url_list.as_ref(), j).to_owned()))
            .collect();
        object.insert("source_urls".into(), serde_json::Value::Array(url_list));
        object.insert(
            "first_seen".into(),
            serde_json::Value::String(neardup::Timestamp(times.value(i)).to_rfc3339()),
        );
        object.insert("cluster_size".into(), sizes.value(i).into());
        object.insert(
            "neardup_fingerprint".into(),
            string_at(fps.as_ref(), i).to_owned().into(),
        );
        object.shift_remove("neardup_language");
        if !langs.is_null(i) {
            object.insert(
                "neardup_language".into(),
                string_at(langs.as_ref(), i).to_owned().into(),
            );
        }
        out.append_value(serde_json::Value::Object(object).to_string());
    }
    Ok(out.finish().into_data().into_pyarrow(py)?.unbind())
}

/// A verification set's ids from its little-endian bytes.
fn ids(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn optional_binary(batch: &RecordBatch, name: &str) -> PyResult<Option<arrow_array::BinaryArray>> {
    batch
        .column_by_name(name)
        .map(|c| {
            c.as_binary_opt::<i32>()
                .cloned()
                .ok_or_else(|| PyTypeError::new_err(format!("column {name:?} is not binary")))
        })
        .transpose()
}

fn optional_bool(batch: &RecordBatch, name: &str) -> PyResult<Option<arrow_array::BooleanArray>> {
    batch
        .column_by_name(name)
        .map(|c| {
            c.as_boolean_opt()
                .cloned()
                .ok_or_else(|| PyTypeError::new_err(format!("column {name:?} is not bool")))
        })
        .transpose()
}

fn int32_column(batch: &RecordBatch, name: &str) -> PyResult<arrow_array::Int32Array> {
    optional_int32(batch, name)?.ok_or_else(|| PyValueError::new_err(format!("no column {name:?}")))
}

fn optional_int32(batch: &RecordBatch, name: &str) -> PyResult<Option<arrow_array::Int32Array>> {
    let Some(c) = batch.column_by_name(name) else {
        return Ok(None);
    };
    let c = c
        .as_primitive_opt::<Int32Type>()
        .ok_or_else(|| PyTypeError::new_err(format!("column {name:?} is not int32")))?;
    if c.null_count() > 0 {
        return Err(PyValueError::new_err(format!("column {name:?} has nulls")));
    }
    Ok(Some(c.clone()))
}

fn int64_column(batch: &RecordBatch, name: &str) -> PyResult<Int64Array> {
    let c = batch
        .column_by_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("no column {name:?}")))?;
    let c = c
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| PyTypeError::new_err(format!("column {name:?} is not int64")))?;
    if c.null_count() > 0 {
        return Err(PyValueError::new_err(format!("column {name:?} has nulls")));
    }
    Ok(c.clone())
}

/// The fingerprints of `batch`'s `fp` and `fp_hi` columns.
fn fingerprints(batch: &RecordBatch) -> PyResult<Vec<u128>> {
    let lo = int64_column(batch, "fp")?;
    let hi = int64_column(batch, "fp_hi")?;
    Ok(lo
        .values()
        .iter()
        .zip(hi.values().iter())
        .map(|(&l, &h)| (l as u64 as u128) | ((h as u64 as u128) << 64))
        .collect())
}

/// The record batches of a pyarrow Table or RecordBatch.
fn batches_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    if obj.hasattr("combine_chunks")? {
        return Ok(Table::from_pyarrow_bound(obj)?.into_inner().0);
    }
    Ok(vec![RecordBatch::from_pyarrow_bound(obj)?])
}

fn batch_of(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, String> {
    let schema = Schema::new(
        columns
            .iter()
            .map(|(name, c)| Field::new(*name, c.data_type().clone(), true))
            .collect::<Vec<_>>(),
    );
    let arrays = columns.into_iter().map(|(_, c)| c).collect();
    RecordBatch::try_new(Arc::new(schema), arrays).map_err(|e| e.to_string())
}

fn arrow_err(e: String) -> PyErr {
    PyValueError::new_err(e)
}

/// components(a, b) -> pyarrow.RecordBatch
///
/// The connected components of the undirected edges `a[i]` ~ `b[i]` (int64 arrays of one
/// length): one row per node, `doc` and `root`, the smallest document id of its component.
/// The Spark job's components on the driver when the verified pairs are few enough to
/// collect; the distributed large-star / small-star gives the same roots.
#[pyfunction]
pub fn components(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let column = |obj: &Bound<'_, PyAny>, name: &str| -> PyResult<Vec<i64>> {
        let data = arrow_data::ArrayData::from_pyarrow_bound(obj)?;
        let array = arrow_array::make_array(data);
        let ints = array
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| PyTypeError::new_err(format!("{name} is not an int64 array")))?;
        if ints.null_count() > 0 {
            return Err(PyValueError::new_err(format!("{name} has nulls")));
        }
        Ok(ints.values().to_vec())
    };
    let (a, b) = (column(a, "a")?, column(b, "b")?);
    if a.len() != b.len() {
        return Err(PyValueError::new_err(format!(
            "a has {} edges' ends, b {}",
            a.len(),
            b.len()
        )));
    }
    let (docs, roots) = py.detach(|| union_find(&a, &b));
    let out = batch_of(vec![
        ("doc", Arc::new(Int64Array::from(docs))),
        ("root", Arc::new(Int64Array::from(roots))),
    ])
    .map_err(arrow_err)?;
    Ok(out.into_pyarrow(py)?.unbind())
}

/// Every node of the edges with the smallest node of its component, nodes in ascending order.
fn union_find(a: &[i64], b: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let mut nodes: Vec<i64> = a.iter().chain(b).copied().collect();
    nodes.sort_unstable();
    nodes.dedup();
    let index = |d: i64| nodes.binary_search(&d).unwrap_or_default();
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for (&x, &y) in a.iter().zip(b) {
        let (rx, ry) = (find(&mut parent, index(x)), find(&mut parent, index(y)));
        // The smaller index stays the root: nodes are sorted, so it is the smaller doc.
        let (lo, hi) = (rx.min(ry), rx.max(ry));
        parent[hi] = lo;
    }
    let roots = (0..nodes.len())
        .map(|i| nodes[find(&mut parent, i)])
        .collect();
    (nodes, roots)
}
