//! The semantic stage's options: `SemanticArgs` (its rule, for `dedup` and `reevaluate`)
//! and loading its model.

use std::path::Path;
use std::sync::Arc;

use clap::Args;
use neardup::semantic::{Combined, Embed, SemanticRule};

/// The semantic rule (seed 002, 5.2): SimHash similarity and the embeddings' cosine,
/// combined, for candidates within a radius.
#[derive(Debug, Args, Clone)]
pub struct SemanticArgs {
    /// Semantic stage: candidates within this many bits are scored (a record that joined
    /// no cluster by Jaccard).
    #[arg(long, value_name = "BITS", default_value_t = neardup::semantic::DEFAULT_SEMANTIC_RADIUS)]
    pub semantic_radius: u32,
    /// Semantic stage: a candidate is a near-duplicate when (W_s x SimHash similarity +
    /// W_c x cosine) / (W_s + W_c) is at least this. SimHash similarity is 1 - distance /
    /// bits.
    #[arg(long, value_name = "SCORE", default_value_t = neardup::semantic::DEFAULT_SEMANTIC_THRESHOLD)]
    pub semantic_threshold: f64,
    /// Semantic stage: W_s, the weight of SimHash similarity (seed 002: 0.7).
    #[arg(long, value_name = "W", default_value_t = neardup::semantic::DEFAULT_SIMHASH_WEIGHT)]
    pub semantic_simhash_weight: f64,
    /// Semantic stage: W_c, the weight of the embeddings' cosine (seed 002: 0.3).
    #[arg(long, value_name = "W", default_value_t = neardup::semantic::DEFAULT_COSINE_WEIGHT)]
    pub semantic_cosine_weight: f64,
}

impl SemanticArgs {
    /// The library's rule.
    pub fn rule(&self) -> SemanticRule {
        SemanticRule {
            radius: self.semantic_radius,
            threshold: self.semantic_threshold,
            weights: Combined {
                simhash_weight: self.semantic_simhash_weight,
                cosine_weight: self.semantic_cosine_weight,
            },
        }
    }
}

/// Loads the sentence-embedding model in `dir`.
///
/// # Errors
/// The model cannot be loaded, or this build has no `semantic` feature.
#[cfg(feature = "semantic")]
pub fn load_model(dir: &Path) -> anyhow::Result<Arc<dyn Embed>> {
    Ok(Arc::new(neardup::semantic::Embedder::load(dir)?))
}

/// Loads the sentence-embedding model in `dir`.
///
/// # Errors
/// Always: this build has no `semantic` feature.
#[cfg(not(feature = "semantic"))]
pub fn load_model(dir: &Path) -> anyhow::Result<Arc<dyn Embed>> {
    anyhow::bail!(
        "--model {}: this neardup was built without the semantic stage; build it with `cargo build --release -p neardup-cli --features semantic`",
        dir.display()
    )
}
