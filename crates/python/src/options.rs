//! Keyword options shared by the classes, checked and turned into the library's
//! configuration with the CLI's names and defaults.

use std::path::PathBuf;
use std::sync::Arc;

use neardup::features::Synonyms;
use neardup::fingerprint::SimHasherBuilder;
use neardup::text::TokenRule;
use neardup::{FingerprintBits, HashAlgo, IdfTable, SimHasher, Weighting};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::IntoPy;

/// The fingerprint profile's options, as `neardup dedup` takes them (`--profile`,
/// `--shingle-width`, `--bits`, `--weighting`, `--idf`, `--tokens`, `--stopwords`,
/// `--synonyms`).
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    pub profile: String,
    pub shingle: usize,
    pub bits: u32,
    pub weighting: String,
    pub idf: Option<PathBuf>,
    pub tokens: String,
    pub stopwords: bool,
    pub synonyms: Option<PathBuf>,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            profile: "xxh3".into(),
            shingle: 4,
            bits: 64,
            weighting: "tf".into(),
            idf: None,
            tokens: "words".into(),
            stopwords: false,
            synonyms: None,
        }
    }
}

impl ProfileOptions {
    /// The options from a call's profile keywords (`**profile`: `profile="xxh3"`,
    /// `shingle=4`, `bits=64`, `weighting="tf"`, `tokens="words"`, `stopwords=False`,
    /// `idf=None`, `synonyms=None`), the CLI's defaults for those not given. The one place
    /// the profile's keywords are named, for every class and function that takes them: an
    /// unknown keyword is a `TypeError`, a value of the wrong type one naming its keyword.
    pub fn from_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<ProfileOptions> {
        let mut o = ProfileOptions::default();
        for (key, value) in kwargs.into_iter().flat_map(|k| k.iter()) {
            let key: String = key.extract()?;
            let typed = |e: PyErr| PyTypeError::new_err(format!("{key}: {e}"));
            match key.as_str() {
                "profile" => o.profile = value.extract().map_err(typed)?,
                "shingle" => o.shingle = value.extract().map_err(typed)?,
                "bits" => o.bits = value.extract().map_err(typed)?,
                "weighting" => o.weighting = value.extract().map_err(typed)?,
                "tokens" => o.tokens = value.extract().map_err(typed)?,
                "stopwords" => o.stopwords = value.extract().map_err(typed)?,
                "idf" => o.idf = value.extract().map_err(typed)?,
                "synonyms" => o.synonyms = value.extract().map_err(typed)?,
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "got an unexpected keyword argument '{key}'"
                    )))
                }
            }
        }
        Ok(o)
    }

    /// The hasher builder these options describe, or a `ValueError` naming the option.
    pub fn builder(&self) -> PyResult<SimHasherBuilder> {
        let hash = match self.profile.as_str() {
            "xxh3" => HashAlgo::Xxh3,
            "blake2b" => HashAlgo::Blake2b,
            other => {
                return Err(PyValueError::new_err(format!(
                    "profile {other:?}: expected \"xxh3\" (the default) or \"blake2b\" (seed 000's Python simhash)"
                )))
            }
        };
        let bits = match self.bits {
            64 => FingerprintBits::Bits64,
            128 => FingerprintBits::Bits128,
            other => {
                return Err(PyValueError::new_err(format!(
                    "bits {other}: fingerprints have 64 or 128 bits"
                )))
            }
        };
        let weighting = match (self.weighting.as_str(), &self.idf) {
            ("tf", None) => Weighting::Tf,
            ("presence", None) => Weighting::Presence,
            ("idf", Some(path)) => Weighting::Idf(Arc::new(IdfTable::load(path).py_err()?)),
            ("idf", None) => {
                return Err(PyValueError::new_err(
                    "weighting \"idf\" needs idf=PATH (a table made by `neardup idf`)",
                ))
            }
            ("tf" | "presence", Some(_)) => {
                return Err(PyValueError::new_err(
                    "idf=PATH is only used with weighting=\"idf\"",
                ))
            }
            (other, _) => {
                return Err(PyValueError::new_err(format!(
                    "weighting {other:?}: expected \"tf\", \"presence\" or \"idf\""
                )))
            }
        };
        let tokens = match (self.tokens.as_str(), hash) {
            ("words", _) => None,
            (_, HashAlgo::Blake2b) => return Err(PyValueError::new_err(
                "tokens applies to the xxh3 profile; blake2b tokenises as seed 000's Python does",
            )),
            ("jieba", _) => Some(TokenRule::UnicodeJieba),
            ("chars", _) => Some(TokenRule::Characters),
            (other, _) => match TokenRule::parse(other) {
                Some(code @ (TokenRule::Code(_) | TokenRule::CodeAuto)) => Some(code),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "tokens {other:?}: expected \"words\", \"jieba\", \"chars\" or \"code-LANG\" (source code: code-rust, code-python, code-javascript, code-typescript, code-tsx, code-c, code-cpp, code-java, code-go, or code-auto: each record's language by its id's file extension)"
                    )))
                }
            },
        };
        let mut builder = SimHasher::builder()
            .hash(hash)
            .shingle_width(self.shingle)
            .bits(bits)
            .weighting(weighting)
            .stopwords(self.stopwords);
        if let Some(rule) = tokens {
            builder = builder.tokens(rule);
        }
        if let Some(path) = &self.synonyms {
            builder = builder.synonyms(Arc::new(Synonyms::load(path).py_err()?));
        }
        Ok(builder)
    }

    pub fn hasher(&self) -> PyResult<SimHasher> {
        self.builder()?.build().py_err()
    }
}

/// A pool of `threads` threads for a batch call's parallel work, or none (rayon's global
/// pool, one thread per core). Zero threads is refused.
pub fn pool(threads: Option<usize>) -> PyResult<Option<Arc<rayon::ThreadPool>>> {
    match threads {
        None => Ok(None),
        Some(0) => Err(PyValueError::new_err("threads must be at least 1")),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("neardup-py-{i}"))
            .build()
            .map(|p| Some(Arc::new(p)))
            .map_err(|e| PyValueError::new_err(format!("starting {n} threads: {e}"))),
    }
}

/// Runs `f` on `pool`, or on the global pool.
pub fn install<T: Send>(pool: &Option<Arc<rayon::ThreadPool>>, f: impl FnOnce() -> T + Send) -> T {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}
