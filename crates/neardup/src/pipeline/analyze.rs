//! Analysis apart from the deduper: [`Analyzer`] turns records into [`PreparedRecord`]s on
//! any thread, and the deduper settles each one (made again under newer boilerplate, or
//! taken from an earlier record of the same text) before it is decided.

use std::sync::Arc;

use rayon::prelude::*;

use super::sets::Set;
use super::{Deduper, FastSet, Meta};
use crate::fingerprint::{Scratch, SimHasher};
use crate::record::Record;
use crate::store::{Features, Store};
use crate::text::Boilerplate;
use crate::{Error, Result};

/// A record analysed by an [`Analyzer`], waiting for [`Deduper::process_prepared`] or
/// [`Deduper::query_prepared`].
#[derive(Debug)]
pub struct PreparedRecord {
    analysis: Analysed,
    /// The deduper's boilerplate generation the analysis saw.
    generation: u64,
}

/// What analysis made of a record.
#[derive(Debug)]
pub(super) enum Analysed {
    /// Its analysis, or why it cannot be used.
    Done(Result<Prepared, String>),
    /// Not analysed: its text (this hash of its fields, [`text_hash`]) is that of a record
    /// before it in the run, whose analysis it takes when it is decided.
    SameText(u128),
}

impl PreparedRecord {
    /// Its fingerprint's value, unless the record cannot be used (or was not analysed:
    /// its text repeats an earlier record's, see [`Analyzer::prepare_run`]).
    pub fn fingerprint(&self) -> Option<u128> {
        self.done().map(|p| p.fingerprint)
    }

    /// Its word count, unless the record cannot be used (or was not analysed).
    pub fn tokens(&self) -> Option<usize> {
        self.done().map(|p| p.tokens)
    }

    /// Why the record cannot be used (no words to fingerprint, for one), if it cannot.
    pub fn rejection(&self) -> Option<&str> {
        match &self.analysis {
            Analysed::Done(Err(reason)) => Some(reason),
            _ => None,
        }
    }

    fn done(&self) -> Option<&Prepared> {
        match &self.analysis {
            Analysed::Done(Ok(p)) => Some(p),
            _ => None,
        }
    }
}

/// The texts of the records a run's [`Analyzer::prepare_run`] calls have analysed, so that
/// a record whose fields repeat an earlier record's byte for byte (a page crawled under two
/// URLs, an article syndicated verbatim: a fifth of the bench corpus) is not analysed again:
/// [`Deduper::process_prepared`] gives it the earlier record's analysis, which is what its
/// own would be. It remembers at most [`SeenTexts::CAPACITY`] texts, 16 bytes each.
#[derive(Debug, Default)]
pub struct SeenTexts {
    texts: FastSet<u128>,
}

impl SeenTexts {
    /// How many distinct texts are remembered; later ones are analysed whatever repeats.
    pub const CAPACITY: usize = 1 << 22;

    /// None seen yet.
    pub fn new() -> SeenTexts {
        SeenTexts::default()
    }
}

/// A record's analysis as far as it does not depend on boilerplate, made while boilerplate is
/// learned (see [`Analyzer::first_pass`]) and finished by [`Analyzer::prepare_run`] once it
/// is known, instead of analysing the record again.
#[derive(Debug, Clone)]
pub struct FirstPass {
    /// The record's [`text_hash`]: a record of other text is analysed afresh.
    text: u128,
    pre: crate::fingerprint::PreAnalysis,
}

impl FirstPass {
    /// The record's distinct shingles (boilerplate included), in no particular order: what
    /// boilerplate learning counts.
    pub fn shingles(&self) -> &Arc<[u64]> {
        self.pre.shingles()
    }

    /// About how many bytes of memory it holds.
    pub fn heap_bytes(&self) -> usize {
        self.pre.heap_bytes()
    }
}

/// A hash of what a record's analysis depends on: each field's weight and text, in order.
/// Records with equal hashes are analysed alike (under one profile and boilerplate), so a
/// caller may take one's analysis, or its distinct shingles, for the other's.
pub fn text_hash(record: &Record) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for f in &record.fields {
        h.update(&f.weight.to_le_bytes());
        h.update(&(f.text.len() as u64).to_le_bytes());
        h.update(f.text.as_bytes());
    }
    h.digest128()
}

/// Analysis apart from the deduper, so it can run on other threads and outside any lock
/// around the deduper: see [`Deduper::analyzer`].
#[derive(Debug, Clone)]
pub struct Analyzer {
    hasher: SimHasher,
    short: Option<(SimHasher, usize)>,
    furniture: Arc<Boilerplate>,
    generation: u64,
}

