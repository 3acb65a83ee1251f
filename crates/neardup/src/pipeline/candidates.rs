//! A record's candidates: index probes (one at a time, or a window's at once before its
//! decisions), their verification against the record's shingle set, the index's sizing,
//! and [`Deduper::query`], which asks without inserting.

use rayon::prelude::*;

use super::analyze::{Analysed, Prepared};
use super::{sets, Deduper, PreparedRecord, ShortText};
use crate::fingerprint::Scratch;
use crate::index::{AutoIndex, HammingIndex, Match};
use crate::record::Record;
use crate::store::{Features, Store};
use crate::verify::{id_jaccard, Scores};
use crate::{Error, Result};

/// Whether sets of sizes `a` and `b` cannot reach Jaccard `min`: |A ∩ B| / |A ∪ B| is at most
/// min(|A|, |B|) / max(|A|, |B|).
pub(super) fn cannot_reach(a: usize, b: usize, min: f64) -> bool {
    (a.min(b) as f64) < min * a.max(b) as f64
}

/// Verification failures logged per record (the nearest ones).
pub(super) const MAX_LOGGED_REJECTIONS: usize = 8;

/// Candidates with their scores, by handle.
pub(super) type Scored = Vec<(u64, Scores)>;

/// Which Hamming index a record is searched in and stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IndexKind {
    Words,
    Chars,
}

/// A record's index hits among the records stored before its group, with the Jaccard
/// similarity of each (`None`: the candidate's set is gone).
pub(super) struct Presearched {
    pub(super) hits: Vec<Match>,
    pub(super) known: Vec<(u64, Option<f64>)>,
}

impl<S: Store> Deduper<S> {
    /// The verification sets of `handles`, in order: those in memory (uncommitted or
    /// cached), the rest read from the store in one batch (one round trip for a remote
    /// store) and cached.
    pub(super) fn shingle_sets(&self, handles: &[u64]) -> Result<Vec<Option<sets::Set>>> {
        self.sets
            .get_or_fetch(handles, |missing| self.store.shingles_many(missing))
    }

    /// The index a record's candidates come from, with its radius and Jaccard threshold.
    fn search_rule(&self, features: Features) -> (IndexKind, u32, f64) {
        match (features, self.rule.short_text) {
            (
                Features::Chars,
                ShortText::CharNgrams {
                    max_distance,
                    min_jaccard,
                    ..
                },
            ) => (IndexKind::Chars, max_distance, min_jaccard),
            _ => (
                IndexKind::Words,
                self.rule.max_distance,
                self.rule.min_jaccard,
            ),
        }
    }

    /// The index records of `kind` are searched in and stored in.
    fn index_of(&self, kind: IndexKind) -> &AutoIndex {
        match kind {
            IndexKind::Words => &self.index,
            IndexKind::Chars => &self.short_index,
        }
    }

