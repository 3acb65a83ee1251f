//! Analysis in two halves: what does not depend on boilerplate, made while boilerplate is
//! being learned, and the rest once it is known.
//!
//! Boilerplate is learned in a first pass over the input that shingles every page it
//! samples (a third of the 1 GB bench corpus), and the main pass analysed those pages again
//! from the start. [`SimHasher::pre_analyze`] keeps what the first pass makes anyway (each
//! distinct shingle with its number of occurrences, the vote over all of them) with what
//! does not change with boilerplate (content hash, token count, language), and
//! [`SimHasher::finish_analysis`] takes the learned boilerplate's shingles out of the vote
//! (votes add up, so the vote of what is left is the full vote less theirs) and out of the
//! set: the same analysis as [`SimHasher::analyze_ids`], which the property test checks.

use std::sync::Arc;

use super::vote::{count_ones, BitCounts};
use super::{Analysis, FingerprintBits, HashAlgo, Scratch, SimHasher};
use crate::exact::{ContentHash, FIELD_SEPARATOR};
use crate::features::Weighting;
use crate::fingerprint::Field;
use crate::text::sort::sort_distinct_counted;
use crate::text::Boilerplate;
use crate::{Error, Result};

/// The boilerplate-free half of a record's analysis: see [`SimHasher::pre_analyze`].
#[derive(Debug, Clone)]
pub struct PreAnalysis {
    /// The distinct shingle hashes, ascending (so their 32-bit ids, the high halves, come
    /// out in order).
    shingles: Arc<[u64]>,
    /// `(i, extra)`: `shingles[i]` occurs `1 + extra` times; by `i`, only for repeats.
    repeats: Vec<(u32, u32)>,
    /// The vote of every occurrence.
    counts: BitCounts,
    content_hash: ContentHash,
    token_count: usize,
    language: Option<crate::text::Language>,
    code_fallback: bool,
}

impl PreAnalysis {
    /// The record's distinct shingle hashes (boilerplate included), ascending: what
    /// boilerplate learning counts.
    pub fn shingles(&self) -> &Arc<[u64]> {
        &self.shingles
    }

    /// Its number of tokens.
    pub fn token_count(&self) -> usize {
        self.token_count
    }

    /// About how many bytes of memory it holds.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.shingles.len() * 8 + self.repeats.len() * 8
    }
}

impl SimHasher {
    /// Whether [`pre_analyze`](Self::pre_analyze) serves this profile and these fields: the
    /// default kind of vote (64-bit, xxh3, every occurrence voting once, no stopwords left
    /// out) over fields of weight 1.
    pub fn pre_analysis_applies(&self, fields: &[Field<'_>]) -> bool {
        self.hash == HashAlgo::Xxh3
            && self.bits == FingerprintBits::Bits64
            && matches!(self.weighting, Weighting::Tf)
            && !self.stopwords
            && fields.iter().all(|f| f.weight == 1)
    }

    /// The half of [`analyze`](Self::analyze) (as 32-bit shingle ids) that does not depend on
    /// boilerplate, which [`finish_analysis`](Self::finish_analysis) completes; `None` where
    /// [`pre_analysis_applies`](Self::pre_analysis_applies) does not.
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when the fields have no tokens.
    pub fn pre_analyze(
        &self,
        fields: &[Field<'_>],
        scratch: &mut Scratch,
    ) -> Option<Result<PreAnalysis>> {
        if !self.pre_analysis_applies(fields) {
            return None;
        }
        scratch.all_tokens.clear();
        scratch.all_shingles.clear();
        scratch.code_fallback = false;
        // As the vote reads it: from the longest field's text and tokens.
        let longest = (0..fields.len()).max_by_key(|&i| fields[i].text.len());
        let mut language = None;
        let mut counts = BitCounts::default();
        for (i, field) in fields.iter().enumerate() {
            if i > 0 {
                scratch.all_tokens.push(FIELD_SEPARATOR);
            }
            self.field_shingles(*field, scratch);
            scratch.all_tokens.extend_from_slice(&scratch.tokens);
            if self.detect_language && Some(i) == longest {
                language = self.language_of(field.text, &scratch.tokens);
            }
            count_ones(&scratch.field, &mut counts);
            scratch.all_shingles.extend_from_slice(&scratch.field);
        }
        if counts.n == 0 {
            return Some(Err(Error::EmptyFeatureBag { record: None }));
        }
        let (content_hash, token_count) = scratch.token_summary();
        // Sorted, the set's ids come out in order for `finish_analysis`: a sort here instead
        // of a hash table (the table took a cache miss per shingle and a wipe per page) saves
        // the ids' sort there.
        let mut repeats = Vec::new();
        sort_distinct_counted(&mut scratch.all_shingles, &mut repeats, &mut scratch.sort);
        Some(Ok(PreAnalysis {
            shingles: Arc::from(&scratch.all_shingles[..]),
            repeats,
            counts,
            content_hash,
            token_count,
            language,
            code_fallback: scratch.code_fallback,
        }))
    }

    /// Completes a [`pre_analyze`](Self::pre_analyze) of this profile: what
    /// [`analyze`](Self::analyze) answers for the same fields and `boilerplate`, with the
    /// shingle set as the sorted distinct ids of [`crate::text::shingle::shingle_ids`].
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when nothing but boilerplate is left.
    pub fn finish_analysis(
        &self,
        pre: &PreAnalysis,
        boilerplate: Option<&Boilerplate>,
        scratch: &mut Scratch,
    ) -> Result<Analysis<Arc<[u32]>>> {
        let mut counts = pre.counts.clone();
        let mut ids = std::mem::take(&mut scratch.ids);
        ids.clear();
        let mut removed = 0usize;
        match boilerplate.filter(|b| !b.is_empty()) {
            None => ids.extend(
                pre.shingles
                    .iter()
                    .map(|&h| crate::text::shingle::shingle_id(h)),
            ),
            Some(b) => {
                // Every occurrence of a boilerplate shingle leaves the vote.
                scratch.field.clear();
                let mut repeats = pre.repeats.iter().peekable();
                for (i, &h) in pre.shingles.iter().enumerate() {
                    let extra = repeats
                        .next_if(|&&(at, _)| at as usize == i)
                        .map_or(0, |&(_, extra)| extra as usize);
                    if b.contains(h) {
                        scratch.field.extend(std::iter::repeat_n(h, 1 + extra));
                    } else {
                        ids.push(crate::text::shingle::shingle_id(h));
                    }
                }
                if !scratch.field.is_empty() {
                    let mut theirs = BitCounts::default();
                    count_ones(&scratch.field, &mut theirs);
                    for (o, t) in counts.ones.iter_mut().zip(theirs.ones) {
                        *o -= t;
                    }
                    counts.n -= theirs.n;
                    removed = scratch.field.len();
                }
            }
        }
        if counts.n == 0 {
            scratch.ids = ids;
            return Err(Error::EmptyFeatureBag { record: None });
        }
        // The shingles are ascending, so their high halves are: only ids that two shingles
        // share are left to drop.
        debug_assert!(ids.is_sorted());
        ids.dedup();
        let shingles = Arc::from(&ids[..]);
        scratch.ids = ids;
        Ok(Analysis {
            fingerprint: self.make(counts.majority(), 0),
            shingles,
            content_hash: pre.content_hash,
            token_count: pre.token_count,
            boilerplate_removed: removed,
            shingle_count: counts.n as usize,
            language: pre.language.clone(),
            code_fallback: pre.code_fallback,
        })
    }
}
