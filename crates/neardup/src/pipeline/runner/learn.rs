//! The boilerplate pass's parts: pages deferred until their host has enough of them, the
//! sampled pages' analyses kept for the main pass, and the sampled texts' shingles.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex};

use rayon::prelude::*;

use super::{text_hash, Analyzer, FirstPass, Source};
use crate::text::BoilerplateLearner;
use crate::{Scratch, SimHasher};

/// Sampled pages of hosts that have not reached [`BoilerplatePass::min_pages`](super::BoilerplatePass::min_pages) yet: they
/// are shingled only once their host does. Most hosts of a crawl never do, and their pages
/// were shingled and counted for nothing (30% of the pages sampled in the 1 GB bench
/// corpus, whose 5,077 hosts include 4,520 with fewer than 20 pages). A host's pages reach
/// the learner in input order either way, so what is learned does not change.
pub(super) struct Deferred<I> {
    /// Each page with its place in the input.
    by_host: HashMap<String, Vec<(u64, I)>>,
    /// Bytes of the deferred items.
    pub(super) bytes: usize,
}

impl<I> Default for Deferred<I> {
    fn default() -> Self {
        Deferred {
            by_host: HashMap::new(),
            bytes: 0,
        }
    }
}

/// Deferred items beyond this many bytes are shingled at once, so memory stays bounded on
/// inputs with a great many small hosts.
pub(super) const DEFERRED_BYTES: usize = 256 << 20;

impl<I> Deferred<I> {
    pub(super) fn defer<S: Source<Item = I>>(
        &mut self,
        source: &S,
        host: String,
        seq: u64,
        item: I,
    ) {
        // The item on its own: one that refers into its input block would keep all of it.
        let item = source.detach(item);
        self.bytes += source.size(&item);
        self.by_host.entry(host).or_default().push((seq, item));
    }

    /// Moves `host`'s deferred pages, in order, to `out`.
    pub(super) fn take<S: Source<Item = I>>(
        &mut self,
        source: &S,
        host: &str,
        out: &mut Vec<(u64, I, String)>,
    ) {
        if let Some(items) = self.by_host.remove(host) {
            for (seq, item) in items {
                self.bytes -= source.size(&item);
                out.push((seq, item, host.to_owned()));
            }
        }
    }

    pub(super) fn take_all(&mut self, out: &mut Vec<(u64, I, String)>) {
        for (host, items) in self.by_host.drain() {
            out.extend(
                items
                    .into_iter()
                    .map(|(seq, item)| (seq, item, host.clone())),
            );
        }
        self.bytes = 0;
    }
}

/// Sampled pages' analyses made by the boilerplate pass, by their place in the input, for the
/// main pass to finish.
#[derive(Default)]
pub(super) struct FirstPasses {
    /// By place in the input, last first once the pass is over ([`sort`](Self::sort)): the
    /// main pass takes them in input order from the end, where a map keyed by place grew
    /// through rehash after rehash. Each analysis is boxed where it is made: inline, an
    /// entry took about 600 bytes, and the vector's growth copied and first touched them
    /// all again (2.5% of the CPU of a run of 1.5 KB records).
    by_seq: Vec<(u64, Box<FirstPass>)>,
    pub(super) bytes: usize,
}

/// The memory the boilerplate pass may hold in sampled pages' analyses for the main pass
/// (the 1 GB bench corpus needs about 520 MB for all of them); pages past it are analysed
/// again.
pub(super) const FIRST_PASS_BYTES: usize = 768 << 20;

impl FirstPasses {
    pub(super) fn push(&mut self, seq: u64, first: Box<FirstPass>) {
        self.bytes += first.heap_bytes();
        self.by_seq.push((seq, first));
    }

    /// Orders the analyses for [`take`](Self::take). Pages come out of the pass nearly in
    /// input order; a host's first pages wait until it has enough of them.
    pub(super) fn sort(&mut self) {
        self.by_seq
            .sort_unstable_by_key(|&(seq, _)| std::cmp::Reverse(seq));
    }

