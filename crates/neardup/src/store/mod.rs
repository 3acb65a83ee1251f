//! Persistence: the [`Store`] trait and its backends.
//!
//! A store keeps what deduplication needs to continue tomorrow: each record's id,
//! fingerprint, content hash, compact shingle ids, source URL, first-seen time, host,
//! retention class and cluster, and its sentence embedding where the semantic stage made
//! one; the merge log; verification rejections; each host's
//! learned boilerplate; and people's labels of pairs. The Hamming index is rebuilt in memory from it on open.
//!
//! Every change arrives as one [`Batch`] and is applied atomically by [`Store::commit`]; once
//! `commit` returns, the batch is durable.

mod label;
mod lock;
mod memory;
#[cfg(feature = "redis")]
pub mod redis;
mod set_blob;
mod sqlite;

#[cfg(test)]
pub(crate) mod tests;

#[cfg(feature = "redis")]
pub use self::redis::{RedisStats, RedisStore};
pub use label::{Label, Verdict};
pub use lock::WriterLock;
pub use memory::MemoryStore;
#[cfg(feature = "redis")]
pub(crate) use set_blob::ids_as_blob;
pub(crate) use set_blob::{blob_to_ids, packed_blob};
pub use sqlite::SqliteStore;

/// Which features a record was analysed over: defined with the features, kept here.
pub use crate::features::Features;
use crate::record::Timestamp;
use crate::Result;

/// How a record was decided when it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Nothing like it was stored: it started a cluster.
    New,
    /// Its normalised text equalled a stored record's.
    Exact,
    /// A stored record within `max_distance` bits passed Jaccard verification.
    Near,
    /// Too few words for SimHash: only the exact tier applied, and nothing was like it.
    TooShort,
}

impl Arrival {
    /// The stable lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Arrival::New => "new",
            Arrival::Exact => "exact",
            Arrival::Near => "near",
            Arrival::TooShort => "too_short",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(s: &str) -> Option<Arrival> {
        Some(match s {
            "new" => Arrival::New,
            "exact" => Arrival::Exact,
            "near" => Arrival::Near,
            "too_short" => Arrival::TooShort,
            _ => return None,
        })
    }
}

/// What is kept of one record.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredRecord {
    /// Dense internal handle (the index's id).
    pub handle: u64,
    /// The caller's id.
    pub id: String,
    /// Fingerprint bits (upper 64 zero for 64-bit profiles).
    pub fingerprint: u128,
    /// Hash of the normalised token stream.
    pub content_hash: u128,
    /// Source URL.
    pub url: Option<String>,
    /// Host, for boilerplate.
    pub host: Option<String>,
    /// First-seen time.
    pub first_seen: Timestamp,
    /// Retention class.
    pub retention_class: Option<String>,
    /// Handle of its cluster's survivor (itself when it is the survivor).
    pub survivor: u64,
    /// How it was decided on arrival.
    pub arrival: Arrival,
    /// Words in it.
    pub tokens: u32,
    /// Its language (ISO 639-3), when detected.
    pub language: Option<String>,
    /// What its fingerprint and verification set were made from.
    pub features: Features,
}

/// One merge-log entry: a merged record, the survivor it went to, and why (seed 000: the rule
/// and both scores, so a threshold change can be re-evaluated).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MergeLogEntry {
    /// The survivor's id at the time of the merge.
    pub kept: String,
    /// The merged record's id.
    pub merged: String,
    /// The merged record's fingerprint, hex.
    pub merged_fingerprint: String,
    /// `exact` or `simhash+jaccard`.
    pub rule: String,
    /// Hamming distance to the record it was verified against.
    pub distance: u32,
    /// Jaccard similarity to the record it was verified against.
    pub jaccard: f64,
    /// Cosine of the two records' sentence embeddings, where the semantic stage scored
    /// the pair (rule `simhash+semantic`, or a fusion after one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
    /// The record it was verified against (a member of the survivor's cluster).
    pub matched: String,
    /// The merged record's source URL (none when it has none): what the merge brought to
    /// the kept record's cluster. Every URL of a cluster is in the entries of its members
    /// (and the survivor's own record), each once; the cluster's whole list is the kept
    /// record's `source_urls`.
    pub source_urls: Vec<String>,
    /// When the merge was decided, RFC 3339.
    pub at: String,
}

