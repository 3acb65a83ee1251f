//! [`DeduperBuilder`]: opens a [`Deduper`] over a store, checks the store's profile and
//! rebuilds the in-memory state and the index from what the store holds.

use std::collections::HashMap;
use std::sync::Arc;

use super::analyze::next_generation;
use super::boilerplate::HostState;
use super::{sets, Deduper, FastMap, Rule, ShortText};
use crate::fingerprint::SimHasher;
use crate::index::AutoIndex;
use crate::semantic::{Embed, SemanticRule};
use crate::store::{Features, Store};
use crate::text::TokenRule;
use crate::{Error, Result};

/// Builds a [`Deduper`].
#[derive(Debug, Clone)]
pub struct DeduperBuilder {
    hasher: SimHasher,
    /// `None`: [`Rule::default`], with the hasher's tokens' default Jaccard threshold.
    rule: Option<Rule>,
    expected_records: u64,
    set_cache_bytes: u64,
    semantic: Option<(Arc<dyn Embed>, SemanticRule)>,
}

/// How much memory the semantic stage's embeddings read back from a store may keep: 64
/// MiB, about 44,000 embeddings of 384 dimensions.
const EMBEDDING_CACHE_BYTES: u64 = 64 << 20;

/// How much memory the verification sets read back from a store may keep by default.
pub const DEFAULT_SET_CACHE_BYTES: u64 = 256 << 20;

impl DeduperBuilder {
    setters! {
        /// The fingerprint profile.
        hasher(hasher: SimHasher);

        /// The decision thresholds. Without one, [`Rule::default`] with the threshold
        /// [`default_min_jaccard`](super::default_min_jaccard) gives the hasher's tokens (a
        /// code mode hasher's is [`DEFAULT_CODE_MIN_JACCARD`](super::DEFAULT_CODE_MIN_JACCARD)).
        rule(rule: Rule) => Some;

        /// How many records the index should be laid out for (beyond those stored).
        expected_records(expected_records: u64);

        /// How many bytes of verification sets read back from the store are kept in memory for
        /// the next candidate that needs them (default [`DEFAULT_SET_CACHE_BYTES`]; 0 for none).
        /// Unused with a store that keeps its sets in memory itself.
        set_cache_bytes(set_cache_bytes: u64);
    }

    /// Turns the semantic stage on ([`Rule::semantic`]), with `embedder` making each new
    /// record's embedding; it takes the place of any semantic rule [`rule`](Self::rule)
    /// gives.
    pub fn semantic(mut self, embedder: Arc<dyn Embed>, rule: SemanticRule) -> Self {
        self.semantic = Some((embedder, rule));
        self
    }

