//! Arrow batch kernels for scale-out. The Spark job (`neardup.spark`) runs its stages in the
//! executors through `mapInArrow` and `applyInArrow`, one Arrow batch at a time, so no row
//! crosses into Python: analysis (the CLI's normalising, shingling, fingerprint, content hash
//! and verification set), the pigeonhole blocks a fingerprint is shuffled under, the pairs
//! within `k` bits in one block's group, and the exact Jaccard of candidate pairs. Each is the
//! library's own code, so a distributed run's fingerprints, sets and scores are the CLI's, bit
//! for bit.

mod analyze;
mod annotate;
mod blocks;
mod boilerplate;
mod cluster;

pub use analyze::{analyze_batch, doc_id};
pub use annotate::{annotate_json, jaccard_batch};
pub use blocks::{block_pairs, block_participants, pigeonhole_blocks};
pub use boilerplate::{with_hosts, Learner as BoilerplateLearner};
pub use cluster::components;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_pyarrow::{FromPyArrow, Table};
use arrow_schema::{Field, Schema};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A verification set's ids from its little-endian bytes.
pub(super) fn ids(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub(super) fn optional_binary(
    batch: &RecordBatch,
    name: &str,
) -> PyResult<Option<arrow_array::BinaryArray>> {
    batch
        .column_by_name(name)
        .map(|c| {
            c.as_binary_opt::<i32>()
                .cloned()
                .ok_or_else(|| PyTypeError::new_err(format!("column {name:?} is not binary")))
        })
        .transpose()
}

pub(super) fn optional_bool(
    batch: &RecordBatch,
    name: &str,
) -> PyResult<Option<arrow_array::BooleanArray>> {
    batch
        .column_by_name(name)
        .map(|c| {
            c.as_boolean_opt()
                .cloned()
                .ok_or_else(|| PyTypeError::new_err(format!("column {name:?} is not bool")))
        })
        .transpose()
}

pub(super) fn int32_column(batch: &RecordBatch, name: &str) -> PyResult<arrow_array::Int32Array> {
    optional_int32(batch, name)?.ok_or_else(|| PyValueError::new_err(format!("no column {name:?}")))
}

pub(super) fn optional_int32(
    batch: &RecordBatch,
    name: &str,
) -> PyResult<Option<arrow_array::Int32Array>> {
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

pub(super) fn int64_column(batch: &RecordBatch, name: &str) -> PyResult<Int64Array> {
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
pub(super) fn fingerprints(batch: &RecordBatch) -> PyResult<Vec<u128>> {
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
pub(super) fn batches_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    if obj.hasattr("combine_chunks")? {
        return Ok(Table::from_pyarrow_bound(obj)?.into_inner().0);
    }
    Ok(vec![RecordBatch::from_pyarrow_bound(obj)?])
}

pub(super) fn batch_of(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, String> {
    let schema = Schema::new(
        columns
            .iter()
            .map(|(name, c)| Field::new(*name, c.data_type().clone(), true))
            .collect::<Vec<_>>(),
    );
    let arrays = columns.into_iter().map(|(_, c)| c).collect();
    RecordBatch::try_new(Arc::new(schema), arrays).map_err(|e| e.to_string())
}

pub(super) fn arrow_err(e: String) -> PyErr {
    PyValueError::new_err(e)
}
