//! Connected components of the verified pairs (the driver's union-find).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, Int64Array};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::{arrow_err, batch_of};

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
