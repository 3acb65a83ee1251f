//! A column of texts from Python: a list (or any iterable) of `str`, or a pyarrow string
//! array or chunked array, read in place (zero-copy: the Arrow buffers are the ones pyarrow
//! holds). Every unusable element is an error naming its position.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::DataType;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use rayon::prelude::*;

/// Texts, each readable as `&str` without the GIL.
pub enum Texts {
    /// Copied out of Python `str` objects (the stable ABI has no borrowed UTF-8 view
    /// before Python 3.10).
    Owned(Vec<String>),
    /// Arrow string arrays (`string`, `large_string`, `string_view`), in order, with the
    /// position each starts at.
    Arrow(Vec<(usize, ArrayRef)>, usize),
}

impl Texts {
    /// Reads `obj` (named `what` in errors). A null, `None`, `bytes` or non-`str` element
    /// is a `ValueError`/`TypeError` naming its position.
    pub fn from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Texts> {
        if obj.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(format!(
                "{what} is one str: pass a list of texts (or a pyarrow string array)"
            )));
        }
        if is_arrow(obj)? {
            return Texts::from_arrow(obj, what);
        }
        let mut texts = Vec::with_capacity(obj.len().unwrap_or(0));
        for (i, item) in obj.try_iter()?.enumerate() {
            texts.push(text_at(&item?, what, i)?);
        }
        Ok(Texts::Owned(texts))
    }

    fn from_arrow(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Texts> {
        let chunks: Vec<Bound<'_, PyAny>> = if obj.hasattr("chunks")? {
            obj.getattr("chunks")?
                .try_iter()?
                .collect::<PyResult<_>>()?
        } else {
            vec![obj.clone()]
        };
        let mut arrays = Vec::with_capacity(chunks.len());
        let mut start = 0;
        for chunk in chunks {
            let array = arrow_array::make_array(arrow_data::ArrayData::from_pyarrow_bound(&chunk)?);
            match array.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {}
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "{what} is an Arrow array of {other}, not of strings"
                    )))
                }
            }
            if array.null_count() > 0 {
                let i = (0..array.len()).find(|&i| array.is_null(i)).unwrap_or(0);
                return Err(PyValueError::new_err(format!(
                    "{what}[{}] is null: every text must be a string",
                    start + i
                )));
            }
            let len = array.len();
            arrays.push((start, array));
            start += len;
        }
        Ok(Texts::Arrow(arrays, start))
    }

    pub fn len(&self) -> usize {
        match self {
            Texts::Owned(v) => v.len(),
            Texts::Arrow(_, len) => *len,
        }
    }

    /// The text at `i`.
    pub fn get(&self, i: usize) -> &str {
        match self {
            Texts::Owned(v) => &v[i],
            Texts::Arrow(chunks, _) => {
                let c = chunks.partition_point(|(start, _)| *start <= i) - 1;
                let (start, array) = &chunks[c];
                string_at(array.as_ref(), i - start)
            }
        }
    }

    /// `f` of each text with its position, in parallel, in order.
    pub fn par_map<T: Send>(&self, f: impl Fn(usize, &str) -> T + Sync + Send) -> Vec<T> {
        (0..self.len())
            .into_par_iter()
            .with_min_len(64)
            .map(|i| f(i, self.get(i)))
            .collect()
    }
}

/// Whether `obj` is an Arrow array or chunked array (pyarrow's, or any object that exports
/// the Arrow C data interface).
pub fn is_arrow(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.hasattr("__arrow_c_array__")?
        || (obj.hasattr("chunks")? && obj.hasattr("type")? && !obj.hasattr("columns")?))
}

/// One element of a text column, as `str`.
pub fn text_at(item: &Bound<'_, PyAny>, what: &str, i: usize) -> PyResult<String> {
    if let Ok(s) = item.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    Err(not_a_text(item, &format!("{what}[{i}]")))
}

/// The error for a value that is not a text: `ValueError` for `None`, `TypeError` otherwise.
pub fn not_a_text(item: &Bound<'_, PyAny>, name: &str) -> PyErr {
    if item.is_none() {
        PyValueError::new_err(format!("{name} is None: every text must be a str"))
    } else if item.is_instance_of::<PyBytes>() {
        PyTypeError::new_err(format!(
            "{name} is bytes, not str: decode it first (e.g. .decode(\"utf-8\"))"
        ))
    } else {
        let kind = item
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        PyTypeError::new_err(format!("{name} is {kind}, not str"))
    }
}

/// The string at `i` of a string array of any of Arrow's three layouts.
pub fn string_at(array: &dyn Array, i: usize) -> &str {
    match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(i),
        DataType::LargeUtf8 => array.as_string::<i64>().value(i),
        _ => array.as_string_view().value(i),
    }
}
