//! `HammingIndex`: every stored fingerprint within k bits, exactly, with the layout the CLI
//! would choose for the collection's size and radius.

use std::sync::RwLock;

use neardup::index::{self_join, AutoIndex, HammingIndex as _, Match};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// An exact Hamming-space index over 64-bit fingerprints.
///
/// HammingIndex(k=3, expected=1_000_000)
///
/// Answers every stored fingerprint within `k` bits (no false negatives): pigeonhole bands,
/// permuted tables or multi-index hashing, chosen for `expected` fingerprints and `k` as
/// `neardup plan` would; laid out again when the collection outgrows it.
#[pyclass(frozen, module = "neardup")]
pub struct HammingIndex {
    k: u32,
    inner: RwLock<State>,
}

struct State {
    index: AutoIndex,
    /// What the layout was planned for.
    planned: u64,
    /// Every (id, fingerprint) stored, in insertion order: for laying the index out again
    /// and for `all_pairs`.
    entries: Vec<(u64, u64)>,
}

/// Three columns of an answer: the query's position (or the first id), the id, the distance.
type Triple<'py, T> = (
    Bound<'py, PyArray1<T>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
);

fn index_err(e: neardup::index::IndexError) -> PyErr {
    crate::errors::to_py(neardup::Error::Index(e))
}

/// A `numpy.uint64` array or a sequence of ints, as a vector.
fn u64s(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u64>> {
    if let Ok(array) = obj.cast::<PyArray1<u64>>() {
        return Ok(array.readonly().as_slice()?.to_vec());
    }
    obj.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "{name}: expected a numpy.uint64 array or a sequence of non-negative ints"
        ))
    })
}

#[pymethods]
impl HammingIndex {
    #[new]
    #[pyo3(signature = (k=3, expected=1_000_000))]
    fn new(k: u32, expected: u64) -> PyResult<Self> {
        if k >= 64 {
            return Err(PyValueError::new_err(format!(
                "k {k}: a radius of 64 bits or more matches everything"
            )));
        }
        let planned = expected.max(1024);
        let index = AutoIndex::for_size(planned, k).map_err(index_err)?;
        Ok(HammingIndex {
            k,
            inner: RwLock::new(State {
                index,
                planned,
                entries: Vec::new(),
            }),
        })
    }

    /// The radius the index answers exactly.
    #[getter]
    fn k(&self) -> u32 {
        self.k
    }

    /// The layout in use, as `neardup plan` describes it.
    #[getter]
    fn layout(&self) -> String {
        let s = self.inner.read().expect("not poisoned");
        format!("{:?}", s.index.plan().kind)
    }

    fn __len__(&self) -> usize {
        self.inner.read().expect("not poisoned").entries.len()
    }

    /// add(ids, fingerprints): stores each id with its fingerprint (uint64 arrays or
    /// sequences of the same length). An id already stored is a `ValueError`.
    fn add(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        fingerprints: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let ids = u64s(ids, "ids")?;
        let fps = u64s(fingerprints, "fingerprints")?;
        if ids.len() != fps.len() {
            return Err(PyValueError::new_err(format!(
                "{} ids but {} fingerprints",
                ids.len(),
                fps.len()
            )));
        }
        let k = self.k;
        py.detach(|| {
            let mut s = self.inner.write().expect("not poisoned");
            let need = (s.entries.len() + ids.len()) as u64;
            if need > s.planned.saturating_mul(2) {
                // Laid out again for the new size, as the deduper does past twice its plan.
                let mut index = AutoIndex::for_size(need, k).map_err(index_err)?;
                index.extend(s.entries.iter().copied()).map_err(index_err)?;
                s.index = index;
                s.planned = need;
            }
            for (i, (&id, &fp)) in ids.iter().zip(&fps).enumerate() {
                s.index.insert(id, fp).map_err(|e| {
                    PyValueError::new_err(format!("ids[{i}]: {}", neardup::Error::Index(e)))
                })?;
                s.entries.push((id, fp));
            }
            s.index.settle();
            Ok(())
        })
    }

    /// query(fingerprints, k=None) -> (query, id, distance)
    ///
    /// Every stored fingerprint within `k` bits (the index's own k by default, at most it)
    /// of each query: three numpy arrays of equal length, the query's position (int64), the
    /// stored id (uint64) and the distance (uint32), by query then distance then id.
    #[pyo3(signature = (fingerprints, k=None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        fingerprints: &Bound<'py, PyAny>,
        k: Option<u32>,
    ) -> PyResult<Triple<'py, i64>> {
        let fps = u64s(fingerprints, "fingerprints")?;
        let k = k.unwrap_or(self.k);
        if k > self.k {
            return Err(PyValueError::new_err(format!(
                "k {k} is beyond the index's k {}: build it with k={k}",
                self.k
            )));
        }
        let mut hits: Vec<(usize, Match)> = py.detach(|| {
            let s = self.inner.read().expect("not poisoned");
            let mut out = Vec::new();
            s.index.query_batch(&fps, k, &mut out).map_err(index_err)?;
            Ok::<_, PyErr>(out)
        })?;
        hits.sort_unstable();
        let (q, rest): (Vec<i64>, Vec<(u64, u32)>) = hits
            .into_iter()
            .map(|(q, m)| (q as i64, (m.id, m.distance)))
            .unzip();
        let (ids, dist): (Vec<u64>, Vec<u32>) = rest.into_iter().unzip();
        Ok((
            PyArray1::from_vec(py, q),
            PyArray1::from_vec(py, ids),
            PyArray1::from_vec(py, dist),
        ))
    }

    /// all_pairs(k=None) -> (a, b, distance)
    ///
    /// Every pair of stored fingerprints within `k` bits (the all-pairs join of `neardup`'s
    /// index bench): ids `a` and `b` (uint64, `a` stored first) and the distance (uint32).
    #[pyo3(signature = (k=None))]
    fn all_pairs<'py>(&self, py: Python<'py>, k: Option<u32>) -> PyResult<Triple<'py, u64>> {
        let k = k.unwrap_or(self.k);
        let (a, b, d) = py.detach(|| {
            let s = self.inner.read().expect("not poisoned");
            let fps: Vec<u64> = s.entries.iter().map(|&(_, fp)| fp).collect();
            let mut pairs = self_join(&fps, k).map_err(index_err)?;
            pairs.sort_unstable_by_key(|p| (p.a, p.b));
            let mut a = Vec::with_capacity(pairs.len());
            let mut b = Vec::with_capacity(pairs.len());
            let mut d = Vec::with_capacity(pairs.len());
            for p in pairs {
                a.push(s.entries[p.a as usize].0);
                b.push(s.entries[p.b as usize].0);
                d.push(p.distance);
            }
            Ok::<_, PyErr>((a, b, d))
        })?;
        Ok((
            PyArray1::from_vec(py, a),
            PyArray1::from_vec(py, b),
            PyArray1::from_vec(py, d),
        ))
    }

    fn __repr__(&self) -> String {
        format!("HammingIndex(k={}, len={})", self.k, self.__len__())
    }
}
