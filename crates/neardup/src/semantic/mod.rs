//! Semantic similarity (seed 002, 5.2): the score that combines sentence embeddings'
//! cosine with SimHash similarity, the rule dedup's semantic stage applies with it, and
//! the [`Embed`] interface the stage gets embeddings through.
//!
//! The model itself ([`Embedder`], candle) is behind the cargo feature `semantic`, so the
//! default build stays lean; the rule, the scores and the stored embeddings are not, so a
//! store deduplicated with the stage can be read, re-evaluated and erased from by any build.

#[cfg(feature = "semantic")]
mod model;

#[cfg(feature = "semantic")]
pub use model::{Embedder, MAX_WINDOWS};

use crate::{Error, Result};

/// Seed 002's weights: 0.7 SimHash similarity + 0.3 cosine.
pub const DEFAULT_SIMHASH_WEIGHT: f64 = 0.7;
/// See [`DEFAULT_SIMHASH_WEIGHT`].
pub const DEFAULT_COSINE_WEIGHT: f64 = 0.3;
/// Default radius of the semantic stage's candidates, bits of a 64-bit fingerprint: the
/// radius of the best rule on the paraphrase bench (`scripts/bench_semantic.sh`, four
/// corpora of real documentation in two releases, judged by the worst corpus's F1).
pub const DEFAULT_SEMANTIC_RADIUS: u32 = 24;
/// Default threshold of the combined score, chosen with [`DEFAULT_SEMANTIC_RADIUS`]: the
/// best rule's. With seed 002's weights a pair reaches it only within about 5 bits and a
/// cosine near 1: on the bench, no looser rule found reworded pairs without finding as
/// many pairs of different items documented alike.
pub const DEFAULT_SEMANTIC_THRESHOLD: f64 = 0.94;

/// Where embeddings come from: [`Embedder`] (feature `semantic`) runs a sentence-embedding
/// model; anything else that maps texts to vectors of one length may stand in for it.
pub trait Embed: Send + Sync + std::fmt::Debug {
    /// The embedding of each text, L2-normalised (all zeros for a text without tokens).
    ///
    /// # Errors
    /// [`Error::Model`] when the model fails.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// The embeddings' length.
    fn dimensions(&self) -> usize;
    /// What the model is (its directory), for reports.
    fn name(&self) -> String;
}

/// Cosine similarity of two normalised embeddings of one length (their dot product), -1..=1.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum::<f64>()
        .clamp(-1.0, 1.0)
}

/// Seed 002's combined score: `simhash_weight` times SimHash similarity (1 - distance /
/// bits) plus `cosine_weight` times the cosine, divided by the weights' sum (so it stays
/// within -1..=1 whatever the weights).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Combined {
    /// Weight of SimHash similarity.
    pub simhash_weight: f64,
    /// Weight of the embeddings' cosine.
    pub cosine_weight: f64,
}

impl Default for Combined {
    fn default() -> Combined {
        Combined {
            simhash_weight: DEFAULT_SIMHASH_WEIGHT,
            cosine_weight: DEFAULT_COSINE_WEIGHT,
        }
    }
}

impl Combined {
    /// The score of a pair `distance` bits apart (of `bits`) whose embeddings' cosine is
    /// `cosine`.
    pub fn score(&self, distance: u32, bits: u32, cosine: f64) -> f64 {
        let simhash = 1.0 - f64::from(distance) / f64::from(bits.max(1));
        (self.simhash_weight * simhash + self.cosine_weight * cosine)
            / (self.simhash_weight + self.cosine_weight).max(f64::MIN_POSITIVE)
    }
}

/// The semantic stage's rule: a record that verifies against no candidate by Jaccard joins
/// the cluster of its best candidate within `radius` bits whose combined score reaches
/// `threshold` (merge rule `simhash+semantic`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SemanticRule {
    /// Candidates within this many bits are scored.
    pub radius: u32,
    /// A pair is a near-duplicate when its combined score is at least this.
    pub threshold: f64,
    /// The combined score's weights.
    pub weights: Combined,
}

