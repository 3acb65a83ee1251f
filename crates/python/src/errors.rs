//! The exceptions: the library's errors mapped to Python's kinds, with its messages.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::PyErr;

create_exception!(
    neardup,
    NeardupError,
    PyException,
    "An error of the neardup engine (a store that failed, an index refusal)."
);
create_exception!(
    neardup,
    ProfileMismatch,
    NeardupError,
    "Fingerprints, or a store, made with another fingerprint profile."
);

/// The Python exception for a library error, with the same message the CLI prints.
pub fn to_py(e: neardup::Error) -> PyErr {
    use neardup::Error as E;
    let message = e.to_string();
    match e {
        E::ConfigMismatch { .. } | E::ProfileMismatch { .. } => ProfileMismatch::new_err(message),
        E::InvalidConfig { .. }
        | E::InvalidInput { .. }
        | E::EmptyFeatureBag { .. }
        | E::NonPositiveWeight { .. }
        | E::InvalidFingerprint { .. } => PyValueError::new_err(message),
        E::Io { .. } => PyOSError::new_err(message),
        _ => NeardupError::new_err(message),
    }
}

/// [`to_py`] for results.
pub trait IntoPy<T> {
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for neardup::Result<T> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
