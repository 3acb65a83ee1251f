//! Records leaving: erasure (by id or by retention class and age) and the sliding window's
//! eviction from the index and the exact tier; and people's labels of pairs, which erasure
//! removes with the records they name.

use super::Deduper;
use crate::index::HammingIndex;
use crate::record::Timestamp;
use crate::store::{Batch, Features, Label, Store};
use crate::Result;

impl<S: Store> Deduper<S> {
    /// Takes records first seen before `before` out of the Hamming index and the exact tier
    /// (a sliding window: newer records are compared only with recent ones); they stay in the
    /// store and in their clusters. Returns how many were taken out.
    ///
    /// # Errors
    /// Index failures (none expected) when an evicted record's text is handed to a copy of
    /// it still in the window.
    pub fn evict_from_index_before(&mut self, before: Timestamp) -> Result<usize> {
        // Records by first-seen time, built on the first call and kept up to date by
        // `remember`, so each call takes only what fell out of the window since the last
        // one instead of scanning every record.
        if self.window_queue.is_none() {
            let queue = self.meta.iter().map(|(&h, m)| (m.first_seen, h)).collect();
            self.window_queue = Some(queue);
        }
        let mut n = 0;
        while let Some(queue) = self.window_queue.as_mut() {
            match queue.first() {
                Some(&(first_seen, _)) if first_seen < before => {}
                _ => break,
            }
            let (_, h) = queue.pop_first().expect("not empty");
            let Some(m) = self.meta.get(&h) else {
                continue; // erased or expired since
            };
            let (content, survivor) = (m.content_hash, m.survivor);
            let mut hit = self.index.remove(h).is_some() || self.short_index.remove(h).is_some();
            if self.by_content.get(&content) == Some(&h) {
                self.by_content.remove(&content);
                hit = true;
                // Its exact copies were out of the index with it: one still in the window
                // takes the text.
                let members = self.members.get(&survivor).cloned().unwrap_or_default();
                self.hand_over_text(content, &members)?;
            }
            n += usize::from(hit);
        }
        Ok(n)
    }

    /// Erases records (seed 000's erasure request): each record, its fingerprint, its index
    /// entries and its shingles go; merge-log rows about it go and its id is blanked where
    /// another row names it, and people's labels of pairs with it go. When a survivor is
    /// erased, the earliest remaining member of its cluster becomes the survivor. Returns the
    /// ids that were stored.
    ///
    /// # Errors
    /// Store failures.
    pub fn erase(&mut self, ids: &[&str]) -> Result<Vec<String>> {
        // Labels first: a failure between the two steps leaves no label naming an erased
        // record (at worst labels of a record still stored, which was to be erased anyway).
        self.store.remove_labels_of(ids)?;
        self.exclusive(|d, batch| {
            let mut erased = Vec::new();
            for id in ids {
                let Some(&h) = d.by_id.get(*id) else {
                    continue;
                };
                d.forget(h, batch)?;
                erased.push((*id).to_owned());
            }
            Ok(erased)
        })
    }

    /// Erases every record of retention class `class` first seen before `before`.
    ///
    /// # Errors
    /// Store failures.
    pub fn expire(&mut self, class: &str, before: Timestamp) -> Result<Vec<String>> {
        let mut ids: Vec<(u64, String)> = self
            .meta
            .iter()
            .filter(|(_, m)| m.retention_class.as_deref() == Some(class) && m.first_seen < before)
            .map(|(&h, m)| (h, m.id.to_string()))
            .collect();
        ids.sort();
        let refs: Vec<&str> = ids.iter().map(|(_, s)| s.as_str()).collect();
        self.erase(&refs)
    }

    pub(super) fn forget(&mut self, h: u64, batch: &mut Batch) -> Result<()> {
        if !self.meta.contains_key(&h) {
            return Ok(());
        }
        let evicted = self.evicted(h);
        let meta = self.meta.remove(&h).expect("just found");
        // Nothing of an erased text stays, its hash included (the map is only a shortcut).
        self.by_text.clear();
        self.by_id.remove(&meta.id);
        match meta.features {
            Features::Words => {
                self.index.remove(h);
            }
            Features::Chars => {
                self.short_index.remove(h);
            }
            Features::ExactOnly => {}
        }
        self.sets.remove(h);
        self.embeddings.remove(h);
        let mut members = self.members.remove(&meta.survivor).unwrap_or_default();
        members.retain(|&m| m != h);
        self.radius.remove(&meta.survivor);
        self.radius.remove(&h);
        if self.by_content.get(&meta.content_hash) == Some(&h) {
            self.by_content.remove(&meta.content_hash);
            // Exact duplicates always share a cluster: hand the text to one of them (the
            // window took them out with this one).
            if !evicted {
                self.hand_over_text(meta.content_hash, &members)?;
            }
        }
        if !members.is_empty() {
            let survivor = if meta.survivor == h {
                let next = *members
                    .iter()
                    .min_by(|a, b| {
                        let (ma, mb) = (&self.meta[a], &self.meta[b]);
                        ma.first_seen.cmp(&mb.first_seen).then(ma.id.cmp(&mb.id))
                    })
                    .expect("members is not empty");
                for &m in &members {
                    self.meta.get_mut(&m).expect("member is stored").survivor = next;
                    batch.survivor_updates.push((m, next));
                }
                self.radius.remove(&next);
                next
            } else {
                meta.survivor
            };
            self.members.insert(survivor, members);
        }
        batch.erase.push(h);
        Ok(())
    }
}

impl<S: Store> Deduper<S> {
    /// Stores a person's label of a pair (replacing the pair's earlier label); durable once
    /// this returns. Labels do not change decisions: `tune` and `reevaluate` use them.
    ///
    /// # Errors
    /// A label [`Label::validate`] refuses; store failures.
    pub fn put_label(&mut self, label: &Label) -> Result<()> {
        self.store.put_label(label)
    }

    /// Removes the label of `(a, b)`; answers whether there was one.
    ///
    /// # Errors
    /// Store failures.
    pub fn remove_label(&mut self, a: &str, b: &str) -> Result<bool> {
        self.store.remove_label(a, b)
    }
}
