//! The semantic stage (seed 002, 5.2), on when [`Rule::semantic`](super::Rule::semantic)
//! is: every new record's sentence embedding is made (a window's at once) and stored with
//! it, and a record that joins no cluster by Jaccard is scored against its candidates
//! within the semantic radius, SimHash similarity and the embeddings' cosine combined. The
//! best candidate that reaches the threshold takes it into its cluster (merge rule
//! `simhash+semantic`, the cosine logged beside the distance and the Jaccard, so
//! `reevaluate` can replay the decision); the candidates that fail are logged as
//! rejections with their cosine.
//!
//! A semantic join is single linkage on the semantic score: the record joins its match's
//! cluster without the chain floor (a paraphrase shares few shingles with anyone), and it
//! fuses no clusters.

use super::analyze::{Analysed, Prepared};
use super::candidates::Scored;
use super::cluster::Linked;
use super::decide::Matched;
use super::sets::Embedding;
use super::{Deduper, MergeRule};
use crate::index::{HammingIndex, Match};
use crate::record::Record;
use crate::semantic::cosine;
use crate::store::{Features, Store};
use crate::verify::{id_jaccard, Scores};
use crate::Result;

/// The text a record's embedding is made from: its fields, in order, a blank line apart.
fn text_of(record: &Record) -> String {
    let mut text = String::new();
    for f in &record.fields {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&f.text);
    }
    text
}

impl<S: Store> Deduper<S> {
    /// The embeddings of a window's records that will be stored with word features and
    /// searched (not exact copies, not ids stored already), one model call for the window;
    /// `None` for the others, and for every record when the stage is off.
    pub(super) fn embed_window(
        &self,
        records: &[Record],
        prepared: &[Analysed],
    ) -> Result<Vec<Option<Embedding>>> {
        let mut out = vec![None; records.len()];
        let Some(embedder) = &self.embedder else {
            return Ok(out);
        };
        let wanted: Vec<usize> = records
            .iter()
            .zip(prepared)
            .enumerate()
            .filter(|(_, (record, p))| match p {
                Analysed::Done(Ok(p)) => {
                    self.features_of(p) == Features::Words && self.needs_search(record, p)
                }
                _ => false,
            })
            .map(|(i, _)| i)
            .collect();
        if wanted.is_empty() {
            return Ok(out);
        }
        let texts: Vec<String> = wanted.iter().map(|&i| text_of(&records[i])).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let embeddings = embedder.embed(&refs)?;
        for (i, e) in wanted.into_iter().zip(embeddings) {
            out[i] = Some(e.into());
        }
        Ok(out)
    }

    /// The embeddings of `handles`: those not committed yet or cached, the rest read from
    /// the store in one batch and cached.
    fn embeddings_of(&self, handles: &[u64]) -> Result<Vec<Option<Embedding>>> {
        self.embeddings
            .get_or_fetch(handles, |missing| self.store.embeddings_many(missing))
    }

    /// Keeps a stored record's embedding until its batch is committed.
    pub(super) fn keep_embedding(&mut self, handle: u64, embedding: Embedding) {
        self.embeddings.add_pending(handle, embedding);
    }

