//! Re-deciding past merges under new thresholds from the stored scores (seed 000: "when the
//! threshold is later adjusted, past decisions can be re-evaluated from the stored scores
//! rather than by recomputing everything").
//!
//! With a semantic rule, merges the semantic stage made (`simhash+semantic`) are re-judged
//! too, and rejections logged with a cosine may pass it: the cosine was logged beside the
//! distance and the Jaccard, so no embedding is made again.

use super::{Deduper, MergeRule, Rule};
use crate::record::Timestamp;
use crate::semantic::SemanticRule;
use crate::store::{Batch, MergeLogEntry, Store};
use crate::verify::Scores;
use crate::Result;

/// One decision that a new rule would change.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A logged SimHash merge whose scores fail the new rule: the record would stand alone.
    Split {
        /// The merged record.
        record: String,
        /// Its cluster's survivor now.
        survivor: String,
        /// The logged scores.
        scores: Scores,
    },
    /// A logged verification rejection whose scores pass the new rule.
    Merge {
        /// The record that was kept apart.
        record: String,
        /// The candidate it would join.
        candidate: String,
        /// The logged scores.
        scores: Scores,
        /// The rule it passes: `simhash+jaccard`, else `simhash+semantic`.
        rule: MergeRule,
        /// Whether `--apply` can do it: only a record that is alone in its cluster moves;
        /// clusters are never fused automatically.
        applicable: bool,
    },
}

impl Change {
    /// `split` or `merge`.
    pub fn name(&self) -> &'static str {
        match self {
            Change::Split { .. } => "split",
            Change::Merge { .. } => "merge",
        }
    }

    /// The record whose decision changes.
    pub fn record(&self) -> &str {
        match self {
            Change::Split { record, .. } | Change::Merge { record, .. } => record,
        }
    }

    /// The other side: the survivor a split leaves, the candidate a merge joins.
    pub fn other(&self) -> &str {
        match self {
            Change::Split { survivor, .. } => survivor,
            Change::Merge { candidate, .. } => candidate,
        }
    }

    /// The logged scores.
    pub fn scores(&self) -> Scores {
        match self {
            Change::Split { scores, .. } | Change::Merge { scores, .. } => *scores,
        }
    }

    /// Whether applying does it (every split; merges of records alone in their cluster).
    pub fn applicable(&self) -> bool {
        match self {
            Change::Split { .. } => true,
            Change::Merge { applicable, .. } => *applicable,
        }
    }

    /// How many of `changes` are splits, merges, and merges that are not applicable.
    pub fn counts(changes: &[Change]) -> (usize, usize, usize) {
        let splits = changes.iter().filter(|c| c.name() == "split").count();
        let blocked = changes.iter().filter(|c| !c.applicable()).count();
        (splits, changes.len() - splits, blocked)
    }
}

impl<S: Store> Deduper<S> {
    /// The decisions the thresholds `max_distance` and `min_jaccard` would change, from the
    /// scores stored with past merges and rejections; nothing is recomputed or changed.
    /// Merges of the semantic stage are left as they are
    /// ([`reevaluate_semantic`](Self::reevaluate_semantic) re-judges them).
    ///
    /// # Errors
    /// Store failures.
    pub fn reevaluate(&self, max_distance: u32, min_jaccard: f64) -> Result<Vec<Change>> {
        self.reevaluate_semantic(max_distance, min_jaccard, None)
    }

    /// [`reevaluate`](Self::reevaluate) with a semantic rule: a pair passes when its
    /// logged scores pass the Jaccard test or, with a logged cosine, `semantic`. With a
    /// rule, the semantic stage's merges are re-judged as well.
    ///
    /// # Errors
    /// Store failures.
    pub fn reevaluate_semantic(
        &self,
        max_distance: u32,
        min_jaccard: f64,
        semantic: Option<SemanticRule>,
    ) -> Result<Vec<Change>> {
        let rule = Rule {
            max_distance,
            min_jaccard,
            semantic,
            ..self.rule
        };
        let bits = self.hasher.profile().bits().count();
        let passes = |s: &Scores| rule.accepts_any(*s, bits);
        let judged = |name: &str| {
            name == MergeRule::SimhashJaccard.as_str()
                || (semantic.is_some() && name == MergeRule::SimhashSemantic.as_str())
        };
        let mut changes = Vec::new();
        let mut merges: Vec<MergeLogEntry> = Vec::new();
        self.store.merges(&mut |m| merges.push(m))?;
        let mut seen = std::collections::HashSet::new();
        for m in merges.iter().rev() {
            // The newest entry about a record is its current state.
            if !seen.insert(m.merged.clone()) || !judged(&m.rule) {
                continue;
            }
            let Some(&h) = self.by_id.get(m.merged.as_str()) else {
                continue;
            };
            let survivor = self.meta[&h].survivor;
            if survivor == h {
                continue;
            }
            let scores = Scores {
                cosine: m.cosine,
                ..Scores::new(m.distance, m.jaccard)
            };
            if !passes(&scores) {
                changes.push(Change::Split {
                    record: m.merged.clone(),
                    survivor: self.meta[&survivor].id.to_string(),
                    scores,
                });
            }
        }
        let mut rejections = Vec::new();
        self.store.rejections(&mut |r| rejections.push(r))?;
        let mut proposed = std::collections::HashSet::new();
        for r in rejections {
            let scores = Scores {
                cosine: r.cosine,
                ..Scores::new(r.distance, r.jaccard)
            };
            let (Some(&a), Some(&b)) = (
                self.by_id.get(r.record.as_str()),
                self.by_id.get(r.candidate.as_str()),
            ) else {
                continue;
            };
            if !passes(&scores)
                || self.meta[&a].survivor == self.meta[&b].survivor
                || !proposed.insert(r.record.clone())
            {
                continue;
            }
            let alone = self
                .members
                .get(&self.meta[&a].survivor)
                .map_or(0, Vec::len)
                == 1;
            changes.push(Change::Merge {
                record: r.record,
                candidate: r.candidate,
                scores,
                rule: if rule.accepts(scores) {
                    MergeRule::SimhashJaccard
                } else {
                    MergeRule::SimhashSemantic
                },
                applicable: alone,
            });
        }
        Ok(changes)
    }

