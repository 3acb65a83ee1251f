//! What the deduper keeps in memory of each stored record ([`Meta`]), and the maps around
//! it: by id, by text for the exact tier, by survivor for clusters, in the index.

use std::sync::Arc;

use super::candidates::IndexKind;
use super::cluster::Bound;
use super::Deduper;
use crate::fingerprint::FingerprintBits;
use crate::index::HammingIndex;
use crate::record::Timestamp;
use crate::store::{Features, MergeLogEntry, Store, StoredRecord};
use crate::verify::Scores;
use crate::Result;

/// What the pipeline keeps in memory per record.
#[derive(Debug, Clone)]
pub(super) struct Meta {
    pub(super) id: Arc<str>,
    pub(super) survivor: u64,
    pub(super) first_seen: Timestamp,
    pub(super) url: Option<Box<str>>,
    pub(super) content_hash: u128,
    pub(super) fingerprint: u128,
    pub(super) retention_class: Option<Arc<str>>,
    pub(super) features: Features,
    /// An upper bound on the record's Jaccard distance to its survivor, for complete linkage.
    pub(super) bound: Bound,
}

impl<S: Store> Deduper<S> {
    /// Whether the stored record `h` of content hash `content` is the one its text is
    /// indexed under: the record the exact tier finds for that text (the first stored).
    /// Its exact copies stay out of the Hamming index: they are in its cluster, with its
    /// fingerprint and set (analysed under the same boilerplate), so a record near them is
    /// near it, and they only crowded its buckets and every candidate list it was on (a
    /// quarter of the 1 GB bench corpus's records are exact copies).
    pub(super) fn indexes(&self, h: u64, content: u128) -> bool {
        self.by_content.get(&content) == Some(&h)
    }

    /// Puts the stored record `h` in the Hamming index of its features (if any); answers
    /// which.
    pub(super) fn index_record(&mut self, h: u64) -> Result<Option<IndexKind>> {
        let m = &self.meta[&h];
        let fingerprint = m.fingerprint as u64;
        Ok(match m.features {
            Features::Words => {
                self.index.insert(h, fingerprint)?;
                Some(IndexKind::Words)
            }
            Features::Chars => {
                self.short_index.insert(h, fingerprint)?;
                Some(IndexKind::Chars)
            }
            Features::ExactOnly => None,
        })
    }

    /// Whether a sliding window has taken the stored record `h` out of the index and the
    /// exact tier (see [`evict_from_index_before`](Self::evict_from_index_before)).
    pub(super) fn evicted(&self, h: u64) -> bool {
        self.window_queue
            .as_ref()
            .is_some_and(|q| !q.contains(&(self.meta[&h].first_seen, h)))
    }

    /// After the record of content hash `content` that the exact tier found for that text
    /// left it (erased or evicted), hands the text to another record of it among `members`
    /// not evicted, and indexes that one.
    pub(super) fn hand_over_text(&mut self, content: u128, members: &[u64]) -> Result<()> {
        let other = self.copies_among(content, members).next();
        if let Some(other) = other {
            self.by_content.insert(content, other);
            self.index_record(other)?;
        }
        Ok(())
    }

    /// The records of content hash `content` among `members` (a cluster's, which holds
    /// every record of a text) that no sliding window has taken out.
    pub(super) fn copies_among<'a>(
        &'a self,
        content: u128,
        members: &'a [u64],
    ) -> impl Iterator<Item = u64> + 'a {
        members
            .iter()
            .copied()
            .filter(move |&m| self.meta[&m].content_hash == content && !self.evicted(m))
    }

    pub(super) fn remember(&mut self, r: &StoredRecord) {
        let id: Arc<str> = Arc::from(r.id.as_str());
        self.meta.insert(
            r.handle,
            Meta {
                id: id.clone(),
                survivor: r.survivor,
                first_seen: r.first_seen,
                url: r.url.as_deref().map(Box::from),
                content_hash: r.content_hash,
                fingerprint: r.fingerprint,
                retention_class: r.retention_class.as_deref().map(Arc::from),
                features: r.features,
                bound: Bound::NONE,
            },
        );
        self.by_id.insert(id, r.handle);
        self.by_content.entry(r.content_hash).or_insert(r.handle);
        let members = self.members.entry(r.survivor).or_default();
        members.push(r.handle);
        // A cluster of one is within 0 of its survivor; any other addition (a member, or a
        // survivor loaded after its members) leaves the radius unknown.
        if members.len() == 1 && r.survivor == r.handle {
            self.radius.insert(r.handle, 0.0);
        } else {
            self.radius.remove(&r.survivor);
        }
        if let Some(queue) = &mut self.window_queue {
            queue.insert((r.first_seen, r.handle));
        }
    }

    pub(super) fn fingerprint_hex(&self, value: u128) -> String {
        match self.hasher.profile().bits() {
            FingerprintBits::Bits64 => format!("{:016x}", value as u64),
            FingerprintBits::Bits128 => format!("{value:032x}"),
        }
    }

    /// The source URL of one record, as a merge-log entry lists it: what the merge of that
    /// record brings to its new cluster. (Its cluster's other members, if it had any, have
    /// entries of their own, so the log names every URL of a cluster once, where a list of
    /// the whole cluster per entry would grow with the square of its size.)
    fn own_urls(&self, handle: u64) -> Vec<String> {
        self.meta[&handle]
            .url
            .as_deref()
            .map(|u| vec![u.to_owned()])
            .unwrap_or_default()
    }

    /// The merge-log entry of the stored record `merged` joining the cluster of `kept`
    /// (its survivor), through the match with `matched`, at `now`.
    pub(super) fn merge_entry(
        &self,
        kept: u64,
        merged: u64,
        matched: u64,
        rule: &str,
        scores: Scores,
        now: Timestamp,
    ) -> MergeLogEntry {
        MergeLogEntry {
            kept: self.meta[&kept].id.to_string(),
            merged: self.meta[&merged].id.to_string(),
            merged_fingerprint: self.fingerprint_hex(self.meta[&merged].fingerprint),
            rule: rule.into(),
            distance: scores.distance,
            jaccard: scores.jaccard,
            cosine: scores.cosine,
            matched: self.meta[&matched].id.to_string(),
            source_urls: self.own_urls(merged),
            at: now.to_rfc3339(),
        }
    }
}