/// A candidate within `max_distance` that failed verification, or one within the semantic
/// stage's radius that failed its rule too, with its scores.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rejection {
    /// The arriving record.
    pub record: String,
    /// The stored candidate.
    pub candidate: String,
    /// Hamming distance.
    pub distance: u32,
    /// Jaccard similarity, below the threshold.
    pub jaccard: f64,
    /// Cosine of the records' sentence embeddings, where the semantic stage scored the
    /// pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
}

/// A host's learned boilerplate.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct HostBoilerplate {
    /// Pages the set was learned from.
    pub pages: u64,
    /// Boilerplate shingle hashes, sorted.
    pub shingles: Vec<u64>,
}

/// A new record with its verification set.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NewRecord {
    /// The record.
    pub record: StoredRecord,
    /// Sorted distinct shingle ids; empty for records too short for SimHash. Shared with
    /// the deduper, which keeps the set for verification until the batch is committed.
    pub shingles: std::sync::Arc<[u32]>,
    /// Its sentence embedding, where dedup's semantic stage made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<std::sync::Arc<[f32]>>,
}

/// Everything one step of the pipeline changes, applied atomically.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Batch {
    /// Records to insert.
    pub records: Vec<NewRecord>,
    /// Records whose survivor changed: record `.0` now belongs to survivor `.1`.
    pub survivor_updates: Vec<(u64, u64)>,
    /// Merge-log entries to append.
    pub merges: Vec<MergeLogEntry>,
    /// Verification rejections to append.
    pub rejections: Vec<Rejection>,
    /// Hosts whose boilerplate was (re)learned.
    pub boilerplate: Vec<(String, HostBoilerplate)>,
    /// Records to erase with their shingles; merge-log rows about them go, and their id is
    /// replaced by `<erased>` where another record's row names it.
    pub erase: Vec<u64>,
}

impl Batch {
    /// Whether the batch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
            && self.survivor_updates.is_empty()
            && self.merges.is_empty()
            && self.rejections.is_empty()
            && self.boilerplate.is_empty()
            && self.erase.is_empty()
    }
}

impl<T: Store + ?Sized> Store for Box<T> {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        (**self).meta(key)
    }
    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        (**self).set_meta(key, value)
    }
    fn load(&self, f: &mut dyn FnMut(StoredRecord)) -> Result<()> {
        (**self).load(f)
    }
    fn sets_in_memory(&self) -> bool {
        (**self).sets_in_memory()
    }
    fn shingles(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        (**self).shingles(handle)
    }
    fn shingles_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<u32>>>> {
        (**self).shingles_many(handles)
    }
    fn embeddings_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<f32>>>> {
        (**self).embeddings_many(handles)
    }
    fn boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>> {
        (**self).boilerplate()
    }
    fn merges(&self, f: &mut dyn FnMut(MergeLogEntry)) -> Result<()> {
        (**self).merges(f)
    }
    fn merges_since(
        &self,
        since: Option<Timestamp>,
        limit: usize,
        f: &mut dyn FnMut(MergeLogEntry),
    ) -> Result<bool> {
        (**self).merges_since(since, limit, f)
    }
    fn rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()> {
        (**self).rejections(f)
    }
    fn labels(&self, f: &mut dyn FnMut(Label)) -> Result<()> {
        (**self).labels(f)
    }
    fn put_label(&mut self, label: &Label) -> Result<()> {
        (**self).put_label(label)
    }
    fn remove_label(&mut self, a: &str, b: &str) -> Result<bool> {
        (**self).remove_label(a, b)
    }
    fn remove_labels_of(&mut self, ids: &[&str]) -> Result<usize> {
        (**self).remove_labels_of(ids)
    }
    fn commit(&mut self, batch: &Batch) -> Result<()> {
        (**self).commit(batch)
    }
    fn lock(&mut self) -> Result<()> {
        (**self).lock()
    }
    fn unlock(&mut self) -> Result<()> {
        (**self).unlock()
    }
    fn sync(&mut self, f: &mut dyn FnMut(Batch)) -> Result<()> {
        (**self).sync(f)
    }
    fn commits_behind(&self) -> bool {
        (**self).commits_behind()
    }
    fn commit_behind(&mut self, batch: Batch) -> Result<()> {
        (**self).commit_behind(batch)
    }
    fn wait_behind(&mut self) -> Result<()> {
        (**self).wait_behind()
    }
}

