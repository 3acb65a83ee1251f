//! The decision: each record of a batch, in input order, is matched (exact tier, then
//! verified SimHash candidates its cluster links with), stored, and merged into its
//! cluster, which it may fuse with others; its [`Outcome`] says what happened.

use rayon::prelude::*;

use super::analyze::{with_scratch, Analysed, Prepared, TextEntry};
use super::candidates::{Presearched, Scored, MAX_LOGGED_REJECTIONS};
use super::cluster::{Bound, Fusable, Linked};
use super::sets::{Embedding, Set};
use super::{Decision, Deduper, FastSet, MergeRule};
use crate::record::{Record, Timestamp};
use crate::store::{
    Arrival, Batch, Features, MergeLogEntry, NewRecord, Rejection, Store, StoredRecord,
};
use crate::verify::Scores;
use crate::Result;

/// Records searched in parallel before being decided one by one: large enough to keep
/// every thread busy, small enough that scanning the window's own records (each record is
/// compared with those decided before it in the window) stays negligible.
pub(super) const PRESEARCH_WINDOW: usize = 1024;

/// Windows smaller than this are searched on the calling thread: a service's group commits
/// hold a few records to a few dozen, and handing those to the thread pool (waking its
/// threads on cores the request handlers share) made the insert tail no shorter (server-side
/// p99 at 5,000 inserts/s: 12-23 ms on the calling thread against 18-22 ms in the pool, the
/// same throughput).
pub(super) const PARALLEL_PRESEARCH_MIN: usize = 64;

/// Searches made before the store's lock ([`Deduper::presearch_window`] over a whole batch),
/// and the records indexed since, which complete them.
pub(super) struct Early {
    pub(super) found: Vec<Option<Presearched>>,
    pub(super) added: Vec<(u64, super::candidates::IndexKind, u64)>,
}

/// The outcome of one record of a [`Deduper::process`] call.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The record's id.
    pub id: String,
    /// What happened to it.
    pub decision: Decision,
    /// Its fingerprint, hex (absent for rejects).
    pub fingerprint: Option<String>,
    /// Merge-log entries this record caused (its own merge, or the displaced survivor's),
    /// then those of the clusters it fused (see [`fused`](Self::fused)).
    pub merges: Vec<MergeLogEntry>,
    /// How many other clusters this record bridged and fused with its own: the survivor of
    /// each fused cluster is merged (the last `fused` entries of `merges`).
    pub fused: usize,
    /// Shingle occurrences fingerprinted (after boilerplate removal).
    pub shingles: usize,
    /// Shingle occurrences removed as its host's boilerplate.
    pub boilerplate_removed: usize,
    /// Its language (ISO 639-3), when the profile detects languages.
    pub language: Option<String>,
    /// In code mode, whether it did not parse as the profile's language and was read as
    /// words instead.
    pub code_fallback: bool,
    /// Its host ([`Record::effective_host`]), for per-host reports.
    pub host: Option<String>,
    /// Every stored record it verified against (the exact copy it matched, or each SimHash
    /// candidate that passed verification), whether or not it joined that record's
    /// cluster; empty unless [`Deduper::collect_pairs`] asked for them.
    pub pairs: Vec<VerifiedPair>,
}

/// A pair that passed verification: the arriving record and `other`, stored.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedPair {
    /// The stored record's id.
    pub other: String,
    /// Exact copy, or SimHash candidate verified by Jaccard.
    pub rule: MergeRule,
    /// Both scores.
    pub scores: Scores,
}

impl<S: Store> Deduper<S> {
    /// Whether each [`Outcome`] lists every pair that passed verification
    /// ([`Outcome::pairs`]), for users who want pairs rather than clusters. Off by default:
    /// the ids cost an allocation each.
    pub fn collect_pairs(&mut self, on: bool) {
        self.collect_pairs = on;
    }