    /// Opens the pipeline over `store`: checks the profile and rebuilds the index.
    ///
    /// # Errors
    /// [`Error::ConfigMismatch`] when the store holds fingerprints of another profile;
    /// [`Error::InvalidConfig`] for bad thresholds, or a semantic rule without an embedder;
    /// store failures.
    pub fn open<S: Store>(self, mut store: S) -> Result<Deduper<S>> {
        let mut rule = self.rule.unwrap_or_else(|| Rule {
            min_jaccard: super::default_min_jaccard(self.hasher.token_rule()),
            ..Rule::default()
        });
        let embedder = match self.semantic {
            Some((embedder, semantic)) => {
                rule.semantic = Some(semantic);
                Some(embedder)
            }
            None if rule.semantic.is_some() => {
                return Err(Error::InvalidConfig {
                    field: "semantic",
                    value: format!("{:?}", rule.semantic),
                    reason: "the semantic stage needs a model: DeduperBuilder::semantic".into(),
                })
            }
            None => None,
        };
        rule.validate()?;
        let short_hasher = match rule.short_text {
            ShortText::ExactOnly => None,
            ShortText::CharNgrams { width, .. } => Some(
                SimHasher::builder()
                    .tokens(TokenRule::Characters)
                    .shingle_width(width)
                    .bits(self.hasher.profile().bits())
                    .build()?,
            ),
        };
        let profiles = [
            ("profile", Some(self.hasher.profile())),
            (
                "short_profile",
                short_hasher.as_ref().map(SimHasher::profile),
            ),
        ];
        for (key, profile) in profiles {
            let current = profile.map_or_else(|| "exact-only".to_owned(), |p| p.to_string());
            match store.meta(key)? {
                Some(stored) if stored != current && !profile.is_some_and(|p| p.reads(&stored)) => {
                    return Err(Error::ConfigMismatch { stored, current })
                }
                Some(_) => {}
                None => store.set_meta(key, &current)?,
            }
        }
        let mut stored = Vec::new();
        store.load(&mut |r| stored.push(r))?;
        let expected = self.expected_records.max(stored.len() as u64).max(1024);
        let short_radius = match rule.short_text {
            ShortText::CharNgrams { max_distance, .. } => max_distance,
            ShortText::ExactOnly => 0,
        };
        let store_sets_in_memory = store.sets_in_memory();
        let mut d = Deduper {
            collect_pairs: false,
            hasher: self.hasher,
            short_hasher,
            rule,
            store,
            index_planned_for: expected,
            index: AutoIndex::for_size(expected, rule.index_radius())?,
            short_index: AutoIndex::for_size(1024, short_radius)?,
            short_planned_for: 1024,
            meta: FastMap::with_capacity_and_hasher(stored.len(), Default::default()),
            by_id: FastMap::with_capacity_and_hasher(stored.len(), Default::default()),
            by_content: FastMap::with_capacity_and_hasher(stored.len(), Default::default()),
            by_text: FastMap::default(),
            members: FastMap::default(),
            radius: FastMap::default(),
            hosts: HashMap::new(),
            furniture: Arc::default(),
            generation: next_generation(),
            next_handle: 1,
            sets: sets::Sets::new(if store_sets_in_memory {
                0
            } else {
                self.set_cache_bytes
            }),
            embeddings: sets::Sets::new(if embedder.is_some() {
                EMBEDDING_CACHE_BYTES
            } else {
                0
            }),
            embedder,
            group: Vec::new(),
            group_fps: Vec::new(),
            window_queue: None,
            poisoned: false,
            behind: None,
        };
        let (mut words, mut chars) = (Vec::new(), Vec::new());
        for r in stored {
            d.next_handle = d.next_handle.max(r.handle + 1);
            d.remember(&r);
            if !d.indexes(r.handle, r.content_hash) {
                continue;
            }
            match r.features {
                Features::Words => words.push((r.handle, r.fingerprint as u64)),
                Features::Chars => chars.push((r.handle, r.fingerprint as u64)),
                Features::ExactOnly => {}
            }
        }
        if chars.len() > 1024 {
            d.short_planned_for = chars.len() as u64 * 2;
            d.short_index = AutoIndex::for_size(d.short_planned_for, short_radius)?;
        }
        d.index.extend(words)?;
        d.short_index.extend(chars)?;
        for (host, b) in d.store.boilerplate()? {
            d.hosts.insert(host, HostState::new(b));
        }
        d.furnish();
        Ok(d)
    }
}

impl Deduper<crate::store::MemoryStore> {
    /// A builder with the default profile and rule.
    pub fn builder() -> DeduperBuilder {
        DeduperBuilder {
            hasher: SimHasher::builder()
                .build()
                .expect("the default profile is valid"),
            rule: None,
            expected_records: 0,
            set_cache_bytes: DEFAULT_SET_CACHE_BYTES,
            semantic: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{DEFAULT_CODE_MIN_JACCARD, DEFAULT_MIN_JACCARD};
    use crate::text::CodeLang;
    use crate::MemoryStore;

    fn opened(tokens: TokenRule, rule: Option<Rule>) -> Rule {
        let hasher = SimHasher::builder().tokens(tokens).build().expect("valid");
        let builder = Deduper::builder().hasher(hasher);
        let builder = match rule {
            Some(rule) => builder.rule(rule),
            None => builder,
        };
        builder.open(MemoryStore::new()).expect("opens").rule()
    }

    #[test]
    fn the_default_threshold_follows_the_tokens_and_a_rule_given_is_kept() {
        assert_eq!(
            opened(TokenRule::Unicode, None).min_jaccard,
            DEFAULT_MIN_JACCARD
        );
        for code in [TokenRule::Code(CodeLang::Java), TokenRule::CodeAuto] {
            assert_eq!(opened(code, None).min_jaccard, DEFAULT_CODE_MIN_JACCARD);
            assert_eq!(
                opened(code, None).max_distance,
                Rule::default().max_distance
            );
            let given = Rule {
                min_jaccard: 0.9,
                ..Rule::default()
            };
            assert_eq!(opened(code, Some(given)), given);
        }
    }
}
