//! The decision: each record of a batch, in input order, is matched (exact tier, then
//! verified SimHash candidates its cluster links with), stored, and merged into its
//! cluster, which it may fuse with others; its [`Outcome`] says what happened.

use rayon::prelude::*;

use super::analyze::{with_scratch, Analysed, Prepared, TextEntry};
use super::candidates::{Presearched, Scored, MAX_LOGGED_REJECTIONS};
use super::cluster::{Bound, Fusable, Link, Linked};
use super::sets::Set;
use super::{Decision, Deduper, FastSet, Linkage, MergeRule, ShortText};
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
const PARALLEL_PRESEARCH_MIN: usize = 64;

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

    pub(super) fn decide_all(
        &mut self,
        records: &[Record],
        prepared: Vec<Analysed>,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Vec<Outcome>> {
        let mut outcomes = Vec::with_capacity(records.len());
        let mut prepared = prepared.into_iter();
        for window in records.chunks(PRESEARCH_WINDOW) {
            let window_prepared: Vec<Analysed> = prepared.by_ref().take(window.len()).collect();
            self.decide_window(window, window_prepared, now, batch, &mut outcomes)?;
        }
        Ok(outcomes)
    }

    /// Decides a window of records in order. Their searches among the records stored
    /// before the window run first, in parallel ([`presearch`](Self::presearch)); each
    /// decision then adds the records decided before it in the window
    /// ([`complete_presearch`](Self::complete_presearch)), so the outcome is exactly that
    /// of deciding one record after the other.
    fn decide_window(
        &mut self,
        records: &[Record],
        mut prepared: Vec<Analysed>,
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
        let found: Vec<Option<Presearched>> = if records.len() >= PARALLEL_PRESEARCH_MIN {
            self.presearch_window(records, &prepared)?
        } else {
            Vec::new()
        };
        let mut found = found.into_iter();
        self.group.clear();
        self.group_fps.clear();
        for (record, prepared) in records.iter().zip(prepared) {
            let found = found.next().flatten();
            let outcome = match self.settle(record, prepared)? {
                Err(reason) => Outcome {
                    id: record.id.clone(),
                    decision: Decision::Rejected { reason },
                    fingerprint: None,
                    merges: Vec::new(),
                    fused: 0,
                    shingles: 0,
                    boilerplate_removed: 0,
                    language: None,
                    host: record.effective_host(),
                    pairs: Vec::new(),
                },
                Ok(p) => self.decide(record, p, found, now, batch)?,
            };
            outcomes.push(outcome);
        }
        self.group.clear();
        self.group_fps.clear();
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
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Outcome> {
        let mut fusable = None;
        let mut outcome = self.decide_record(record, p, found, now, batch, &mut fusable)?;
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
                        distance: last.distance,
                        jaccard: last.jaccard,
                    },
                };
            }
            _ => {}
        }
        outcome.fused = entries.len();
        outcome.merges.extend(entries);
        Ok(outcome)
    }

    /// Decides one record; leaves in `fusable` the verified matches in clusters it did not
    /// try to join (it joined one before them).
    fn decide_record(
        &mut self,
        record: &Record,
        mut p: Prepared,
        found: Option<Presearched>,
        now: Timestamp,
        batch: &mut Batch,
        fusable: &mut Option<Fusable>,
    ) -> Result<Outcome> {
        let fingerprint = self.fingerprint_hex(p.fingerprint);
        let (shingles, boilerplate_removed) = (p.shingle_count, p.boilerplate_removed);
        let language = p.language.map(str::to_owned);
        let host = p.host.take();
        if let Some(&h) = self.by_id.get(record.id.as_str()) {
            let meta = &self.meta[&h];
            let decision = if meta.content_hash == p.content_hash {
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
            };
            return Ok(Outcome {
                id: record.id.clone(),
                decision,
                fingerprint: Some(fingerprint),
                merges: Vec::new(),
                fused: 0,
                shingles,
                boilerplate_removed,
                language,
                host,
                pairs: Vec::new(),
            });
        }
        let first_seen = record.first_seen.unwrap_or(now);
        let too_short = p.tokens < self.rule.min_words;
        let features = self.features_of(&p);
        let near_rule = if features == Features::Chars {
            MergeRule::CharsJaccard
        } else {
            MergeRule::SimhashJaccard
        };

        // The exact tier, then SimHash candidates with verification.
        let mut matched: Option<(u64, MergeRule, Scores)> = None;
        let mut linkage: Option<Linked> = None;
        let mut pairs: Vec<VerifiedPair> = Vec::new();
        if let Some(&h) = self.by_content.get(&p.content_hash) {
            let distance = (self.meta[&h].fingerprint ^ p.fingerprint).count_ones();
            let scores = Scores {
                distance,
                jaccard: 1.0,
            };
            matched = Some((h, MergeRule::Exact, scores));
            if self.collect_pairs {
                pairs.push(VerifiedPair {
                    other: self.meta[&h].id.to_string(),
                    rule: MergeRule::Exact,
                    scores,
                });
            }
        } else if features != Features::ExactOnly {
            let (ok, failed) = match found {
                Some(Presearched { hits, known }) => {
                    let hits = self.complete_presearch(&p, hits);
                    self.verify_hits(&p, &hits, &known)?
                }
                None => self.verify_candidates(&p)?,
            };
            if self.collect_pairs {
                pairs.extend(ok.iter().map(|&(h, scores)| VerifiedPair {
                    other: self.meta[&h].id.to_string(),
                    rule: near_rule,
                    scores,
                }));
            }
            for (h, s) in failed.iter().take(MAX_LOGGED_REJECTIONS) {
                batch.rejections.push(Rejection {
                    record: record.id.clone(),
                    candidate: self.meta[h].id.to_string(),
                    distance: s.distance,
                    jaccard: s.jaccard,
                });
            }
            // Complete linkage: the record joins the cluster of its best verified match
            // only if it verifies against every member, so no pair inside a cluster falls
            // below the threshold through chaining (A~B and B~C but not A~C). Otherwise the
            // next candidate's cluster is tried.
            let link = match (features, self.rule.short_text) {
                _ if self.rule.linkage == Linkage::Single => Link {
                    floor: self.rule.chain_floor,
                    ..Link::SINGLE
                },
                (Features::Chars, ShortText::CharNgrams { min_jaccard, .. }) => Link {
                    floor: min_jaccard,
                    verify: min_jaccard,
                    quorum: 0.0,
                },
                _ => Link {
                    floor: self.rule.min_cluster_jaccard,
                    verify: self.rule.min_jaccard,
                    quorum: self.rule.cluster_quorum,
                },
            };
            let mut scored: Scored = ok.iter().chain(&failed).copied().collect();
            scored.sort_unstable_by_key(|&(h, _)| h);
            let mut tried: FastSet<u64> = Default::default();
            for (i, &(h, s)) in ok.iter().enumerate() {
                let survivor = self.meta[&h].survivor;
                if !tried.insert(survivor) {
                    continue;
                }
                let l = self.links_to_all(&p, survivor, link, &scored)?;
                self.learn_bounds(survivor, &l.learned);
                if l.linked {
                    matched = Some((h, near_rule, s));
                    linkage = Some(l);
                    // Matches in clusters not tried: candidates to fuse with the one joined.
                    *fusable = Some(Fusable {
                        matches: ok[i + 1..]
                            .iter()
                            .filter(|(h, _)| !tried.contains(&self.meta[h].survivor))
                            .copied()
                            .collect(),
                        link,
                        features,
                        rule: near_rule,
                    });
                    break;
                }
            }
        }
        // The record's distance to its new survivor, bounded: measured by complete linkage,
        // or for an exact copy, that of the record it copies.
        let to_survivor = match (&matched, &linkage) {
            (Some((h, MergeRule::Exact, _)), _) => self.exact_copy_distance(&p, *h)?,
            (Some(_), Some(l)) => l.to_survivor,
            _ => None,
        };

        let handle = self.next_handle;
        self.next_handle += 1;
        let arrival = match (&matched, too_short) {
            (Some((_, MergeRule::Exact, _)), _) => Arrival::Exact,
            (Some(_), _) => Arrival::Near,
            (None, true) => Arrival::TooShort,
            (None, false) => Arrival::New,
        };
        let indexed = features != Features::ExactOnly;
        let survivor = matched.map_or(handle, |(h, _, _)| self.meta[&h].survivor);
        let stored = StoredRecord {
            handle,
            id: record.id.clone(),
            fingerprint: p.fingerprint,
            content_hash: p.content_hash,
            url: record.url.clone(),
            host: host.clone(),
            first_seen,
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
        batch.records.push(NewRecord {
            record: stored,
            shingles: if indexed { p.shingles } else { Set::default() },
        });

        let Some((matched_handle, rule, scores)) = matched else {
            return Ok(Outcome {
                id: record.id.clone(),
                decision: Decision::Kept {
                    too_short,
                    displaced: None,
                    joined: None,
                },
                fingerprint: Some(fingerprint),
                merges: Vec::new(),
                fused: 0,
                shingles,
                boilerplate_removed,
                language,
                host,
                pairs: std::mem::take(&mut pairs),
            });
        };
        let matched_id = self.meta[&matched_handle].id.to_string();
        let at = now.to_rfc3339();
        // The survivor is the earliest first seen; ties go to the smallest id.
        let old = &self.meta[&survivor];
        let displaces = (first_seen, record.id.as_str()) < (old.first_seen, &*old.id);
        if displaces {
            let old_id = old.id.to_string();
            let old_fp = self.fingerprint_hex(old.fingerprint);
            let old_urls = self.own_urls(survivor);
            let mut moved = self.members.remove(&survivor).unwrap_or_default();
            moved.retain(|&h| h != handle);
            // Bounds to the new survivor: a member's distance to it is at most its distance
            // to the old survivor plus the old survivor's to it, or what linkage measured.
            let compared = linkage.as_ref().map_or(&[][..], |l| &l.compared[..]);
            self.radius.remove(&survivor);
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
            let entry = MergeLogEntry {
                kept: record.id.clone(),
                merged: old_id.clone(),
                merged_fingerprint: old_fp,
                rule: rule.as_str().into(),
                distance: scores.distance,
                jaccard: scores.jaccard,
                matched: matched_id,
                source_urls: old_urls,
                at,
            };
            batch.merges.push(entry.clone());
            return Ok(Outcome {
                id: record.id.clone(),
                decision: Decision::Kept {
                    too_short,
                    displaced: Some(old_id),
                    joined: Some((rule, scores, entry.matched.clone())),
                },
                fingerprint: Some(fingerprint),
                merges: vec![entry],
                fused: 0,
                shingles,
                boilerplate_removed,
                language,
                host,
                pairs: std::mem::take(&mut pairs),
            });
        }
        // `remember` already added the record to its survivor's members.
        let survivor_id = self.meta[&survivor].id.to_string();
        let entry = MergeLogEntry {
            kept: survivor_id.clone(),
            merged: record.id.clone(),
            merged_fingerprint: fingerprint.clone(),
            rule: rule.as_str().into(),
            distance: scores.distance,
            jaccard: scores.jaccard,
            matched: matched_id.clone(),
            source_urls: record.url.iter().cloned().collect(),
            at,
        };
        batch.merges.push(entry.clone());
        Ok(Outcome {
            id: record.id.clone(),
            decision: Decision::Merged {
                survivor: survivor_id,
                matched: matched_id,
                rule,
                scores,
            },
            fingerprint: Some(fingerprint),
            merges: vec![entry],
            fused: 0,
            shingles,
            boilerplate_removed,
            language,
            host,
            pairs,
        })
    }
}
