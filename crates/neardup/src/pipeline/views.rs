//! Read-only views: a stored record, its cluster, sampled pairs inside a cluster, and the
//! counters of [`DedupStats`].

use super::{Deduper, FastSet, Rule, ShortText};
use crate::fingerprint::SimHasher;
use crate::index::{HammingIndex, IndexStats};
use crate::record::Timestamp;
use crate::store::{Features, Store};
use crate::verify::id_jaccard;
use crate::Result;

/// One stored record as the pipeline sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView {
    /// Its id.
    pub id: String,
    /// Its fingerprint, hex.
    pub fingerprint: String,
    /// Its cluster's survivor.
    pub survivor: String,
    /// When it was first seen.
    pub first_seen: Timestamp,
    /// Its source URL.
    pub url: Option<String>,
    /// Its retention class.
    pub retention_class: Option<String>,
    /// Whether the Hamming index holds it (not too short, not evicted by a window, not an
    /// exact copy of a record it holds).
    pub indexed: bool,
}

/// Per-cluster view for outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    /// The survivor's id.
    pub survivor: String,
    /// Every member's id (survivor first, then by first-seen and id).
    pub members: Vec<String>,
    /// Every member's source URL, in the same order, without repeats.
    pub source_urls: Vec<String>,
    /// The earliest first-seen time in the cluster.
    pub first_seen: Timestamp,
}

/// Two members of one cluster and the Jaccard similarity of their verification sets (see
/// [`Deduper::sample_cluster_pairs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterPair {
    /// One member's id.
    pub a: String,
    /// The other's.
    pub b: String,
    /// Their Jaccard similarity.
    pub jaccard: f64,
}

/// Sampled pairs of a cluster, weakest first, and the threshold its members were verified
/// at (see [`Deduper::sample_cluster_pairs`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterSample {
    /// The pairs, weakest first.
    pub pairs: Vec<ClusterPair>,
    /// The Jaccard threshold of the cluster's features: `min_jaccard` for word shingles,
    /// the short-text rule's for character n-grams.
    pub min_jaccard: f64,
}

/// Counters for reports and monitoring.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DedupStats {
    /// Records stored.
    pub records: usize,
    /// Clusters (survivors).
    pub clusters: usize,
    /// The largest cluster: thousands usually mean an empty identity field or an extraction
    /// failure, not real duplication (seed 000).
    pub largest_cluster: usize,
    /// The survivor of the largest cluster.
    pub largest_cluster_survivor: Option<String>,
    /// The Hamming index's shape (largest bucket, memory).
    pub index: IndexStats,
}