impl Analyzer {
    fn as_ref(&self) -> AnalyzerRef<'_> {
        AnalyzerRef {
            hasher: &self.hasher,
            short: self.short.as_ref().map(|(h, w)| (h, *w)),
            furniture: &self.furniture,
            generation: self.generation,
        }
    }

    /// Analyses records in parallel (normalise, shingle, fingerprint, content hash).
    pub fn prepare(&self, records: &[Record]) -> Vec<PreparedRecord> {
        self.as_ref().prepare(records)
    }

    /// Analyses one record on this thread.
    pub fn prepare_one(&self, record: &Record, scratch: &mut Scratch) -> PreparedRecord {
        self.as_ref().prepare_one(record, scratch)
    }

    /// The half of `record`'s analysis that boilerplate does not change, for
    /// [`prepare_run`](Self::prepare_run) to finish; `None` where the profile or the record
    /// needs the whole analysis then (weighted fields, a profile other than the default
    /// kind of vote, a record short enough for the short-text rule, no words).
    pub fn first_pass(&self, record: &Record) -> Option<FirstPass> {
        let fields = self.hasher.fields_of(record);
        let pre = with_scratch(|scratch| self.hasher.pre_analyze(&fields, scratch))?;
        let pre = pre.ok()?;
        if self
            .short
            .as_ref()
            .is_some_and(|&(_, min_words)| pre.token_count() < min_words)
        {
            return None;
        }
        Some(FirstPass {
            text: text_hash(record),
            pre,
        })
    }

    /// [`prepare`](Self::prepare) for one batch of a run whose batches are all analysed
    /// here, in order, and processed by [`Deduper::process_prepared`] in the same order: a
    /// record whose fields repeat those of a record before it in the run (`seen`) is not
    /// analysed; it gets that record's analysis when it is decided (or its own then, when
    /// that record was not stored). A record with its [`first_pass`](Self::first_pass) in
    /// `first` (one entry per record, or none at all) has that analysis finished.
    pub fn prepare_run(
        &self,
        records: &[Record],
        seen: &mut SeenTexts,
        mut first_passes: Vec<Option<FirstPass>>,
    ) -> Vec<PreparedRecord> {
        assert!(
            first_passes.is_empty() || first_passes.len() == records.len(),
            "one entry per record"
        );
        first_passes.resize_with(records.len(), || None);
        let hashes: Vec<u128> = records.par_iter().map(text_hash).collect();
        // In input order: the first record of a text is analysed and remembered; a later
        // one takes its analysis, unless its own is at hand.
        let first: Vec<Option<bool>> = hashes
            .iter()
            .map(|h| {
                if seen.texts.contains(h) {
                    None
                } else if seen.texts.len() < SeenTexts::CAPACITY {
                    seen.texts.insert(*h);
                    Some(true)
                } else {
                    Some(false)
                }
            })
            .collect();
        let this = self.as_ref();
        records
            .par_iter()
            .zip(hashes.par_iter().zip(first.par_iter()))
            .zip(first_passes.par_iter())
            .map(|((r, (&h, &first)), first_pass)| match first {
                None => PreparedRecord {
                    analysis: Analysed::SameText(h),
                    generation: this.generation,
                },
                Some(remembered) => {
                    let mut p = match first_pass.as_ref().filter(|f| f.text == h) {
                        Some(f) => PreparedRecord {
                            analysis: Analysed::Done(with_scratch(|scratch| {
                                prepare_finished(this.hasher, this.furniture, r, f, scratch)
                            })),
                            generation: this.generation,
                        },
                        None => this.prepare_kept(r),
                    };
                    if let (true, Analysed::Done(Ok(p))) = (remembered, &mut p.analysis) {
                        p.text = Some(h);
                    }
                    p
                }
            })
            .collect()
    }

    /// The deduper's boilerplate generation this copy was taken at: when
    /// [`Deduper::analyzer_generation`] has moved on, take a new copy (records analysed
    /// by this one are analysed again when they are processed).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// A boilerplate generation no deduper of this process has had: generations come from one
/// counter, so an analysis made by one deduper (say, one opened over the same store before
/// it) is never taken for current by another whose boilerplate may differ.
pub(super) fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

thread_local! {
    /// Each thread's analysis buffers, kept from record to record.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Runs one record's analysis `f` with this thread's scratch, then frees what a text of
/// megabytes grew in it.
pub(super) fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> T) -> T {
    SCRATCH.with_borrow_mut(|scratch| {
        let out = f(scratch);
        scratch.release_large();
        out
    })
}

/// Borrowed analysis state, shared by [`Analyzer`] and [`Deduper::process`].
pub(super) struct AnalyzerRef<'a> {
    hasher: &'a SimHasher,
    short: Option<(&'a SimHasher, usize)>,
    furniture: &'a Boilerplate,
    generation: u64,
}