    /// The semantic stage for a record with word features that joined no cluster by
    /// Jaccard (`ok` and `failed`: its verified and failed candidates within
    /// `max_distance`): its match, if a candidate within the semantic radius passes the
    /// semantic rule, and the candidates that failed verification, each with its cosine
    /// where it was scored, nearest first.
    pub(super) fn semantic_match(
        &self,
        p: &Prepared,
        embedding: Option<&Embedding>,
        ok: &Scored,
        failed: Scored,
    ) -> Result<(Option<Matched>, Scored)> {
        let (Some(rule), Some(mine)) = (self.rule.semantic, embedding) else {
            return Ok((None, failed));
        };
        let bits = self.hasher.profile().bits().count();
        let mut hits: Vec<Match> = Vec::new();
        self.index.query_nearest_into(
            p.fingerprint as u64,
            rule.radius,
            self.rule.max_candidates,
            &mut hits,
        )?;
        // Every candidate within the radius, with the scores verification gave it.
        let mut scored: Scored = ok.iter().chain(&failed).copied().collect();
        let fresh: Vec<(u64, u32)> = hits
            .iter()
            .filter_map(|m| {
                let meta = self.meta.get(&m.id)?;
                let distance = (meta.fingerprint ^ p.fingerprint).count_ones();
                (distance <= rule.radius
                    && meta.features == Features::Words
                    && !scored.iter().any(|&(h, _)| h == m.id))
                .then_some((m.id, distance))
            })
            .collect();
        let handles: Vec<u64> = fresh.iter().map(|&(h, _)| h).collect();
        for ((h, distance), set) in fresh.into_iter().zip(self.shingle_sets(&handles)?) {
            if let Some(set) = set {
                scored.push((h, Scores::new(distance, id_jaccard(&p.shingles, &set))));
            }
        }
        // Candidates within the radius get their cosine (verification's within
        // `max_distance` may lie beyond a narrower radius: logged, not scored).
        let within: Vec<usize> = (0..scored.len())
            .filter(|&i| scored[i].1.distance <= rule.radius)
            .collect();
        let handles: Vec<u64> = within.iter().map(|&i| scored[i].0).collect();
        for (&i, theirs) in within.iter().zip(self.embeddings_of(&handles)?) {
            scored[i].1.cosine = theirs
                .filter(|t| t.len() == mine.len())
                .map(|t| cosine(mine, &t));
        }
        let score = |s: &Scores| {
            s.cosine.map_or(f64::NEG_INFINITY, |c| {
                rule.weights.score(s.distance, bits, c)
            })
        };
        let best = scored
            .iter()
            .filter(|(_, s)| rule.accepts(s.distance, bits, s.cosine))
            .max_by(|a, b| {
                score(&a.1)
                    .total_cmp(&score(&b.1))
                    .then(b.1.distance.cmp(&a.1.distance))
                    .then(b.0.cmp(&a.0))
            })
            .copied();
        let mut failed: Scored = scored
            .into_iter()
            .filter(|&(h, s)| {
                Some(h) != best.map(|b| b.0)
                    && (s.jaccard < self.rule.min_jaccard || s.distance > self.rule.max_distance)
            })
            .collect();
        failed.sort_by_key(|&(h, s)| (s.distance, h));
        let matched = best.map(|(handle, scores)| {
            let survivor = self.meta[&handle].survivor;
            Matched {
                handle,
                rule: MergeRule::SimhashSemantic,
                scores,
                linkage: Linked {
                    linked: true,
                    // The Jaccard distance to the survivor bounds the cluster's radius
                    // only where the match is the survivor.
                    to_survivor: (handle == survivor).then_some(1.0 - scores.jaccard),
                    ..Linked::default()
                },
            }
        });
        Ok((matched, failed))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::pipeline::tests::{doc, edit};
    use crate::pipeline::{Change, Decision, Rule};
    use crate::record::Timestamp;
    use crate::semantic::{Combined, Embed, SemanticRule};
    use crate::store::{MemoryStore, SqliteStore};
    use crate::Error;

    /// Embeddings by topic: a text's first word names it, and texts of one topic get one
    /// vector (the stage's mechanics, apart from any model; `tests/semantic.rs` and the
    /// CLI's tests run the real one).
    #[derive(Debug)]
    struct Topics;

    impl Embed for Topics {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts
                .iter()
                .map(|t| match t.split(' ').next() {
                    Some("alpha") => vec![1.0, 0.0, 0.0],
                    Some("beta") => vec![0.0, 1.0, 0.0],
                    _ => vec![0.0, 0.0, 1.0],
                })
                .collect())
        }
        fn dimensions(&self) -> usize {
            3
        }
        fn name(&self) -> String {
            "topics".into()
        }
    }

    /// `text` with `n` words replaced at other places than [`edit`]'s.
    fn rewrite(text: &str, n: usize) -> String {
        let mut words: Vec<String> = text.split(' ').map(str::to_owned).collect();
        let len = words.len();
        for i in 0..n {
            words[(i * 53 + 5) % len] = format!("other{i}");
        }
        words.join(" ")
    }

    /// Cosine alone decides, within 32 bits.
    fn cosine_rule() -> SemanticRule {
        SemanticRule {
            radius: 32,
            threshold: 0.95,
            weights: Combined {
                simhash_weight: 0.0,
                cosine_weight: 1.0,
            },
        }
    }

    fn rule() -> Rule {
        Rule {
            max_distance: 32,
            ..Rule::default()
        }
    }

    fn now() -> Timestamp {
        Timestamp::parse_rfc3339("2026-12-07T00:00:00Z").unwrap()
    }

    #[test]
    fn a_record_no_jaccard_match_takes_joins_its_semantic_match_and_reevaluate_replays_it() {
        let base = doc(1, 300);
        let records = [
            Record::new("a", format!("alpha {base}")),
            // A heavy rewrite of the same topic, and one of another topic.
            Record::new("para", format!("alpha {}", edit(&base, 90))),
            Record::new("other", format!("beta {}", rewrite(&base, 90))),
        ];
        let mut plain = Deduper::builder()
            .rule(rule())
            .open(MemoryStore::new())
            .unwrap();
        let out = plain.process(&records, now()).unwrap();
        assert!(
            out.iter()
                .all(|o| matches!(o.decision, Decision::Kept { .. })),
            "without the stage the rewrites stand alone: {out:?}"
        );

        let mut d = Deduper::builder()
            .rule(rule())
            .semantic(Arc::new(Topics), cosine_rule())
            .open(MemoryStore::new())
            .unwrap();
        let out = d.process(&records, now()).unwrap();
        let Decision::Merged {
            survivor,
            rule,
            scores,
            ..
        } = &out[1].decision
        else {
            panic!("{:?}", out[1].decision);
        };
        assert_eq!(
            (survivor.as_str(), *rule),
            ("a", MergeRule::SimhashSemantic)
        );
        assert!(scores.jaccard < 0.8, "{scores:?}");
        assert_eq!(scores.cosine, Some(1.0));
        assert!(
            matches!(out[2].decision, Decision::Kept { .. }),
            "{:?}",
            out[2]
        );
        // Logged: the merge with its cosine, the other topic's candidates with theirs.
        let mut log = Vec::new();
        d.store().merges(&mut |m| log.push(m)).unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(
            (log[0].rule.as_str(), log[0].cosine),
            ("simhash+semantic", Some(1.0))
        );
        let mut rejections = Vec::new();
        d.store().rejections(&mut |r| rejections.push(r)).unwrap();
        let of_other: Vec<_> = rejections.iter().filter(|r| r.record == "other").collect();
        assert!(!of_other.is_empty(), "{rejections:?}");
        assert!(
            of_other.iter().all(|r| r.cosine == Some(0.0)),
            "{of_other:?}"
        );
        let stored = d.store().embeddings_many(&[1, 2, 3]).unwrap();
        assert!(stored.iter().all(Option::is_some), "{stored:?}");

        // Re-judged from the log: the rule in force changes nothing, a Jaccard-only
        // re-evaluation leaves semantic merges alone, a stricter semantic rule splits.
        assert!(d
            .reevaluate_semantic(32, 0.8, Some(cosine_rule()))
            .unwrap()
            .is_empty());
        assert!(d.reevaluate(32, 0.8).unwrap().is_empty());
        let strict = SemanticRule {
            weights: Combined::default(),
            threshold: 0.99,
            ..cosine_rule()
        };
        let changes = d.reevaluate_semantic(32, 0.8, Some(strict)).unwrap();
        assert!(
            matches!(&changes[..], [Change::Split { record, .. }] if record == "para"),
            "{changes:?}"
        );
        // A looser one merges the other topic's rewrite, by the semantic rule.
        let loose = SemanticRule {
            threshold: -0.5,
            ..cosine_rule()
        };
        let changes = d.reevaluate_semantic(32, 0.8, Some(loose)).unwrap();
        assert!(
            matches!(&changes[..], [Change::Merge { record, rule: MergeRule::SimhashSemantic, .. }] if record == "other"),
            "{changes:?}"
        );
    }

    #[test]
    fn embeddings_are_read_back_from_the_store_by_a_later_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let base = doc(2, 300);
        let open = || {
            Deduper::builder()
                .rule(rule())
                .semantic(Arc::new(Topics), cosine_rule())
                .open(SqliteStore::open(&path).unwrap())
                .unwrap()
        };
        let first = open()
            .process(&[Record::new("a", format!("alpha {base}"))], now())
            .unwrap();
        assert!(matches!(first[0].decision, Decision::Kept { .. }));
        let mut d = open();
        let out = d
            .process(
                &[Record::new("para", format!("alpha {}", edit(&base, 90)))],
                now(),
            )
            .unwrap();
        assert!(
            matches!(&out[0].decision, Decision::Merged { survivor, rule: MergeRule::SimhashSemantic, .. } if survivor == "a"),
            "{:?}",
            out[0].decision
        );
    }

    #[test]
    fn candidates_beyond_a_narrow_radius_are_logged_as_without_the_stage() {
        let base = doc(1, 300);
        let records = [
            Record::new("a", format!("alpha {base}")),
            Record::new("para", format!("alpha {}", edit(&base, 90))),
        ];
        let rejections = |semantic: Option<SemanticRule>| {
            let builder = Deduper::builder().rule(rule());
            let builder = match semantic {
                Some(s) => builder.semantic(Arc::new(Topics), s),
                None => builder,
            };
            let mut d = builder.open(MemoryStore::new()).unwrap();
            let out = d.process(&records, now()).unwrap();
            assert!(matches!(out[1].decision, Decision::Kept { .. }), "{out:?}");
            let mut logged = Vec::new();
            d.store().rejections(&mut |r| logged.push(r)).unwrap();
            logged
        };
        let without = rejections(None);
        assert_eq!(without.len(), 1, "{without:?}");
        let narrow = SemanticRule {
            radius: 0,
            ..cosine_rule()
        };
        assert_eq!(rejections(Some(narrow)), without);
    }

    #[test]
    fn a_semantic_rule_without_a_model_is_refused() {
        let err = Deduper::builder()
            .rule(Rule {
                semantic: Some(SemanticRule::default()),
                ..Rule::default()
            })
            .open(MemoryStore::new())
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidConfig {
                    field: "semantic",
                    ..
                }
            ),
            "{err}"
        );
    }
}