/// What [`Store::merges_since`] hands on: entries logged at or after `since` (an
/// unparseable time counts as recent), at most `limit` of them. Backends offer it the log
/// oldest first and stop when it refuses an entry.
pub(crate) struct MergesSince<'a> {
    since: Option<Timestamp>,
    limit: usize,
    taken: usize,
    f: &'a mut dyn FnMut(MergeLogEntry),
}

impl<'a> MergesSince<'a> {
    pub(crate) fn new(
        since: Option<Timestamp>,
        limit: usize,
        f: &'a mut dyn FnMut(MergeLogEntry),
    ) -> Self {
        MergesSince {
            since,
            limit,
            taken: 0,
            f,
        }
    }

    /// Hands `m` on if it is recent enough; false when it is beyond the limit (more were
    /// left out: the caller stops).
    pub(crate) fn offer(&mut self, m: MergeLogEntry) -> bool {
        let recent = self
            .since
            .is_none_or(|s| Timestamp::parse_rfc3339(&m.at).map_or(true, |at| at >= s));
        if !recent {
            return true;
        }
        if self.taken == self.limit {
            return false;
        }
        self.taken += 1;
        (self.f)(m);
        true
    }
}

/// The persistence interface of the pipeline. Implemented by [`SqliteStore`] (the embedded
/// default) and [`MemoryStore`] (tests, throwaway runs).
pub trait Store: Send + Sync {
    /// A value of the store's metadata (`profile`, `short_profile`, …).
    ///
    /// # Errors
    /// Backend failures.
    fn meta(&self, key: &str) -> Result<Option<String>>;
    /// Sets a value of the store's metadata, durably.
    ///
    /// # Errors
    /// Backend failures.
    fn set_meta(&mut self, key: &str, value: &str) -> Result<()>;
    /// The fingerprint profile the store was created with.
    ///
    /// # Errors
    /// Backend failures.
    fn profile(&self) -> Result<Option<String>> {
        self.meta("profile")
    }
    /// Records the profile (once, when the store is new).
    ///
    /// # Errors
    /// Backend failures.
    fn set_profile(&mut self, profile: &str) -> Result<()> {
        self.set_meta("profile", profile)
    }
    /// Whether the store keeps verification sets in memory, so that the pipeline need not
    /// cache copies of the ones it reads back.
    fn sets_in_memory(&self) -> bool {
        false
    }
    /// Calls `f` with every stored record, in handle order.
    ///
    /// # Errors
    /// Backend failures.
    fn load(&self, f: &mut dyn FnMut(StoredRecord)) -> Result<()>;
    /// The verification set of a record.
    ///
    /// # Errors
    /// Backend failures.
    fn shingles(&self, handle: u64) -> Result<Option<Vec<u32>>>;
    /// The verification sets of several records at once (one round trip for remote stores).
    ///
    /// # Errors
    /// Backend failures.
    fn shingles_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<u32>>>> {
        handles.iter().map(|&h| self.shingles(h)).collect()
    }
    /// The sentence embeddings of several records at once (`None` for a record stored
    /// without one), one round trip for remote stores.
    ///
    /// # Errors
    /// Backend failures.
    fn embeddings_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<f32>>>>;
    /// Every host's boilerplate.
    ///
    /// # Errors
    /// Backend failures.
    fn boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>>;
    /// Calls `f` with each merge-log entry, oldest first.
    ///
    /// # Errors
    /// Backend failures.
    fn merges(&self, f: &mut dyn FnMut(MergeLogEntry)) -> Result<()>;
    /// Calls `f` with the merge-log entries logged at or after `since` (every entry when
    /// `None`; one whose time does not parse counts as recent), oldest first, at most
    /// `limit` of them; returns whether more were left out. The default reads the whole
    /// log through [`merges`](Self::merges).
    ///
    /// # Errors
    /// Backend failures.
    fn merges_since(
        &self,
        since: Option<Timestamp>,
        limit: usize,
        f: &mut dyn FnMut(MergeLogEntry),
    ) -> Result<bool> {
        let mut take = MergesSince::new(since, limit, f);
        let mut truncated = false;
        self.merges(&mut |m| {
            if !truncated {
                truncated = !take.offer(m);
            }
        })?;
        Ok(truncated)
    }
    /// Calls `f` with each logged verification rejection, oldest first.
    ///
    /// # Errors
    /// Backend failures.
    fn rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()>;
    /// Calls `f` with each label, ordered by `at` (ties in an order of the backend's).
    ///
    /// # Errors
    /// Backend failures, an unreadable label.
    fn labels(&self, f: &mut dyn FnMut(Label)) -> Result<()>;
    /// Stores `label`, replacing the label of the same `(a, b)`; durable once this returns.
    /// The ids are not checked against the records: a label may outlive a record's window.
    ///
    /// # Errors
    /// [`Error::InvalidLabel`](crate::Error::InvalidLabel) for a label
    /// [`Label::validate`] refuses; backend failures.
    fn put_label(&mut self, label: &Label) -> Result<()>;
    /// Removes the label of `(a, b)`; answers whether there was one.
    ///
    /// # Errors
    /// Backend failures.
    fn remove_label(&mut self, a: &str, b: &str) -> Result<bool>;
    /// Removes every label naming one of `ids` (erasure); answers how many went.
    ///
    /// # Errors
    /// Backend failures.
    fn remove_labels_of(&mut self, ids: &[&str]) -> Result<usize>;
    /// Applies `batch` atomically; durable once this returns.
    ///
    /// # Errors
    /// Backend failures; then nothing of the batch was applied. A store shared by several
    /// processes also refuses a batch when another process committed since this one last
    /// called [`sync`](Self::sync) (the caller's view is stale).
    fn commit(&mut self, batch: &Batch) -> Result<()>;