impl Default for SemanticRule {
    fn default() -> SemanticRule {
        SemanticRule {
            radius: DEFAULT_SEMANTIC_RADIUS,
            threshold: DEFAULT_SEMANTIC_THRESHOLD,
            weights: Combined::default(),
        }
    }
}

impl SemanticRule {
    /// Whether a pair `distance` bits apart (of `bits`) with this `cosine` passes (never
    /// without a cosine).
    pub fn accepts(&self, distance: u32, bits: u32, cosine: Option<f64>) -> bool {
        cosine.is_some_and(|c| {
            distance <= self.radius && self.weights.score(distance, bits, c) >= self.threshold
        })
    }

    /// Checks the rule.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a radius over 32 bits, a threshold outside -1..=1, or
    /// weights that are negative or both zero.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &'static str, value: String, reason: &str| {
            Err(Error::InvalidConfig {
                field,
                value,
                reason: reason.into(),
            })
        };
        if self.radius > 32 {
            return bad(
                "semantic_radius",
                self.radius.to_string(),
                "at most 32 bits, as max_distance",
            );
        }
        if !(-1.0..=1.0).contains(&self.threshold) {
            return bad(
                "semantic_threshold",
                self.threshold.to_string(),
                "the combined score lies between -1 and 1",
            );
        }
        let Combined {
            simhash_weight: s,
            cosine_weight: c,
        } = self.weights;
        if !(s >= 0.0 && c >= 0.0 && s + c > 0.0 && (s + c).is_finite()) {
            return bad(
                "semantic_weights",
                format!("{s}, {c}"),
                "weights are finite, not negative, and not both zero",
            );
        }
        Ok(())
    }
}

/// An embedding as the store keeps it: little-endian `f32`s.
pub fn embedding_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Reads [`embedding_blob`]'s bytes (a trailing partial value is ignored).
pub fn blob_embedding(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_combined_score_weighs_both_and_stays_in_range() {
        let c = Combined::default();
        assert!((c.score(0, 64, 1.0) - 1.0).abs() < 1e-12);
        // Seed 002's example weights: 0.7 x (1 - 16/64) + 0.3 x 0.9.
        assert!((c.score(16, 64, 0.9) - (0.7 * 0.75 + 0.3 * 0.9)).abs() < 1e-12);
        let cosine_only = Combined {
            simhash_weight: 0.0,
            cosine_weight: 2.0,
        };
        assert!((cosine_only.score(40, 64, 0.5) - 0.5).abs() < 1e-12);
        assert_eq!(cosine(&[0.6, 0.8], &[0.6, 0.8]), 1.0);
    }

    #[test]
    fn the_rule_needs_a_cosine_the_radius_and_the_threshold() {
        let rule = SemanticRule::default();
        // 0.7 x (1 - 4/64) + 0.3 x 0.99 = 0.953.
        assert!(rule.accepts(4, 64, Some(0.99)));
        assert!(!rule.accepts(4, 64, None));
        assert!(!rule.accepts(4, 64, Some(0.8)));
        let wide = SemanticRule {
            threshold: 0.5,
            ..rule
        };
        assert!(wide.accepts(24, 64, Some(0.9)));
        assert!(!wide.accepts(25, 64, Some(1.0)));
        assert!(rule.validate().is_ok());
        for bad in [
            SemanticRule { radius: 33, ..rule },
            SemanticRule {
                threshold: 1.5,
                ..rule
            },
            SemanticRule {
                weights: Combined {
                    simhash_weight: 0.0,
                    cosine_weight: 0.0,
                },
                ..rule
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn embeddings_round_trip_through_their_blob() {
        let v = [0.25f32, -1.5, 3.0e-8];
        assert_eq!(blob_embedding(&embedding_blob(&v)), v);
    }
}