    /// The analysis of the record at `seq`, taken in increasing order of `seq`.
    pub(super) fn take(&mut self, seq: u64) -> Option<FirstPass> {
        while self.by_seq.last().is_some_and(|&(s, _)| s < seq) {
            self.by_seq.pop();
        }
        if self.by_seq.last()?.0 != seq {
            return None;
        }
        let (_, first) = self.by_seq.pop()?;
        self.bytes -= first.heap_bytes();
        Some(*first)
    }
}

/// Chunks of sampled pages the boilerplate pass analyses at once.
pub(super) const ANALYSES_IN_FLIGHT: usize = 2;

/// A sampled page's host, distinct shingles and, when kept, analysis for the main pass.
pub(super) type SampledPage = (String, Arc<[u64]>, Option<(u64, Box<FirstPass>)>);

/// The distinct shingles of the pages the boilerplate pass has analysed and kept for the
/// main pass, by [`text_hash`]: a page that repeats one of them byte for byte (a seventh of
/// the sampled pages of the 1 GB bench corpus) is counted with that page's shingles instead
/// of being analysed again. It needs no analysis of its own for the main pass either, which
/// leaves a repeated text to the record that had it first. Its sets are those the kept
/// analyses hold, so it costs only its entries.
#[derive(Default)]
pub(super) struct SampledTexts(Mutex<HashMap<u128, Arc<[u64]>>>);

impl SampledTexts {
    pub(super) fn get(&self, text: u128) -> Option<Arc<[u64]>> {
        self.0.lock().expect("not poisoned").get(&text).cloned()
    }

    pub(super) fn insert(&self, text: u128, set: &Arc<[u64]>) {
        self.0
            .lock()
            .expect("not poisoned")
            .entry(text)
            .or_insert_with(|| set.clone());
    }
}

/// Analyses the sampled pages of a chunk, in parallel: the boilerplate-free half of their
/// analysis for the main pass while `keep` (or just their shingles), unless their text
/// repeats one in `texts`.
pub(super) fn analyse_sampled<S: Source>(
    source: &S,
    sampled: Vec<(u64, S::Item, String)>,
    keep: bool,
    analyzer: &Analyzer,
    hasher: &SimHasher,
    texts: &SampledTexts,
) -> Vec<SampledPage> {
    // One scratch per analysis thread, kept from chunk to chunk (`map_init` would make
    // about ten a chunk, each growing its buffers again).
    thread_local! {
        static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
    }
    sampled
        .into_par_iter()
        .map(|(seq, item, host)| {
            let (record, _) = source.parse(item).ok()?;
            let text = text_hash(&record);
            if let Some(set) = texts.get(text) {
                return Some((host, set, None));
            }
            if keep {
                if let Some(first) = analyzer.first_pass(&record) {
                    texts.insert(text, first.shingles());
                    let shingles = first.shingles().clone();
                    return Some((host, shingles, Some((seq, Box::new(first)))));
                }
            }
            let fields: Vec<&str> = record.fields.iter().map(|f| f.text.as_str()).collect();
            let set = SCRATCH.with_borrow_mut(|scratch| {
                let set = hasher.distinct_shingles_with(&fields, scratch);
                scratch.release_large();
                set
            });
            Some((host, set, None))
        })
        .flatten()
        .collect()
}

/// Counts an analysed chunk of sampled pages (the oldest in flight) and keeps their
/// analyses for the main pass.
pub(super) fn learn(
    done: Option<mpsc::Receiver<Vec<SampledPage>>>,
    pool: &rayon::ThreadPool,
    learner: &mut BoilerplateLearner,
    first_passes: &mut FirstPasses,
) {
    let Some(pages) = done.and_then(|d| d.recv().ok()) else {
        return;
    };
    let mut sets = Vec::with_capacity(pages.len());
    for (host, set, first) in pages {
        if let Some((seq, first)) = first {
            first_passes.push(seq, first);
        }
        sets.push((host, set));
    }
    pool.install(|| learner.sample_pages(sets));
}