impl<S: Store> Deduper<S> {
    /// The rule in force.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The fingerprint profile.
    pub fn hasher(&self) -> &SimHasher {
        &self.hasher
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Each distinct URL of a cluster once, in member order (survivor first).
    fn cluster_urls(&self, survivor: u64) -> Vec<String> {
        let mut seen: FastSet<&str> = FastSet::default();
        self.ordered_members(survivor)
            .into_iter()
            .filter_map(|h| self.meta[&h].url.as_deref())
            .filter(|u| seen.insert(u))
            .map(str::to_owned)
            .collect()
    }

    /// Members of a cluster: survivor first, then by (first seen, id).
    fn ordered_members(&self, survivor: u64) -> Vec<u64> {
        let mut m: Vec<u64> = self.members.get(&survivor).cloned().unwrap_or_default();
        m.sort_by(|a, b| {
            let (ma, mb) = (&self.meta[a], &self.meta[b]);
            (*a != survivor)
                .cmp(&(*b != survivor))
                .then(ma.first_seen.cmp(&mb.first_seen))
                .then(ma.id.cmp(&mb.id))
        });
        m
    }

    /// The cluster of a stored record.
    pub fn cluster_of(&self, id: &str) -> Option<ClusterView> {
        let h = *self.by_id.get(id)?;
        let survivor = self.meta[&h].survivor;
        let members = self.ordered_members(survivor);
        Some(ClusterView {
            survivor: self.meta[&survivor].id.to_string(),
            first_seen: members
                .iter()
                .map(|m| self.meta[m].first_seen)
                .min()
                .unwrap_or(self.meta[&survivor].first_seen),
            source_urls: self.cluster_urls(survivor),
            members: members
                .iter()
                .map(|m| self.meta[m].id.to_string())
                .collect(),
        })
    }

    /// A sample of the pairs inside the cluster of `id`, weakest first: up to `texts` of its
    /// distinct texts (spread evenly over its members, survivor first) and every pair among
    /// them, measured exactly. A cluster is only as sound as its weakest pairs: under single
    /// linkage a chain can hold pairs far under the verification threshold, and a cluster
    /// whose pairs mostly fall under it is usually a template or an extraction failure, not
    /// duplication. Answers the pairs with the threshold the cluster was verified at.
    /// Members of other features than the survivor's (short records'
    /// character n-grams) and members whose sets are gone are left out. Empty for an id not
    /// stored or a cluster of one text.
    ///
    /// # Errors
    /// Store failures reading the sets.
    pub fn sample_cluster_pairs(&self, id: &str, texts: usize) -> Result<ClusterSample> {
        let Some(&h) = self.by_id.get(id) else {
            return Ok(ClusterSample::default());
        };
        let survivor = self.meta[&h].survivor;
        let features = self.meta[&survivor].features;
        let min_jaccard = match (features, self.rule.short_text) {
            (Features::Chars, ShortText::CharNgrams { min_jaccard, .. }) => min_jaccard,
            (Features::ExactOnly, _) => return Ok(ClusterSample::default()),
            _ => self.rule.min_jaccard,
        };
        let mut members = self.ordered_members(survivor);
        if members.is_empty() {
            members.push(survivor);
        }
        let distinct = self.texts_of(
            members
                .into_iter()
                .filter(|m| self.meta[m].features == features),
        );
        // All of them, or `texts` spread from the first to the last.
        let n = distinct.len();
        let picked: Vec<u64> = if n <= texts {
            distinct.iter().map(|&(m, _)| m).collect()
        } else {
            let k = texts.max(2);
            (0..k).map(|i| distinct[i * (n - 1) / (k - 1)].0).collect()
        };
        let sets = self.shingle_sets(&picked)?;
        let mut pairs = Vec::new();
        for (i, (a, sa)) in picked.iter().zip(&sets).enumerate() {
            let Some(sa) = sa else { continue };
            for (b, sb) in picked[i + 1..].iter().zip(&sets[i + 1..]) {
                let Some(sb) = sb else { continue };
                pairs.push(ClusterPair {
                    a: self.meta[a].id.to_string(),
                    b: self.meta[b].id.to_string(),
                    jaccard: id_jaccard(sa, sb),
                });
            }
        }
        pairs.sort_by(|x, y| x.jaccard.total_cmp(&y.jaccard));
        Ok(ClusterSample { pairs, min_jaccard })
    }

    /// The survivor of a stored record's cluster (the record itself when it survives) and
    /// the cluster's size, without listing the members.
    pub fn survivor_of(&self, id: &str) -> Option<(&str, usize)> {
        let h = *self.by_id.get(id)?;
        let survivor = self.meta[&h].survivor;
        let size = self.members.get(&survivor).map_or(1, Vec::len);
        Some((&self.meta[&survivor].id, size))
    }

    /// What the pipeline knows of a stored record.
    pub fn record(&self, id: &str) -> Option<RecordView> {
        let h = *self.by_id.get(id)?;
        let m = &self.meta[&h];
        Some(RecordView {
            id: m.id.to_string(),
            fingerprint: self.fingerprint_hex(m.fingerprint),
            survivor: self.meta[&m.survivor].id.to_string(),
            first_seen: m.first_seen,
            url: m.url.as_deref().map(str::to_owned),
            retention_class: m.retention_class.as_deref().map(str::to_owned),
            indexed: match m.features {
                Features::Words => self.index.get(h).is_some(),
                Features::Chars => self.short_index.get(h).is_some(),
                Features::ExactOnly => false,
            },
        })
    }

    /// The number of stored records.
    pub fn len(&self) -> usize {
        self.meta.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.meta.is_empty()
    }

    /// Whether `id` is stored.
    pub fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Counters for the report and `/metrics`.
    pub fn stats(&self) -> DedupStats {
        let largest = self
            .members
            .iter()
            .max_by_key(|(s, m)| (m.len(), std::cmp::Reverse(**s)));
        DedupStats {
            records: self.meta.len(),
            clusters: self.members.len(),
            largest_cluster: largest.map_or(0, |(_, m)| m.len()),
            largest_cluster_survivor: largest.map(|(s, _)| self.meta[s].id.to_string()),
            index: self.index.stats(),
        }
    }

    /// Every cluster whose survivor is one of `ids` (or every cluster, for `None`), in
    /// survivor handle order.
    pub fn clusters(&self) -> Vec<ClusterView> {
        let mut survivors: Vec<u64> = self.members.keys().copied().collect();
        survivors.sort_unstable();
        survivors
            .into_iter()
            .filter_map(|s| self.cluster_of(&self.meta[&s].id))
            .collect()
    }

    /// The stored fingerprint (hex) of a record.
    pub fn fingerprint_of(&self, id: &str) -> Option<String> {
        let h = self.by_id.get(id)?;
        Some(self.fingerprint_hex(self.meta[h].fingerprint))
    }
}
