//! neardup for Python: the same fingerprints, index and decisions as the `neardup` command,
//! from a notebook, a pandas or Arrow pipeline, or a Spark executor.
//!
//! Every call that does Rust work releases the GIL; batch calls run on all cores (or on a
//! pool of `threads` of their own). Errors are Python exceptions carrying the library's
//! messages: `ValueError` for bad input, `ProfileMismatch` for a store or fingerprint of
//! another profile, `NeardupError` for the rest; a Rust panic never crosses the boundary
//! (PyO3 turns it into `pyo3_runtime.PanicException`).

use pyo3::prelude::*;

mod batch;
mod dedup;
mod errors;
mod fingerprint;
mod index;
mod options;
mod records;
mod rows;
mod texts;

#[pymodule]
fn _neardup(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("NeardupError", py.get_type::<errors::NeardupError>())?;
    m.add("ProfileMismatch", py.get_type::<errors::ProfileMismatch>())?;
    m.add_class::<fingerprint::Fingerprinter>()?;
    m.add_function(wrap_pyfunction!(fingerprint::fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprint::shingle_hashes, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprint::jaccard, m)?)?;
    m.add_class::<index::HammingIndex>()?;
    m.add_class::<dedup::Deduper>()?;
    m.add_function(wrap_pyfunction!(dedup::default_min_jaccard, m)?)?;
    m.add_function(wrap_pyfunction!(batch::analyze_batch, m)?)?;
    m.add_function(wrap_pyfunction!(batch::doc_id, m)?)?;
    m.add_function(wrap_pyfunction!(batch::with_hosts, m)?)?;
    m.add_class::<batch::BoilerplateLearner>()?;
    m.add_function(wrap_pyfunction!(batch::annotate_json, m)?)?;
    m.add_function(wrap_pyfunction!(batch::pigeonhole_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(batch::block_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(batch::block_participants, m)?)?;
    m.add_function(wrap_pyfunction!(batch::components, m)?)?;
    m.add_function(wrap_pyfunction!(batch::jaccard_batch, m)?)?;
    Ok(())
}