    /// Applies the changes [`reevaluate`](Self::reevaluate) proposed: split records stand
    /// alone and merge-log entries with rule `reverted` say so; applicable merges join the
    /// candidate's cluster (the earliest first seen surviving) with an entry of the rule
    /// they pass. Returns how many were applied.
    ///
    /// # Errors
    /// Store failures.
    pub fn apply_changes(&mut self, changes: &[Change], now: Timestamp) -> Result<usize> {
        self.exclusive(|d, batch| d.apply_changes_into(changes, now, batch))
    }

    fn apply_changes_into(
        &mut self,
        changes: &[Change],
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<usize> {
        let mut applied = 0;
        for change in changes {
            match change {
                Change::Split { record, scores, .. } => {
                    let Some(&h) = self.by_id.get(record.as_str()) else {
                        continue;
                    };
                    let old = self.meta[&h].survivor;
                    if old == h {
                        continue;
                    }
                    self.radius.remove(&old);
                    self.radius.remove(&h);
                    if let Some(m) = self.members.get_mut(&old) {
                        m.retain(|&x| x != h);
                    }
                    self.members.insert(h, vec![h]);
                    self.meta.get_mut(&h).expect("stored").survivor = h;
                    batch.survivor_updates.push((h, h));
                    let entry = self.merge_entry(old, h, old, "reverted", *scores, now);
                    batch.merges.push(entry);
                    applied += 1;
                }
                Change::Merge {
                    record,
                    candidate,
                    scores,
                    rule,
                    applicable: true,
                } => {
                    let (Some(&a), Some(&b)) = (
                        self.by_id.get(record.as_str()),
                        self.by_id.get(candidate.as_str()),
                    ) else {
                        continue;
                    };
                    if self.members.get(&a).map(Vec::len) != Some(1) {
                        continue;
                    }
                    let target = self.meta[&b].survivor;
                    let (ma, mt) = (&self.meta[&a], &self.meta[&target]);
                    let a_survives = (ma.first_seen, &*ma.id) < (mt.first_seen, &*mt.id);
                    self.radius.remove(&a);
                    self.radius.remove(&target);
                    self.members.remove(&a);
                    let mut members = self.members.remove(&target).unwrap_or_default();
                    members.push(a);
                    let survivor = if a_survives { a } else { target };
                    for &m in &members {
                        self.meta.get_mut(&m).expect("stored").survivor = survivor;
                        batch.survivor_updates.push((m, survivor));
                    }
                    self.members.insert(survivor, members);
                    let (kept, merged) = if a_survives { (a, target) } else { (target, a) };
                    let entry = self.merge_entry(kept, merged, b, rule.as_str(), *scores, now);
                    batch.merges.push(entry);
                    applied += 1;
                }
                Change::Merge { .. } => {}
            }
        }
        Ok(applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::tests::{doc, edit};
    use crate::pipeline::{Decision, Rule};
    use crate::record::Record;
    use crate::store::MemoryStore;

    #[test]
    fn stricter_rule_splits_and_looser_rule_merges_from_stored_scores() {
        let rule = Rule {
            max_distance: 32,
            ..Rule::default()
        };
        let mut d = Deduper::builder()
            .rule(rule)
            .open(MemoryStore::new())
            .unwrap();
        let a = doc(1, 300);
        let now = Timestamp::parse_rfc3339("2026-11-30T00:00:00Z").unwrap();
        let out = d
            .process(
                &[
                    Record::new("a", a.clone()),
                    Record::new("light", edit(&a, 4)),
                    Record::new("heavy", edit(&a, 30)),
                ],
                now,
            )
            .unwrap();
        assert!(matches!(out[1].decision, Decision::Merged { .. }));
        assert!(
            matches!(out[2].decision, Decision::Kept { .. }),
            "{:?}",
            out[2].decision
        );
        let light_j = match out[1].decision {
            Decision::Merged { scores, .. } => scores.jaccard,
            _ => unreachable!(),
        };
        // Nothing changes under the rule in force.
        assert!(d.reevaluate(32, 0.8).unwrap().is_empty());
        // A stricter Jaccard splits the light edit.
        let stricter = d.reevaluate(32, light_j + 0.01).unwrap();
        assert!(
            matches!(&stricter[..], [Change::Split { record, survivor, .. }] if record == "light" && survivor == "a"),
            "{stricter:?}"
        );
        // A looser one would merge the heavy edit, which stands alone, so it can be applied.
        let looser = d.reevaluate(32, 0.3).unwrap();
        assert!(
            matches!(&looser[..], [Change::Merge { record, applicable: true, .. }] if record == "heavy"),
            "{looser:?}"
        );
        assert_eq!(d.apply_changes(&looser, now).unwrap(), 1);
        assert_eq!(d.cluster_of("heavy").unwrap().survivor, "a");
        assert_eq!(d.apply_changes(&stricter, now).unwrap(), 1);
        assert_eq!(d.cluster_of("light").unwrap().survivor, "light");
        let mut log = Vec::new();
        d.store().merges(&mut |m| log.push(m)).unwrap();
        assert_eq!(log.last().unwrap().rule, "reverted");
    }
}