impl AnalyzerRef<'_> {
    pub(super) fn prepare(&self, records: &[Record]) -> Vec<PreparedRecord> {
        // One scratch per thread for good: rayon's `map_init` makes a fresh one for every
        // piece it splits the records into (about ten per call), and each grew its buffers
        // again from nothing. What a record of megabytes grew is freed after it.
        records.par_iter().map(|r| self.prepare_kept(r)).collect()
    }

    /// [`prepare_one`](Self::prepare_one) with this thread's scratch.
    fn prepare_kept(&self, record: &Record) -> PreparedRecord {
        with_scratch(|scratch| self.prepare_one(record, scratch))
    }

    pub(super) fn prepare_one(&self, record: &Record, scratch: &mut Scratch) -> PreparedRecord {
        PreparedRecord {
            analysis: Analysed::Done(prepare(
                self.hasher,
                self.short,
                self.furniture,
                record,
                scratch,
            )),
            generation: self.generation,
        }
    }
}

/// One record after analysis, before the decision.
#[derive(Debug)]
pub(super) struct Prepared {
    /// The record's host ([`Record::effective_host`]: a URL parse, done once, here).
    pub(super) host: Option<String>,
    pub(super) features: Features,
    pub(super) language: Option<&'static str>,
    /// Read as words in code mode: it did not parse as the profile's language.
    pub(super) code_fallback: bool,
    pub(super) shingle_count: usize,
    pub(super) boilerplate_removed: usize,
    pub(super) fingerprint: u128,
    pub(super) content_hash: u128,
    pub(super) shingles: Set,
    pub(super) tokens: usize,
    /// Its [`text_hash`], when [`Analyzer::prepare_run`] remembered it: the deduper then
    /// keeps its analysis for later records of the same text.
    pub(super) text: Option<u128>,
}

/// What the deduper keeps of a record it stored, for later records of its text
/// ([`Analysed::SameText`]); the rest is in its `Meta` and its stored set.
#[derive(Debug, Clone, Copy)]
pub(super) struct TextEntry {
    pub(super) handle: u64,
    /// The boilerplate generation its analysis was made under.
    pub(super) generation: u64,
    pub(super) tokens: usize,
    pub(super) shingle_count: usize,
    pub(super) boilerplate_removed: usize,
    pub(super) language: Option<&'static str>,
    pub(super) code_fallback: bool,
}

/// [`prepare`] of a record whose boilerplate-free half was made by [`Analyzer::first_pass`]:
/// the same analysis.
fn prepare_finished(
    hasher: &SimHasher,
    furniture: &Boilerplate,
    record: &Record,
    first: &FirstPass,
    scratch: &mut Scratch,
) -> Result<Prepared, String> {
    let analysis = without_furniture_if_empty(furniture, |b| {
        hasher.finish_analysis(&first.pre, b, scratch)
    })?;
    Ok(Prepared::of_words(analysis, record.effective_host()))
}

/// `analyse` with the furniture, or without it when the furniture is all there is: a page
/// that is nothing but its site's template is fingerprinted whole (it is then too short or
/// an exact duplicate of the template).
fn without_furniture_if_empty(
    furniture: &Boilerplate,
    mut analyse: impl FnMut(Option<&Boilerplate>) -> Result<crate::fingerprint::Analysis<Arc<[u32]>>>,
) -> Result<crate::fingerprint::Analysis<Arc<[u32]>>, String> {
    let boilerplate = (!furniture.is_empty()).then_some(furniture);
    match analyse(boilerplate) {
        Ok(a) => Ok(a),
        Err(Error::EmptyFeatureBag { .. }) if boilerplate.is_some() => {
            analyse(None).map_err(|_| "no words to fingerprint".to_owned())
        }
        Err(Error::EmptyFeatureBag { .. }) => Err("no words to fingerprint".into()),
        Err(e) => Err(e.to_string()),
    }
}

impl Prepared {
    /// A record analysed over its words.
    fn of_words(
        analysis: crate::fingerprint::Analysis<Arc<[u32]>>,
        host: Option<String>,
    ) -> Prepared {
        Prepared {
            host,
            features: Features::Words,
            language: analysis.language.as_ref().map(|l| l.code),
            code_fallback: analysis.code_fallback,
            shingle_count: analysis.shingle_count,
            boilerplate_removed: analysis.boilerplate_removed,
            fingerprint: analysis.fingerprint.value(),
            content_hash: analysis.content_hash.0,
            shingles: analysis.shingles,
            tokens: analysis.token_count,
            text: None,
        }
    }
}