    /// Takes exclusive access for one decide-and-commit cycle across processes. Stores that
    /// only one process writes need nothing (the default).
    ///
    /// # Errors
    /// Backend failures, or the lock could not be had in time.
    fn lock(&mut self) -> Result<()> {
        Ok(())
    }

    /// Releases what [`lock`](Self::lock) took.
    ///
    /// # Errors
    /// Backend failures.
    fn unlock(&mut self) -> Result<()> {
        Ok(())
    }

    /// Calls `f` with every batch other processes committed since this one last synchronised
    /// (or loaded), oldest first. Stores that only one process writes have none (the
    /// default).
    ///
    /// # Errors
    /// Backend failures.
    fn sync(&mut self, f: &mut dyn FnMut(Batch)) -> Result<()> {
        let _ = f;
        Ok(())
    }

    /// Whether [`commit_behind`](Self::commit_behind) commits on a thread of the store's
    /// own (the default: no, it commits before it returns).
    fn commits_behind(&self) -> bool {
        false
    }

    /// Commits `batch` without the caller holding [`lock`](Self::lock): only if no other
    /// process committed since this one last synchronised, else nothing of it is written
    /// and the answer is [`Error::Conflict`](crate::Error::Conflict) (the batch was
    /// decided on a stale view; [`load`](Self::load) the store again before deciding
    /// more). A store that [`commits_behind`](Self::commits_behind)
    /// returns at once and commits on a thread of its own, one batch at a time: the batch
    /// is durable, or its error known, once [`wait_behind`](Self::wait_behind) returns,
    /// and a second call first waits for the batch before. The default commits at once,
    /// under the lock.
    ///
    /// # Errors
    /// As [`commit`](Self::commit), and [`Error::Conflict`](crate::Error::Conflict); a
    /// store that commits behind reports them from [`wait_behind`](Self::wait_behind),
    /// and this answers the error of the batch before, if any.
    fn commit_behind(&mut self, batch: Batch) -> Result<()> {
        self.lock()?;
        let mut moved = false;
        let result = self.sync(&mut |_| moved = true).and_then(|()| match moved {
            true => Err(crate::Error::Conflict),
            false => self.commit(&batch),
        });
        let unlocked = self.unlock();
        result?;
        unlocked
    }

    /// Waits until the batch handed to [`commit_behind`](Self::commit_behind) is durable.
    /// Nothing to wait for is no error.
    ///
    /// # Errors
    /// That batch's: as [`commit_behind`](Self::commit_behind).
    fn wait_behind(&mut self) -> Result<()> {
        Ok(())
    }
}