    /// Decides `records` in order. With `early` (their searches made before the store's
    /// lock, and the records other processes committed since), the batch is decided as
    /// one window whose searches are completed by a scan of those records and of the
    /// batch's own; without, in windows searched as they come.
    pub(super) fn decide_all(
        &mut self,
        records: &[Record],
        prepared: Vec<Analysed>,
        early: Option<Early>,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Vec<Outcome>> {
        let mut outcomes = Vec::with_capacity(records.len());
        self.group.clear();
        self.group_fps.clear();
        let decided = match early {
            Some(Early { found, added }) => {
                for (handle, kind, fingerprint) in added {
                    self.group.push((handle, kind));
                    self.group_fps.push(fingerprint);
                }
                self.decide_window(records, prepared, Some(found), now, batch, &mut outcomes)
            }
            None => {
                let mut prepared = prepared.into_iter();
                records.chunks(PRESEARCH_WINDOW).try_for_each(|window| {
                    let window_prepared: Vec<Analysed> =
                        prepared.by_ref().take(window.len()).collect();
                    self.decide_window(window, window_prepared, None, now, batch, &mut outcomes)
                })
            }
        };
        self.group.clear();
        self.group_fps.clear();
        decided?;
        Ok(outcomes)
    }

    /// Decides a window of records in order. Their searches among the records stored
    /// before the window run first, in parallel ([`presearch`](Self::presearch)), unless
    /// `found` holds them already; each decision then adds the records indexed since
    /// (`group`: those decided before it in the window, and any the caller put there)
    /// ([`complete_presearch`](Self::complete_presearch)), so the outcome is exactly that
    /// of deciding one record after the other.
    fn decide_window(
        &mut self,
        records: &[Record],
        mut prepared: Vec<Analysed>,
        found: Option<Vec<Option<Presearched>>>,
        now: Timestamp,
        batch: &mut Batch,
        outcomes: &mut Vec<Outcome>,
    ) -> Result<()> {
        // Records left to an earlier record of their text: that record is stored (its
        // analysis is taken when the record is decided), or it is earlier in this window
        // (decided first), or neither (its text is analysed now, in parallel).
        let mut in_window: FastSet<u128> = FastSet::default();
        let mut unresolved = Vec::new();
        for (i, p) in prepared.iter().enumerate() {
            match p {
                Analysed::Done(Ok(Prepared { text: Some(t), .. })) => {
                    in_window.insert(*t);
                }
                Analysed::SameText(t)
                    if !in_window.contains(t) && self.text_entry(*t).is_none() =>
                {
                    unresolved.push(i);
                }
                _ => {}
            }
        }
        if !unresolved.is_empty() {
            let this = &*self;
            let analysed: Vec<(usize, Result<Prepared, String>)> = unresolved
                .into_par_iter()
                .map(|i| {
                    (
                        i,
                        with_scratch(|scratch| this.prepare(&records[i], scratch)),
                    )
                })
                .collect();
            for (i, p) in analysed {
                prepared[i] = Analysed::Done(p);
            }
        }
        let found: Vec<Option<Presearched>> = match found {
            Some(found) => found,
            None => {
                self.group.clear();
                self.group_fps.clear();
                if records.len() >= PARALLEL_PRESEARCH_MIN {
                    self.presearch_window(records, &prepared)?
                } else {
                    Vec::new()
                }
            }
        };
        let embeddings = self.embed_window(records, &prepared)?;
        let mut found = found.into_iter();
        for ((record, prepared), embedding) in records.iter().zip(prepared).zip(embeddings) {
            let found = found.next().flatten();
            let outcome = match self.settle(record, prepared)? {
                Err(reason) => Report::rejected(record).outcome(
                    record,
                    Decision::Rejected { reason },
                    Vec::new(),
                    Vec::new(),
                ),
                Ok(p) => self.decide(record, p, found, embedding, now, batch)?,
            };
            outcomes.push(outcome);
        }
        Ok(())
    }

    /// How a record is stored: SimHash over words, over characters (short text), or exact
    /// tier only.
    pub(super) fn features_of(&self, p: &Prepared) -> Features {
        match (p.tokens < self.rule.min_words, p.features) {
            (false, _) => Features::Words,
            (true, Features::Chars) => Features::Chars,
            (true, _) => Features::ExactOnly,
        }
    }

    /// Decides one record ([`decide_record`](Self::decide_record)), then fuses with its
    /// cluster the other clusters it verified against where complete linkage holds across
    /// both ([`fuse_clusters`](Self::fuse_clusters)).
    fn decide(
        &mut self,
        record: &Record,
        p: Prepared,
        found: Option<Presearched>,
        embedding: Option<Embedding>,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Outcome> {
        let mut fusable = None;
        let mut outcome =
            self.decide_record(record, p, found, embedding, now, batch, &mut fusable)?;
        let Some(fusable) = fusable.filter(|f: &Fusable| !f.matches.is_empty()) else {
            return Ok(outcome);
        };
        let rule = fusable.rule;
        let entries = self.fuse_clusters(&record.id, fusable, now, batch)?;
        let Some(last) = entries.last() else {
            return Ok(outcome);
        };
        // The record's cluster may have another survivor now: the outcome says which.
        let handle = self.by_id[record.id.as_str()];
        let survivor = self.meta[&handle].survivor;
        let survivor_id = self.meta[&survivor].id.to_string();
        match &mut outcome.decision {
            Decision::Merged { survivor: s, .. } => *s = survivor_id,
            Decision::Kept { .. } if survivor != handle => {
                outcome.decision = Decision::Merged {
                    survivor: survivor_id,
                    matched: last.matched.clone(),
                    rule,
                    scores: Scores {
                        cosine: last.cosine,
                        ..Scores::new(last.distance, last.jaccard)
                    },
                };
            }
            _ => {}
        }
        outcome.fused = entries.len();
        outcome.merges.extend(entries);
        Ok(outcome)
    }

    /// Decides one record: matched (exact tier, then verified candidates whose cluster it
    /// links to), stored, and merged into the cluster of its match, whose survivor it may
    /// displace. Leaves in `fusable` the verified matches in clusters it did not try to join
    /// (it joined one before them). One that joins none by Jaccard goes to the semantic
    /// stage, when it is on.
    #[allow(clippy::too_many_arguments)]
    fn decide_record(
        &mut self,
        record: &Record,
        mut p: Prepared,
        found: Option<Presearched>,
        embedding: Option<Embedding>,
        now: Timestamp,
        batch: &mut Batch,
        fusable: &mut Option<Fusable>,
    ) -> Result<Outcome> {
        let report = Report {
            fingerprint: Some(self.fingerprint_hex(p.fingerprint)),
            shingles: p.shingle_count,
            boilerplate_removed: p.boilerplate_removed,
            language: p.language.map(str::to_owned),
            code_fallback: p.code_fallback,
            host: p.host.take(),
        };
        if let Some(&h) = self.by_id.get(record.id.as_str()) {
            let decision = self.id_taken(record, &p, h);
            return Ok(report.outcome(record, decision, Vec::new(), Vec::new()));
        }
        let too_short = p.tokens < self.rule.min_words;
        let features = self.features_of(&p);

        // The exact tier, then SimHash candidates with verification.
        let mut pairs: Vec<VerifiedPair> = Vec::new();
        let matched = if let Some(&h) = self.by_content.get(&p.content_hash) {
            let matched = self.exact_match(&p, h)?;
            if self.collect_pairs {
                pairs.push(self.verified_pair(h, MergeRule::Exact, matched.scores));
            }
            Some(matched)
        } else if features != Features::ExactOnly {
            let (ok, failed) = match found {
                Some(Presearched { hits, known }) => {
                    let hits = self.complete_presearch(&p, hits);
                    self.verify_hits(&p, &hits, &known)?
                }
                None => self.verify_candidates(&p)?,
            };
            if self.collect_pairs {
                let rule = near_rule(features);
                pairs.extend(ok.iter().map(|&(h, s)| self.verified_pair(h, rule, s)));
            }
            let joined = self.join_cluster(&p, features, &ok, &failed, fusable)?;
            let (joined, failed) = match joined {
                None if features == Features::Words => {
                    self.semantic_match(&p, embedding.as_ref(), &ok, failed)?
                }
                joined => (joined, failed),
            };
            if let (true, Some(m)) = (self.collect_pairs, &joined) {
                if m.rule == MergeRule::SimhashSemantic {
                    pairs.push(self.verified_pair(m.handle, m.rule, m.scores));
                }
            }
            self.log_rejections(record, &failed, batch);
            joined
        } else {
            None
        };

        let (handle, survivor) = self.store_record(
            record,
            p,
            matched.as_ref(),
            embedding,
            report.host.clone(),
            now,
            batch,
        )?;
        let Some(matched) = matched else {
            let decision = Decision::Kept {
                too_short,
                displaced: None,
                joined: None,
            };
            return Ok(report.outcome(record, decision, Vec::new(), pairs));
        };
        let rule = matched.rule.as_str();
        // The survivor is the earliest first seen; ties go to the smallest id.
        let (new, old) = (&self.meta[&handle], &self.meta[&survivor]);
        if (new.first_seen, &*new.id) < (old.first_seen, &*old.id) {
            self.displace_survivor(handle, survivor, &matched.linkage, batch);
            let entry =
                self.merge_entry(handle, survivor, matched.handle, rule, matched.scores, now);
            batch.merges.push(entry.clone());
            let decision = Decision::Kept {
                too_short,
                displaced: Some(entry.merged.clone()),
                joined: Some((matched.rule, matched.scores, entry.matched.clone())),
            };
            return Ok(report.outcome(record, decision, vec![entry], pairs));
        }
        // `remember` already added the record to its survivor's members.
        let entry = self.merge_entry(survivor, handle, matched.handle, rule, matched.scores, now);
        batch.merges.push(entry.clone());
        let decision = Decision::Merged {
            survivor: entry.kept.clone(),
            matched: entry.matched.clone(),
            rule: matched.rule,
            scores: matched.scores,
        };
        Ok(report.outcome(record, decision, vec![entry], pairs))
    }

    /// The decision for a record whose id is stored already (as `h`): with the same text
    /// it is stored already, with another it is rejected.
    fn id_taken(&self, record: &Record, p: &Prepared, h: u64) -> Decision {
        let meta = &self.meta[&h];
        if meta.content_hash == p.content_hash {
            Decision::AlreadyStored {
                survivor: self.meta[&meta.survivor].id.to_string(),
            }
        } else {
            Decision::Rejected {
                reason: format!(
                    "duplicate id with different text: {:?} is already stored with another text (ids must be unique; the stored record is kept as it is)",
                    record.id
                ),
            }
        }
    }

    /// The match of a record whose text the stored record `h` has (the exact tier).
    fn exact_match(&self, p: &Prepared, h: u64) -> Result<Matched> {
        let distance = (self.meta[&h].fingerprint ^ p.fingerprint).count_ones();
        Ok(Matched {
            handle: h,
            rule: MergeRule::Exact,
            scores: Scores::new(distance, 1.0),
            linkage: Linked {
                linked: true,
                to_survivor: self.exact_copy_distance(p, h)?,
                ..Linked::default()
            },
        })
    }

    /// A pair the arriving record verified against the stored record `h`, for
    /// [`Outcome::pairs`].
    fn verified_pair(&self, h: u64, rule: MergeRule, scores: Scores) -> VerifiedPair {
        VerifiedPair {
            other: self.meta[&h].id.to_string(),
            rule,
            scores,
        }
    }

    /// Logs the nearest candidates that failed verification ([`MAX_LOGGED_REJECTIONS`]).
    fn log_rejections(&self, record: &Record, failed: &Scored, batch: &mut Batch) {
        for (h, s) in failed.iter().take(MAX_LOGGED_REJECTIONS) {
            batch.rejections.push(Rejection {
                record: record.id.clone(),
                candidate: self.meta[h].id.to_string(),
                distance: s.distance,
                jaccard: s.jaccard,
                cosine: s.cosine,
            });
        }
    }

    /// The verified candidate (of `ok`, best first) whose cluster the record joins, if any.
    /// Complete linkage: the record joins the cluster of its best verified match only if it
    /// verifies against every member, so no pair inside a cluster falls below the threshold
    /// through chaining (A~B and B~C but not A~C). Otherwise the next candidate's cluster is
    /// tried. Leaves in `fusable` the matches in clusters not tried.
    fn join_cluster(
        &mut self,
        p: &Prepared,
        features: Features,
        ok: &Scored,
        failed: &Scored,
        fusable: &mut Option<Fusable>,
    ) -> Result<Option<Matched>> {
        let link = self.link_for(features);
        let rule = near_rule(features);
        let mut scored: Scored = ok.iter().chain(failed).copied().collect();
        scored.sort_unstable_by_key(|&(h, _)| h);
        let mut tried: FastSet<u64> = Default::default();
        for (i, &(h, s)) in ok.iter().enumerate() {
            let survivor = self.meta[&h].survivor;
            if !tried.insert(survivor) {
                continue;
            }
            let l = self.links_to_all(p, survivor, link, &scored)?;
            self.learn_bounds(survivor, &l.learned);
            if l.linked {
                // Matches in clusters not tried: candidates to fuse with the one joined.
                *fusable = Some(Fusable {
                    matches: ok[i + 1..]
                        .iter()
                        .filter(|(h, _)| !tried.contains(&self.meta[h].survivor))
                        .copied()
                        .collect(),
                    link,
                    features,
                    rule,
                });
                return Ok(Some(Matched {
                    handle: h,
                    rule,
                    scores: s,
                    linkage: l,
                }));
            }
        }
        Ok(None)
    }

    /// Stores a decided record: a new handle, in the cluster of the record it `matched` (or
    /// one of its own), with its bound to the survivor, in the index, its set kept and the
    /// whole in `batch`, with its embedding where the semantic stage made one. Answers its
    /// handle and its survivor.
    #[allow(clippy::too_many_arguments)]
    fn store_record(
        &mut self,
        record: &Record,
        p: Prepared,
        matched: Option<&Matched>,
        embedding: Option<Embedding>,
        host: Option<String>,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<(u64, u64)> {
        let features = self.features_of(&p);
        let handle = self.next_handle;
        self.next_handle += 1;
        let arrival = match matched {
            Some(m) if m.rule == MergeRule::Exact => Arrival::Exact,
            Some(_) => Arrival::Near,
            None if p.tokens < self.rule.min_words => Arrival::TooShort,
            None => Arrival::New,
        };
        // The record's distance to its new survivor, bounded: measured by complete linkage,
        // or for an exact copy, that of the record it copies.
        let to_survivor = matched.and_then(|m| m.linkage.to_survivor);
        let indexed = features != Features::ExactOnly;
        let survivor = matched.map_or(handle, |m| self.meta[&m.handle].survivor);
        let stored = StoredRecord {
            handle,
            id: record.id.clone(),
            fingerprint: p.fingerprint,
            content_hash: p.content_hash,
            url: record.url.clone(),
            host,
            first_seen: record.first_seen.unwrap_or(now),
            retention_class: record.retention_class.clone(),
            survivor,
            arrival,
            tokens: p.tokens.min(u32::MAX as usize) as u32,
            language: p.language.map(str::to_owned),
            features,
        };
        // `remember` drops the cluster's radius; a bounded newcomer with the survivor's
        // features widens it instead.
        let radius = self.radius.get(&survivor).copied();
        self.remember(&stored);
        if let Some(text) = p.text {
            self.by_text.entry(text).or_insert(TextEntry {
                handle,
                generation: self.generation,
                tokens: p.tokens,
                shingle_count: p.shingle_count,
                boilerplate_removed: p.boilerplate_removed,
                language: p.language,
                code_fallback: p.code_fallback,
            });
        }
        if let (Some(d), true) = (to_survivor, survivor != handle) {
            let bound = Bound::new(survivor, d);
            self.meta.get_mut(&handle).expect("just stored").bound = bound;
            if let Some(r) = radius {
                if self.meta[&survivor].features == features {
                    self.radius.insert(survivor, r.max(bound.distance));
                }
            }
        }
        let kind = if self.indexes(handle, p.content_hash) {
            self.index_record(handle)?
        } else {
            None
        };
        if let Some(kind) = kind {
            // Later records of the window find this one by a scan, not in their presearch.
            self.group.push((handle, kind));
            self.group_fps.push(p.fingerprint as u64);
        }
        if indexed {
            self.sets.add_pending(handle, p.shingles.clone());
        }
        let embedding = embedding.filter(|_| features == Features::Words);
        if let Some(e) = &embedding {
            self.keep_embedding(handle, e.clone());
        }
        batch.records.push(NewRecord {
            record: stored,
            shingles: if indexed { p.shingles } else { Set::default() },
            embedding,
        });
        Ok((handle, survivor))
    }

    /// Makes the record just stored as `handle` the survivor of the cluster of `old`, which
    /// it joined (it was first seen earlier), with each member's bound to it: a member's
    /// distance to it is at most its distance to the old survivor plus the old survivor's to
    /// it, or what `linkage` measured.
    fn displace_survivor(&mut self, handle: u64, old: u64, linkage: &Linked, batch: &mut Batch) {
        let features = self.meta[&handle].features;
        let to_survivor = linkage.to_survivor;
        let compared = &linkage.compared[..];
        let mut moved = self.members.remove(&old).unwrap_or_default();
        moved.retain(|&h| h != handle);
        self.radius.remove(&old);
        let mut radius = Some(0.0f32);
        for &m in &moved {
            let measured = compared
                .binary_search_by_key(&m, |&(h, _)| h)
                .ok()
                .map(|at| compared[at].1);
            let through = to_survivor
                .zip(self.bound_to_survivor(m))
                .map(|(a, b)| a + b);
            let bound = match (measured, through) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let meta = self.meta.get_mut(&m).expect("member is stored");
            meta.survivor = handle;
            meta.bound = bound.map_or(Bound::NONE, |d| Bound::new(handle, d));
            if meta.features == features {
                radius = bound.and(radius).map(|r| r.max(meta.bound.distance));
            }
            batch.survivor_updates.push((m, handle));
        }
        self.meta.get_mut(&handle).expect("just stored").survivor = handle;
        if let Some(n) = batch.records.last_mut() {
            n.record.survivor = handle;
        }
        moved.push(handle);
        self.members.insert(handle, moved);
        match radius {
            Some(r) => self.radius.insert(handle, r),
            None => self.radius.remove(&handle),
        };
    }
}

/// The stored record a record matched, how, with which scores, and what complete linkage
/// measured on the way (for an exact copy, only the distance to the survivor).
pub(super) struct Matched {
    pub(super) handle: u64,
    pub(super) rule: MergeRule,
    pub(super) scores: Scores,
    pub(super) linkage: Linked,
}

/// The rule a verified SimHash match of records of `features` merges under.
fn near_rule(features: Features) -> MergeRule {
    if features == Features::Chars {
        MergeRule::CharsJaccard
    } else {
        MergeRule::SimhashJaccard
    }
}

/// What an [`Outcome`] reports of a record's analysis, whatever was decided.
struct Report {
    fingerprint: Option<String>,
    shingles: usize,
    boilerplate_removed: usize,
    language: Option<String>,
    code_fallback: bool,
    host: Option<String>,
}

impl Report {
    /// What a record that cannot be used reports.
    fn rejected(record: &Record) -> Report {
        Report {
            fingerprint: None,
            shingles: 0,
            boilerplate_removed: 0,
            language: None,
            code_fallback: false,
            host: record.effective_host(),
        }
    }

    fn outcome(
        self,
        record: &Record,
        decision: Decision,
        merges: Vec<MergeLogEntry>,
        pairs: Vec<VerifiedPair>,
    ) -> Outcome {
        Outcome {
            id: record.id.clone(),
            decision,
            fingerprint: self.fingerprint,
            merges,
            fused: 0,
            shingles: self.shingles,
            boilerplate_removed: self.boilerplate_removed,
            language: self.language,
            code_fallback: self.code_fallback,
            host: self.host,
            pairs,
        }
    }
}
