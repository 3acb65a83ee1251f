//! Pair scoring: what verification sees of one record ([`RecordFacts`]) and the two scores
//! of a pair, and a labelled pair with the weight it carries.

use serde::Serialize;

use crate::fingerprint::{Field, Scratch, SimHasher};
use crate::text::Boilerplate;
use crate::verify::{id_jaccard, shingle_ids, Scores};
use crate::{Error, Result};

/// What verification sees of one record: fingerprint, exact-tier hash, verification set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFacts {
    /// The fingerprint's bits (upper 64 zero for 64-bit profiles).
    pub fingerprint: u128,
    /// Hash of the normalised token stream.
    pub content_hash: u128,
    /// Sorted distinct 32-bit shingle ids after boilerplate removal, as the store keeps them.
    pub shingle_ids: Vec<u32>,
    /// Words in the text.
    pub words: usize,
    /// Shingle occurrences removed as boilerplate.
    pub boilerplate_removed: usize,
}

impl RecordFacts {
    /// Analyses a text the way the pipeline does: one field, `boilerplate` removed first
    /// (and, as the pipeline does, the whole text kept when nothing but boilerplate is left).
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when the text has no words.
    ///
    /// ```
    /// use neardup::tune::RecordFacts;
    /// let hasher = neardup::SimHasher::builder().build()?;
    /// let facts = RecordFacts::of_text(&hasher, "the quick brown fox jumps over the lazy dog", None)?;
    /// assert_eq!(facts.words, 9);
    /// # Ok::<(), neardup::Error>(())
    /// ```
    pub fn of_text(
        hasher: &SimHasher,
        text: &str,
        boilerplate: Option<&Boilerplate>,
    ) -> Result<RecordFacts> {
        Self::of_fields(hasher, &[Field::new(text)], boilerplate)
    }

    /// Like [`of_text`](Self::of_text) for a record of several weighted fields.
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when no field has a word; [`Error::InvalidConfig`] for a
    /// field weight of 0.
    pub fn of_fields(
        hasher: &SimHasher,
        fields: &[Field<'_>],
        boilerplate: Option<&Boilerplate>,
    ) -> Result<RecordFacts> {
        let mut scratch = Scratch::default();
        let analysis = match hasher.analyze(fields, boilerplate, &mut scratch) {
            Err(Error::EmptyFeatureBag { .. }) if boilerplate.is_some() => {
                hasher.analyze(fields, None, &mut scratch)?
            }
            other => other?,
        };
        Ok(RecordFacts {
            fingerprint: analysis.fingerprint.value(),
            content_hash: analysis.content_hash.0,
            shingle_ids: shingle_ids(&analysis.shingles),
            words: analysis.token_count,
            boilerplate_removed: analysis.boilerplate_removed,
        })
    }

    /// Both scores against `other`: Hamming distance over the full width, Jaccard of the
    /// verification sets.
    pub fn scores(&self, other: &RecordFacts) -> Scores {
        Scores::new(
            (self.fingerprint ^ other.fingerprint).count_ones(),
            id_jaccard(&self.shingle_ids, &other.shingle_ids),
        )
    }
}

/// One labelled pair: its scores, the label and how many corpus pairs it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LabelledPair {
    /// Hamming distance and Jaccard similarity.
    pub scores: Scores,
    /// Whether a person (or a labelling rule) called it a duplicate.
    pub duplicate: bool,
    /// How many pairs it stands for (1 for a hand-made set), > 0.
    pub weight: f64,
}
