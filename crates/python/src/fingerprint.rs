//! `Fingerprinter`, `fingerprint`, `shingle_hashes` and `jaccard`: the CLI's fingerprints
//! and shingles, bit for bit.

use std::sync::Arc;

use neardup::{Scratch, SimHasher};
use numpy::ndarray::Array2;
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::options::{self, ProfileOptions};
use crate::texts::Texts;

/// A fingerprint configuration, reusable across calls.
///
/// Fingerprinter(*, profile="xxh3", shingle=4, bits=64, weighting="tf", tokens="words",
///               stopwords=False, idf=None, threads=None)
///
/// The options (keywords only) are those of `neardup dedup` (`--profile`, `--shingle-width`, `--bits`,
/// `--weighting`, `--tokens`, `--stopwords`, `--idf`); `threads` sizes a pool of its own for
/// batch calls (default: one thread per core).
#[pyclass(frozen, module = "neardup")]
pub struct Fingerprinter {
    hasher: SimHasher,
    pool: Option<Arc<rayon::ThreadPool>>,
}

#[pymethods]
impl Fingerprinter {
    #[new]
    #[pyo3(signature = (*, threads=None, **profile))]
    fn new(threads: Option<usize>, profile: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let options = ProfileOptions::from_kwargs(profile)?;
        Ok(Fingerprinter {
            hasher: options.hasher()?,
            pool: options::pool(threads)?,
        })
    }

    /// The profile as the CLI prints it and stores it, e.g. `neardup/4/xxh3/w4/b64/tf`.
    #[getter]
    fn profile(&self) -> String {
        self.hasher.profile().to_string()
    }

    /// Fingerprint width in bits (64 or 128).
    #[getter]
    fn bits(&self) -> u32 {
        self.hasher.profile().bits().count()
    }

    /// Fingerprints of `texts` (a list of str, or a pyarrow string array or chunked array):
    /// a `numpy.uint64` array of shape (n,) for 64 bits, (n, 2) (high, low) for 128.
    fn fingerprint<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let texts = Texts::from_py(texts, "texts")?;
        fingerprints(py, &self.hasher, &self.pool, &texts)
    }

    /// The distinct shingle hashes of `text`, sorted: the sets the CLI verifies with.
    fn shingle_hashes<'py>(&self, py: Python<'py>, text: &str) -> Bound<'py, PyArray1<u64>> {
        let set = py.detach(|| self.hasher.shingle_set(text));
        PyArray1::from_vec(py, set)
    }

    fn __repr__(&self) -> String {
        format!("Fingerprinter(profile={:?})", self.profile())
    }
}

/// Fingerprints `texts` in parallel with the GIL released. A text is one field of weight 1,
/// as `neardup fingerprint` reads a line: both profiles fingerprint it whole.
fn fingerprints<'py>(
    py: Python<'py>,
    hasher: &SimHasher,
    pool: &Option<Arc<rayon::ThreadPool>>,
    texts: &Texts,
) -> PyResult<Bound<'py, PyAny>> {
    let results: Vec<Result<u128, (usize, neardup::Error)>> = py.detach(|| {
        options::install(pool, || {
            thread_local! {
                static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
            }
            texts.par_map(|i, text| {
                SCRATCH.with_borrow_mut(|scratch| {
                    let fp = hasher.fingerprint_with(text, scratch);
                    scratch.release_large();
                    fp.map(|fp| fp.value()).map_err(|e| (i, e))
                })
            })
        })
    });
    let mut values = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(v) => values.push(v),
            Err((i, neardup::Error::EmptyFeatureBag { .. })) => {
                return Err(PyValueError::new_err(format!(
                    "texts[{i}]: no words to fingerprint"
                )))
            }
            Err((i, e)) => return Err(PyValueError::new_err(format!("texts[{i}]: {e}"))),
        }
    }
    if hasher.profile().bits().count() == 64 {
        let v: Vec<u64> = values.into_iter().map(|v| v as u64).collect();
        Ok(PyArray1::from_vec(py, v).into_any())
    } else {
        let n = values.len();
        let flat: Vec<u64> = values
            .into_iter()
            .flat_map(|v| [(v >> 64) as u64, v as u64])
            .collect();
        let array = Array2::from_shape_vec((n, 2), flat)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyArray2::from_owned_array(py, array).into_any())
    }
}

/// fingerprint(texts, *, profile="xxh3", shingle=4, bits=64, weighting="tf", tokens="words",
///             stopwords=False, idf=None, threads=None)
///
/// Fingerprints of `texts` (a list of str, or a pyarrow string array or chunked array), as
/// `neardup fingerprint` makes them: a `numpy.uint64` array, shape (n,) for 64 bits and
/// (n, 2) (high, low) for 128. Use a `Fingerprinter` to reuse a configuration.
#[pyfunction]
#[pyo3(signature = (texts, *, threads=None, **profile))]
pub fn fingerprint<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    threads: Option<usize>,
    profile: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let f = Fingerprinter::new(threads, profile)?;
    let texts = Texts::from_py(texts, "texts")?;
    fingerprints(py, &f.hasher, &f.pool, &texts)
}

/// shingle_hashes(text, *, profile="xxh3", shingle=4, tokens="words")
///
/// The distinct shingle hashes of `text`, sorted, as a `numpy.uint64` array: the sets
/// `neardup` verifies candidates with (exact Jaccard over them).
#[pyfunction]
#[pyo3(signature = (text, *, profile="xxh3", shingle=4, tokens="words"))]
pub fn shingle_hashes<'py>(
    py: Python<'py>,
    text: &str,
    profile: &str,
    shingle: usize,
    tokens: &str,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let hasher = ProfileOptions {
        profile: profile.into(),
        shingle,
        tokens: tokens.into(),
        ..ProfileOptions::default()
    }
    .hasher()?;
    let set = py.detach(|| hasher.shingle_set(text));
    Ok(PyArray1::from_vec(py, set))
}

/// jaccard(a, b, *, shingle=4)
///
/// The exact Jaccard similarity of two texts' shingle sets (as `neardup` verifies), or of
/// two sets of shingle hashes (from `shingle_hashes`: arrays or sequences of uint64).
#[pyfunction]
#[pyo3(signature = (a, b, *, shingle=4))]
pub fn jaccard(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    shingle: usize,
) -> PyResult<f64> {
    let hasher = ProfileOptions {
        shingle,
        ..ProfileOptions::default()
    }
    .hasher()?;
    let a = set_of(&hasher, a, "a")?;
    let b = set_of(&hasher, b, "b")?;
    Ok(py.detach(|| neardup::verify::jaccard(&a, &b)))
}

/// A text's shingle set, or a given set of hashes (sorted and deduplicated here).
fn set_of(hasher: &SimHasher, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u64>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(hasher.shingle_set(&s.to_cow()?));
    }
    let mut set: Vec<u64> = if let Ok(array) = obj.cast::<PyArray1<u64>>() {
        array.readonly().as_slice()?.to_vec()
    } else {
        obj.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "{name}: expected a str or shingle hashes (uint64), got {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?
    };
    set.sort_unstable();
    set.dedup();
    Ok(set)
}
