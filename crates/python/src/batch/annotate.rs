//! Candidate pairs' exact Jaccard, and kept records' JSON Lines annotated with their
//! cluster.

use std::borrow::Cow;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Float64Array, RecordBatch};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow};
use neardup::json::{object_with, open_object, Members};
use neardup::verify::id_jaccard;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::records::check_strings;
use crate::texts::string_at;

use super::ids;

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
/// with its members copied as written, in order, then `source_urls`, `first_seen` (RFC
/// 3339), `cluster_size`, `neardup_fingerprint` and `neardup_language` (when known); the
/// line's own members of those names are left out. The arguments are pyarrow arrays of one
/// length: strings, lists of strings, int64 ms, int64, strings, strings.
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
    let mut out = StringBuilder::with_capacity(n, lines.get_buffer_memory_size() + 160 * n);
    let mut line_out: Vec<u8> = Vec::with_capacity(4096);
    for i in 0..n {
        let line = string_at(lines.as_ref(), i).trim();
        let members = Members::parse(line)
            .map_err(|why| PyValueError::new_err(format!("annotate_json: row {i}: {why}")))?;
        // The object as read, or without its own members of the keys set here; then those.
        let object: Cow<'_, [u8]> = match members.kept_members(line) {
            Some(kept) => Cow::Owned(object_with(line.as_bytes(), &kept)),
            None => Cow::Borrowed(line.as_bytes()),
        };
        let (body, has_members) = open_object(&object).ok_or_else(|| {
            PyValueError::new_err(format!("annotate_json: row {i}: not a JSON object"))
        })?;
        let size = usize::try_from(sizes.value(i)).map_err(|_| {
            PyValueError::new_err(format!("annotate_json: row {i}: a negative cluster_size"))
        })?;
        let url_list = urls.value(i);
        let url_list: Vec<&str> = (0..url_list.len())
            .filter(|&j| !url_list.is_null(j))
            .map(|j| string_at(url_list.as_ref(), j))
            .collect();
        let language = (!langs.is_null(i))
            .then(|| serde_json::to_string(string_at(langs.as_ref(), i)))
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("annotate_json: row {i}: {e}")))?;
        line_out.clear();
        line_out.extend_from_slice(body);
        if has_members {
            line_out.push(b',');
        }
        neardup::json::write_kept_fields(
            &mut line_out,
            &url_list,
            &neardup::Timestamp(times.value(i)).to_rfc3339(),
            size,
            Some(string_at(fps.as_ref(), i)),
            language.as_deref(),
        )
        .map_err(|e| PyValueError::new_err(format!("annotate_json: row {i}: {e}")))?;
        line_out.push(b'}');
        // Valid UTF-8: slices of the line at ASCII boundaries, and JSON written by serde.
        out.append_value(String::from_utf8_lossy(&line_out));
    }
    Ok(out.finish().into_data().into_pyarrow(py)?.unbind())
}
