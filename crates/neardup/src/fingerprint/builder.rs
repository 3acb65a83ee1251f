//! [`SimHasherBuilder`]: validates a fingerprint configuration once and derives its [`Profile`].

use std::sync::Arc;

use super::{FingerprintBits, HashAlgo, Profile, SimHasher, WeightingTag, FORMAT_VERSION};
use crate::features::{Synonyms, Weighting};
use crate::text::tokenize::TokenRule;
use crate::{Error, Result};

/// Configures a [`SimHasher`].
#[derive(Debug, Clone)]
pub struct SimHasherBuilder {
    hash: HashAlgo,
    shingle_width: usize,
    bits: FingerprintBits,
    weighting: Weighting,
    tokens: Option<TokenRule>,
    stopwords: bool,
    detect_language: bool,
    synonyms: Option<Arc<Synonyms>>,
}

impl Default for SimHasherBuilder {
    fn default() -> Self {
        SimHasherBuilder {
            hash: HashAlgo::Xxh3,
            shingle_width: 4,
            bits: FingerprintBits::Bits64,
            weighting: Weighting::Tf,
            tokens: None,
            stopwords: false,
            detect_language: false,
            synonyms: None,
        }
    }
}

impl SimHasherBuilder {
    setters! {
        /// The feature hash (default xxh3).
        hash(hash: HashAlgo);

        /// Tokens per shingle (default 4; 1 is a bag of words).
        shingle_width(shingle_width: usize);

        /// Fingerprint width (default 64 bits).
        bits(bits: FingerprintBits);

        /// Shingle weighting (default term frequency).
        weighting(weighting: Weighting);

        /// The tokenisation rule (default: [`TokenRule::Unicode`]; the `blake2b` profile always
        /// uses [`TokenRule::PythonWord`]). [`TokenRule::UnicodeJieba`] segments Chinese into
        /// words, [`TokenRule::Characters`] makes character n-grams (short text).
        tokens(tokens: TokenRule) => Some;

        /// Leave shingles made only of the record's language's stopwords out of the vote
        /// (weight 0); the language is detected per record. Default off.
        stopwords(stopwords: bool);

        /// Detect each record's language and script in [`SimHasher::analyze`] (it does not change
        /// fingerprints). Default off; implied by [`stopwords`](Self::stopwords).
        detect_language(detect_language: bool);

        /// Words that count as one ([`Synonyms`]): each group's words are replaced by its
        /// first before shingling, in the fingerprint and the verification set. Default none;
        /// the profile records the groups' digest.
        synonyms(synonyms: Arc<Synonyms>) => Some;
    }

    /// Validates the configuration.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a shingle width outside 1..=16, or 128 bits with the
    /// `blake2b` profile (seed 000's hash has 64 bits).
    pub fn build(self) -> Result<SimHasher> {
        if !(1..=16).contains(&self.shingle_width) {
            return Err(Error::InvalidConfig {
                field: "shingle_width",
                value: self.shingle_width.to_string(),
                reason: "must be between 1 and 16 tokens".into(),
            });
        }
        if self.hash == HashAlgo::Blake2b && self.bits == FingerprintBits::Bits128 {
            return Err(Error::InvalidConfig {
                field: "bits",
                value: "128".into(),
                reason: "the blake2b profile reproduces seed 000's 64-bit fingerprint; use the xxh3 hash for 128 bits".into(),
            });
        }
        let tokens = match (self.hash, self.tokens) {
            (HashAlgo::Blake2b, None | Some(TokenRule::PythonWord)) => TokenRule::PythonWord,
            (HashAlgo::Blake2b, Some(other)) => return Err(Error::InvalidConfig {
                field: "tokens",
                value: other.name().into(),
                reason:
                    "the blake2b profile reproduces seed 000 and tokenises as Python's \\w+ does"
                        .into(),
            }),
            (HashAlgo::Xxh3, None) => TokenRule::Unicode,
            (HashAlgo::Xxh3, Some(TokenRule::PythonWord)) => {
                return Err(Error::InvalidConfig {
                    field: "tokens",
                    value: "python-words".into(),
                    reason: "Python's \\w+ tokens belong to the blake2b profile".into(),
                })
            }
            (HashAlgo::Xxh3, Some(rule)) => rule,
        };
        if self.stopwords && self.hash == HashAlgo::Blake2b {
            return Err(Error::InvalidConfig {
                field: "stopwords",
                value: "true".into(),
                reason: "the blake2b profile reproduces seed 000, which weighs every shingle"
                    .into(),
            });
        }
        if self.hash == HashAlgo::Blake2b && self.synonyms.is_some() {
            return Err(Error::InvalidConfig {
                field: "synonyms",
                value: "blake2b".into(),
                reason: "the blake2b profile reproduces seed 000, which has no synonyms".into(),
            });
        }
        let weighting = match &self.weighting {
            Weighting::Tf => WeightingTag::Tf,
            Weighting::Presence => WeightingTag::Presence,
            Weighting::Idf(t) => WeightingTag::Idf(t.digest()),
        };
        let profile = Profile {
            hash: self.hash,
            shingle_width: self.shingle_width as u8,
            bits: self.bits,
            weighting,
            version: FORMAT_VERSION,
            tokens,
            stopwords: self.stopwords,
            synonyms: self.synonyms.as_ref().map(|s| s.digest()),
        };
        Ok(SimHasher {
            hash: self.hash,
            shingle_width: self.shingle_width,
            bits: self.bits,
            weighting: self.weighting,
            tokens,
            stopwords: self.stopwords,
            detect_language: self.detect_language || self.stopwords,
            synonyms: self.synonyms,
            profile,
        })
    }
}
