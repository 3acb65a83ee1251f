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
    /// no cluster by Jaccard). Default: 24.
    #[arg(long, value_name = "BITS")]
    pub semantic_radius: Option<u32>,
    /// Semantic stage: a candidate is a near-duplicate when (W_s x SimHash similarity +
    /// W_c x cosine) / (W_s + W_c) is at least this. SimHash similarity is 1 - distance /
    /// bits. Default: 0.94, the best rule's over four corpora of real paraphrases.
    #[arg(long, value_name = "SCORE")]
    pub semantic_threshold: Option<f64>,
    /// Semantic stage: W_s, the weight of SimHash similarity. Default: 0.7 (seed 002).
    #[arg(long, value_name = "W")]
    pub semantic_simhash_weight: Option<f64>,
    /// Semantic stage: W_c, the weight of the embeddings' cosine. Default: 0.3 (seed 002).
    #[arg(long, value_name = "W")]
    pub semantic_cosine_weight: Option<f64>,
}

impl SemanticArgs {
    /// The library's rule: the options given, the defaults for the others.
    pub fn rule(&self) -> SemanticRule {
        let d = SemanticRule::default();
        SemanticRule {
            radius: self.semantic_radius.unwrap_or(d.radius),
            threshold: self.semantic_threshold.unwrap_or(d.threshold),
            weights: Combined {
                simhash_weight: self
                    .semantic_simhash_weight
                    .unwrap_or(d.weights.simhash_weight),
                cosine_weight: self
                    .semantic_cosine_weight
                    .unwrap_or(d.weights.cosine_weight),
            },
        }
    }

    /// The first option given, by name: an error where the stage is off (`switch` names
    /// what turns it on).
    ///
    /// # Errors
    /// One of the options was given.
    pub fn refuse_without(&self, switch: &str) -> anyhow::Result<()> {
        let given = [
            ("--semantic-radius", self.semantic_radius.is_some()),
            ("--semantic-threshold", self.semantic_threshold.is_some()),
            (
                "--semantic-simhash-weight",
                self.semantic_simhash_weight.is_some(),
            ),
            (
                "--semantic-cosine-weight",
                self.semantic_cosine_weight.is_some(),
            ),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some((name, _)) => anyhow::bail!("{name} applies to the semantic stage: add {switch}"),
            None => Ok(()),
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