    /// Index hits of an analysed record, nearest first (by the indexed bits, then handle),
    /// at most `max_candidates`.
    fn index_hits(&self, prepared: &Prepared) -> Result<Vec<Match>> {
        let (kind, max_distance, _) = self.search_rule(prepared.features);
        let index = self.index_of(kind);
        // The answer is gathered in a buffer of the thread's, which keeps its capacity:
        // next to a large group of near copies it holds thousands of matches before the
        // nearest are selected, and a fresh one each time would be fresh memory each time.
        thread_local! {
            static ANSWER: std::cell::RefCell<Vec<Match>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        ANSWER.with_borrow_mut(|answer| {
            index.query_nearest_into(
                prepared.fingerprint as u64,
                max_distance,
                self.rule.max_candidates,
                answer,
            )?;
            Ok(answer.clone())
        })
    }

    /// Verified near-duplicates of an analysed record among stored ones, best first:
    /// highest Jaccard, then smallest distance, then oldest handle. Failing candidates are
    /// returned apart, with their scores.
    pub(super) fn verify_candidates(&self, prepared: &Prepared) -> Result<(Scored, Scored)> {
        let hits = self.index_hits(prepared)?;
        self.verify_hits(prepared, &hits, &[])
    }

    /// [`verify_candidates`](Self::verify_candidates) for given index hits; `known` holds
    /// Jaccard similarities computed already (by [`presearch`](Self::presearch); `None`
    /// for a candidate whose set is gone).
    pub(super) fn verify_hits(
        &self,
        prepared: &Prepared,
        hits: &[Match],
        known: &[(u64, Option<f64>)],
    ) -> Result<(Scored, Scored)> {
        let (_, max_distance, min_jaccard) = self.search_rule(prepared.features);
        let candidates: Vec<(u64, u32)> = hits
            .iter()
            .filter_map(|m| {
                let meta = self.meta.get(&m.id)?;
                let distance = (meta.fingerprint ^ prepared.fingerprint).count_ones();
                // 128-bit profiles: the index saw only the low half.
                (distance <= max_distance && meta.features == prepared.features)
                    .then_some((m.id, distance))
            })
            .collect();
        let known_of = |h: u64| known.iter().find(|&&(k, _)| k == h).map(|&(_, j)| j);
        let unknown: Vec<u64> = candidates
            .iter()
            .map(|&(h, _)| h)
            .filter(|&h| known_of(h).is_none())
            .collect();
        let mut sets = self.shingle_sets(&unknown)?.into_iter();
        let (mut ok, mut failed) = (Vec::new(), Vec::new());
        for (id, distance) in candidates {
            let theirs = match known_of(id) {
                Some(j) => j.map(Ok),
                None => sets.next().flatten().map(Err),
            };
            let Some(theirs) = theirs else {
                continue;
            };
            let jaccard = match theirs {
                Ok(j) => j,
                Err(set) => {
                    // Once enough failures are logged, sets too different in size to pass
                    // are not compared at all.
                    if failed.len() >= MAX_LOGGED_REJECTIONS
                        && cannot_reach(prepared.shingles.len(), set.len(), min_jaccard)
                    {
                        continue;
                    }
                    id_jaccard(&prepared.shingles, &set)
                }
            };
            let scores = Scores::new(distance, jaccard);
            if scores.jaccard >= min_jaccard {
                ok.push((id, scores));
            } else {
                failed.push((id, scores));
            }
        }
        ok.sort_by(|a, b| {
            b.1.jaccard
                .total_cmp(&a.1.jaccard)
                .then(a.1.distance.cmp(&b.1.distance))
                .then(a.0.cmp(&b.0))
        });
        Ok((ok, failed))
    }

    /// A record's candidates among the records stored before its group (its index `hits`),
    /// with their Jaccard similarities: the costly half of a decision (index probes,
    /// reading and comparing shingle sets), which reads only state the group's own
    /// decisions do not change, so the records of a group are searched in parallel before
    /// they are decided one by one (see [`presearch_window`](Self::presearch_window)).
    fn presearch(&self, prepared: &Prepared, hits: Vec<Match>) -> Result<Presearched> {
        let handles: Vec<u64> = hits.iter().map(|m| m.id).collect();
        let known = handles
            .iter()
            .zip(self.shingle_sets(&handles)?)
            .map(|(&h, set)| (h, set.map(|set| id_jaccard(&prepared.shingles, &set))))
            .collect();
        Ok(Presearched { hits, known })
    }

    /// The presearches of a window's records that need one, in parallel. Each index is
    /// asked in batches, one per thread ([`HammingIndex::query_nearest_batch`]: a batch
    /// sweeps each table once, where one query after another took a cache miss per probe);
    /// then each record's hits are verified.
    pub(super) fn presearch_window(
        &self,
        records: &[Record],
        prepared: &[Analysed],
    ) -> Result<Vec<Option<Presearched>>> {
        let mut found: Vec<Option<Presearched>> = (0..records.len()).map(|_| None).collect();
        for kind in [IndexKind::Words, IndexKind::Chars] {
            let wanted: Vec<(usize, &Prepared)> = records
                .iter()
                .zip(prepared)
                .enumerate()
                .filter_map(|(i, (record, p))| match p {
                    Analysed::Done(Ok(p))
                        if self.search_rule(p.features).0 == kind
                            && self.needs_search(record, p) =>
                    {
                        Some((i, p))
                    }
                    _ => None,
                })
                .collect();
            let Some(&(_, first)) = wanted.first() else {
                continue;
            };
            let (_, max_distance, _) = self.search_rule(first.features);
            let index = self.index_of(kind);
            let per_thread = wanted.len().div_ceil(rayon::current_num_threads());
            let hits: Vec<Vec<Vec<Match>>> = wanted
                .par_chunks(per_thread.max(1))
                .map(|chunk| {
                    let fps: Vec<u64> = chunk.iter().map(|(_, p)| p.fingerprint as u64).collect();
                    let mut hits = Vec::new();
                    index.query_nearest_batch(
                        &fps,
                        max_distance,
                        self.rule.max_candidates,
                        &mut hits,
                    )?;
                    Ok(hits)
                })
                .collect::<Result<_>>()?;
            let hits: Vec<Vec<Match>> = hits.into_iter().flatten().collect();
            let searched: Vec<(usize, Presearched)> = wanted
                .into_par_iter()
                .zip(hits)
                .map(|((i, p), hits)| Ok((i, self.presearch(p, hits)?)))
                .collect::<Result<_>>()?;
            for (i, searched) in searched {
                found[i] = Some(searched);
            }
        }
        Ok(found)
    }

    /// Completes a presearch with the records decided earlier in the same group: their
    /// index hits are found by a scan of the group (a few thousand fingerprints at most),
    /// merged in the index's order and cut at `max_candidates` as the index would.
    pub(super) fn complete_presearch(
        &self,
        prepared: &Prepared,
        mut hits: Vec<Match>,
    ) -> Vec<Match> {
        let (kind, max_distance, _) = self.search_rule(prepared.features);
        let q = prepared.fingerprint as u64;
        let before = hits.len();
        crate::index::linear::scan(&self.group_fps, q, max_distance, |at, distance| {
            let (id, k) = self.group[at];
            if k == kind {
                hits.push(Match { distance, id });
            }
        });
        if hits.len() > before {
            hits.sort_unstable();
            hits.truncate(self.rule.max_candidates);
        }
        hits
    }

    /// Near-duplicates of `record` among stored records, without inserting it: (id, scores)
    /// best first, exact duplicates first of all with distance 0 and Jaccard 1.
    ///
    /// # Errors
    /// A record with no words; index and store failures.
    pub fn query(&self, record: &Record) -> Result<Vec<(String, Scores)>> {
        let prepared = self
            .analyzer_ref()
            .prepare_one(record, &mut Scratch::default());
        self.query_prepared(record, prepared)
    }

    /// [`query`](Self::query) for a record analysed already (by an
    /// [`Analyzer`](super::Analyzer), outside whatever lock guards this deduper).
    ///
    /// # Errors
    /// As [`query`](Self::query).
    pub fn query_prepared(
        &self,
        record: &Record,
        prepared: PreparedRecord,
    ) -> Result<Vec<(String, Scores)>> {
        let analysed = self.current(record, prepared);
        let prepared = self
            .settle(record, analysed)?
            .map_err(|reason| Error::InvalidConfig {
                field: "text",
                value: record.id.clone(),
                reason,
            })?;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        if let Some(&h) = self.by_content.get(&prepared.content_hash) {
            // Every stored record with this text is in one cluster.
            let survivor = self.meta[&h].survivor;
            for &m in &self.members[&survivor] {
                if self.meta[&m].content_hash == prepared.content_hash && seen.insert(m) {
                    let distance = (self.meta[&m].fingerprint ^ prepared.fingerprint).count_ones();
                    out.push((m, Scores::new(distance, 1.0)));
                }
            }
        }
        if prepared.tokens >= self.rule.min_words || prepared.features == Features::Chars {
            let mut hits = self.index_hits(&prepared)?;
            // Exact copies are not indexed (see `indexes`): each hit's are candidates too.
            let copies: Vec<Match> = hits
                .iter()
                .flat_map(|m| {
                    let meta = &self.meta[&m.id];
                    let members = self
                        .members
                        .get(&meta.survivor)
                        .map_or(&[][..], Vec::as_slice);
                    self.copies_among(meta.content_hash, members)
                        .filter(move |&c| c != m.id)
                        .map(|c| Match {
                            distance: (self.meta[&c].fingerprint ^ prepared.fingerprint)
                                .count_ones(),
                            id: c,
                        })
                })
                .collect();
            hits.extend(copies);
            let (ok, _) = self.verify_hits(&prepared, &hits, &[])?;
            out.extend(ok.into_iter().filter(|(h, _)| seen.insert(*h)));
        }
        Ok(out
            .into_iter()
            .map(|(h, s)| (self.meta[&h].id.to_string(), s))
            .collect())
    }

    /// Whether deciding `record` will search the index (as far as the state before its
    /// group tells: a decision that turns out not to need the search ignores it).
    pub(super) fn needs_search(&self, record: &Record, p: &Prepared) -> bool {
        !self.by_id.contains_key(record.id.as_str())
            && !self.by_content.contains_key(&p.content_hash)
            && self.features_of(p) != Features::ExactOnly
    }

    /// Rebuilds the index with a larger layout when the store outgrows the plan.
    pub(super) fn grow_index_for(&mut self, incoming: usize) -> Result<()> {
        if let Some(planned) = outgrown(&self.index, incoming, self.index_planned_for) {
            self.index_planned_for = planned;
            self.index = self.rebuilt(
                &self.index,
                Features::Words,
                planned,
                self.rule.index_radius(),
            )?;
        }
        if let ShortText::CharNgrams { max_distance, .. } = self.rule.short_text {
            if let Some(planned) = outgrown(&self.short_index, incoming, self.short_planned_for) {
                self.short_planned_for = planned;
                self.short_index =
                    self.rebuilt(&self.short_index, Features::Chars, planned, max_distance)?;
            }
        }
        Ok(())
    }

    /// Makes room for `incoming` more records at once, when the caller knows how many are
    /// coming (`neardup dedup` counts its input in the boilerplate pass): the maps that hold
    /// every record are sized for them, and the index is laid out again for the store's size
    /// after them where the builder's
    /// [`expected_records`](super::DeduperBuilder::expected_records), a guess, was off by
    /// more than half. A map grown one doubling at a time copies every entry again at each
    /// step, into memory touched for the first time.
    ///
    /// # Errors
    /// [`Error::Index`] if the index cannot be laid out.
    pub fn reserve(&mut self, incoming: u64) -> Result<()> {
        let n = usize::try_from(incoming).unwrap_or(usize::MAX);
        self.meta.reserve(n);
        self.by_id.reserve(n);
        self.by_content.reserve(n);
        self.by_text.reserve(n);
        let need = (self.index.len() as u64 + incoming).max(1024);
        if need > self.index_planned_for.saturating_mul(2)
            || need.saturating_mul(2) < self.index_planned_for
        {
            self.index_planned_for = need;
            self.index =
                self.rebuilt(&self.index, Features::Words, need, self.rule.index_radius())?;
        }
        Ok(())
    }

    /// A new index laid out for `planned` fingerprints holding what `old` holds (records
    /// evicted by a sliding window stay out).
    fn rebuilt(
        &self,
        old: &AutoIndex,
        features: Features,
        planned: u64,
        max_distance: u32,
    ) -> Result<AutoIndex> {
        let mut index = AutoIndex::for_size(planned, max_distance)?;
        index.extend(
            self.meta
                .iter()
                .filter(|(&h, m)| m.features == features && old.get(h).is_some())
                .map(|(&h, m)| (h, m.fingerprint as u64)),
        )?;
        Ok(index)
    }

    /// Installs index buffer merges that finished in the background (see
    /// [`HammingIndex::settle`]); for a long-running process whose inserts paused.
    pub fn settle_index(&mut self) {
        self.index.settle();
        self.short_index.settle();
    }
}

/// The number of fingerprints to lay `index` out for again when `incoming` more records
/// take it past four times the `planned` layout (twice what it will then hold), or `None`
/// while the layout still fits.
fn outgrown(index: &AutoIndex, incoming: usize, planned: u64) -> Option<u64> {
    let need = (index.len() + incoming) as u64;
    (need > planned.saturating_mul(4)).then(|| need.saturating_mul(2))
}
