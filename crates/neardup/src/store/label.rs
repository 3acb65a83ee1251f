//! People's judgements of pairs: what a reviewer said about a merge or a rejected
//! candidate, kept with the store so thresholds can be re-decided from them (seed 000's
//! boundary sample, checked by people).

use crate::{Error, Result};

/// A reviewer's judgement of one pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The two records are near-duplicates.
    Duplicate,
    /// They are not.
    NotDuplicate,
    /// The reviewer could not decide; left out of precision estimates and tuning.
    Unsure,
}

impl Verdict {
    /// The stable name: `duplicate`, `not_duplicate` or `unsure`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Duplicate => "duplicate",
            Verdict::NotDuplicate => "not_duplicate",
            Verdict::Unsure => "unsure",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(s: &str) -> Option<Verdict> {
        Some(match s {
            "duplicate" => Verdict::Duplicate,
            "not_duplicate" => Verdict::NotDuplicate,
            "unsure" => Verdict::Unsure,
            _ => return None,
        })
    }

    /// `Some(true)` for a duplicate, `Some(false)` for not, `None` when unsure.
    pub fn is_duplicate(self) -> Option<bool> {
        match self {
            Verdict::Duplicate => Some(true),
            Verdict::NotDuplicate => Some(false),
            Verdict::Unsure => None,
        }
    }
}

/// One labelled pair. A store keeps at most one label per ordered pair `(a, b)`: labelling
/// it again replaces the label.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Label {
    /// The first record's id (the kept record of a merge, the arriving record of a
    /// rejected candidate).
    pub a: String,
    /// The second record's id.
    pub b: String,
    /// The judgement.
    pub verdict: Verdict,
    /// Where the pair came from: `boundary` (merges near the threshold), `rejected`
    /// (candidates just under it), `random` (merges sampled uniformly), or another name
    /// the caller chose.
    pub source: String,
    /// Hamming distance of the pair when it was labelled.
    pub distance: u32,
    /// Jaccard similarity of the pair when it was labelled.
    pub jaccard: f64,
    /// Who labelled it (the name of the API token used).
    pub by: String,
    /// When, RFC 3339.
    pub at: String,
}

impl Label {
    /// Checks what a backend cannot store: empty ids or names, a Jaccard outside 0..=1.
    ///
    /// # Errors
    /// [`Error::InvalidLabel`] naming the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(Error::InvalidLabel { reason });
        if self.a.is_empty() || self.b.is_empty() {
            return bad("a label needs both record ids".into());
        }
        if self.a == self.b {
            return bad(format!(
                "a label pairs two records, not {:?} with itself",
                self.a
            ));
        }
        if self.source.is_empty() || self.by.is_empty() {
            return bad("a label needs a source and a labeller".into());
        }
        if !(0.0..=1.0).contains(&self.jaccard) {
            return bad(format!("jaccard {} is not between 0 and 1", self.jaccard));
        }
        Ok(())
    }
}
