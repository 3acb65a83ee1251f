//! An in-memory store: for tests and runs that need nothing kept.

use std::collections::BTreeMap;

use super::{Batch, HostBoilerplate, Label, MergeLogEntry, Rejection, Store, StoredRecord};
use crate::Result;

/// Keeps everything in memory; gone when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    meta: BTreeMap<String, String>,
    records: BTreeMap<u64, StoredRecord>,
    shingles: BTreeMap<u64, std::sync::Arc<[u32]>>,
    embeddings: BTreeMap<u64, std::sync::Arc<[f32]>>,
    merges: Vec<MergeLogEntry>,
    rejections: Vec<Rejection>,
    boilerplate: BTreeMap<String, HostBoilerplate>,
    /// In the order they were stored.
    labels: Vec<Label>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// How many verification rejections were logged.
    pub fn rejection_count(&self) -> usize {
        self.rejections.len()
    }
}

impl Store for MemoryStore {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self.meta.get(key).cloned())
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.meta.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    fn load(&self, f: &mut dyn FnMut(StoredRecord)) -> Result<()> {
        self.records.values().cloned().for_each(f);
        Ok(())
    }

    fn sets_in_memory(&self) -> bool {
        true
    }

    fn shingles(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        Ok(self.shingles.get(&handle).map(|s| s.to_vec()))
    }

    fn embeddings_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<f32>>>> {
        Ok(handles
            .iter()
            .map(|h| self.embeddings.get(h).map(|e| e.to_vec()))
            .collect())
    }

    fn boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>> {
        Ok(self
            .boilerplate
            .iter()
            .map(|(h, b)| (h.clone(), b.clone()))
            .collect())
    }

    fn merges(&self, f: &mut dyn FnMut(MergeLogEntry)) -> Result<()> {
        self.merges.iter().cloned().for_each(f);
        Ok(())
    }

    fn rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()> {
        self.rejections.iter().cloned().for_each(f);
        Ok(())
    }

    fn labels(&self, f: &mut dyn FnMut(Label)) -> Result<()> {
        let mut labels = self.labels.clone();
        labels.sort_by(|x, y| x.at.cmp(&y.at));
        labels.into_iter().for_each(f);
        Ok(())
    }

    fn put_label(&mut self, label: &Label) -> Result<()> {
        label.validate()?;
        self.remove_label(&label.a, &label.b)?;
        self.labels.push(label.clone());
        Ok(())
    }

    fn remove_label(&mut self, a: &str, b: &str) -> Result<bool> {
        let before = self.labels.len();
        self.labels.retain(|l| !(l.a == a && l.b == b));
        Ok(self.labels.len() < before)
    }

    fn remove_labels_of(&mut self, ids: &[&str]) -> Result<usize> {
        let before = self.labels.len();
        self.labels
            .retain(|l| !ids.contains(&l.a.as_str()) && !ids.contains(&l.b.as_str()));
        Ok(before - self.labels.len())
    }

    fn commit(&mut self, batch: &Batch) -> Result<()> {
        for n in &batch.records {
            self.records.insert(n.record.handle, n.record.clone());
            if !n.shingles.is_empty() {
                self.shingles.insert(n.record.handle, n.shingles.clone());
            }
            if let Some(e) = &n.embedding {
                self.embeddings.insert(n.record.handle, e.clone());
            }
        }
        for &(h, s) in &batch.survivor_updates {
            if let Some(r) = self.records.get_mut(&h) {
                r.survivor = s;
            }
        }
        self.merges.extend(batch.merges.iter().cloned());
        self.rejections.extend(batch.rejections.iter().cloned());
        for (host, b) in &batch.boilerplate {
            self.boilerplate.insert(host.clone(), b.clone());
        }
        for h in &batch.erase {
            if let Some(r) = self.records.remove(h) {
                self.shingles.remove(h);
                self.embeddings.remove(h);
                self.merges.retain(|m| m.merged != r.id);
                self.rejections
                    .retain(|x| x.record != r.id && x.candidate != r.id);
                for m in &mut self.merges {
                    if m.kept == r.id {
                        m.kept = "<erased>".into();
                    }
                    if m.matched == r.id {
                        m.matched = "<erased>".into();
                    }
                }
            }
        }
        Ok(())
    }
}