/// Analyses one record (in parallel with others): fingerprint, content hash, verification set.
fn prepare(
    hasher: &SimHasher,
    short: Option<(&SimHasher, usize)>,
    furniture: &Boilerplate,
    record: &Record,
    scratch: &mut Scratch,
) -> Result<Prepared, String> {
    let fields = hasher.fields_of(record);
    let analysis =
        without_furniture_if_empty(furniture, |b| hasher.analyze_ids(&fields, b, scratch))?;
    let mut prepared = Prepared::of_words(analysis, record.effective_host());
    if let Some((short_hasher, min_words)) = short {
        if prepared.tokens < min_words {
            // Short text: the verification set and fingerprint come from character n-grams;
            // the exact tier keeps the word-level content hash.
            let chars = short_hasher
                .analyze_ids(&fields, None, scratch)
                .map_err(|e| e.to_string())?;
            prepared.features = Features::Chars;
            prepared.fingerprint = chars.fingerprint.value();
            prepared.shingles = chars.shingles;
            prepared.shingle_count = chars.shingle_count;
        }
    }
    Ok(prepared)
}

impl<S: Store> Deduper<S> {
    pub(super) fn prepare(
        &self,
        record: &Record,
        scratch: &mut Scratch,
    ) -> Result<Prepared, String> {
        let short = self.short_hasher.as_ref().map(|h| (h, self.rule.min_words));
        prepare(&self.hasher, short, &self.furniture, record, scratch)
    }

    /// An owned copy of what analysis needs (profile, short-text hasher, boilerplate), so a
    /// caller can analyse the next batch on other threads while this deduper decides the
    /// current one. Boilerplate learned later is not in the copy: take a new one then.
    pub fn analyzer(&self) -> Analyzer {
        Analyzer {
            hasher: self.hasher.clone(),
            short: self.short_hasher.clone().map(|h| (h, self.rule.min_words)),
            furniture: self.furniture.clone(),
            generation: self.generation,
        }
    }

    /// The boilerplate generation: it moves whenever a host's boilerplate changes (learned
    /// here or committed by another process), which makes older [`Analyzer`] copies stale.
    pub fn analyzer_generation(&self) -> u64 {
        self.generation
    }

    pub(super) fn analyzer_ref(&self) -> AnalyzerRef<'_> {
        AnalyzerRef {
            hasher: &self.hasher,
            short: self.short_hasher.as_ref().map(|h| (h, self.rule.min_words)),
            furniture: &self.furniture,
            generation: self.generation,
        }
    }

    /// The analysis of `record` as this deduper makes it now: `prepared` itself, unless it
    /// was made with boilerplate that has changed since.
    pub(super) fn current(&self, record: &Record, prepared: PreparedRecord) -> Analysed {
        if prepared.generation == self.generation {
            prepared.analysis
        } else {
            Analysed::Done(self.prepare(record, &mut Scratch::default()))
        }
    }

    /// The analysis a record of `text` would get, taken from the record of that text this
    /// deduper stored under the current boilerplate, when there is one.
    fn same_text(&self, record: &Record, text: u128) -> Result<Option<Prepared>> {
        let Some((e, meta)) = self.text_entry(text) else {
            return Ok(None);
        };
        let shingles = match meta.features {
            Features::ExactOnly => Set::default(),
            _ => match self.shingle_sets(&[e.handle])?.pop().flatten() {
                Some(set) => set,
                None => return Ok(None),
            },
        };
        Ok(Some(Prepared {
            host: record.effective_host(),
            features: meta.features,
            language: e.language,
            code_fallback: e.code_fallback,
            shingle_count: e.shingle_count,
            boilerplate_removed: e.boilerplate_removed,
            fingerprint: meta.fingerprint,
            content_hash: meta.content_hash,
            shingles,
            tokens: e.tokens,
            text: None,
        }))
    }

    /// The stored record of `text` analysed under the current boilerplate, if there is one.
    pub(super) fn text_entry(&self, text: u128) -> Option<(&TextEntry, &Meta)> {
        let e = self.by_text.get(&text)?;
        let meta = self.meta.get(&e.handle)?;
        (e.generation == self.generation).then_some((e, meta))
    }

    /// A record's analysis, made now if it was left to the record of its text and that one
    /// cannot give it.
    pub(super) fn settle(
        &self,
        record: &Record,
        analysed: Analysed,
    ) -> Result<Result<Prepared, String>> {
        match analysed {
            Analysed::Done(p) => Ok(p),
            Analysed::SameText(text) => Ok(match self.same_text(record, text)? {
                Some(p) => Ok(p),
                None => with_scratch(|scratch| self.prepare(record, scratch)),
            }),
        }
    }
}
