//! Deciding and committing a batch: with the store's lock (changes other processes
//! committed are applied first), or decided on what this deduper holds and committed
//! behind, while the caller prepares the next batch.

use super::analyze::Analysed;
use super::candidates::IndexKind;
use super::decide::{Early, PARALLEL_PRESEARCH_MIN};
use super::{Deduper, Outcome, PreparedRecord};
use crate::record::{Record, Timestamp};
use crate::store::{Batch, Store};
use crate::{Error, Result};

/// What a sync applied of other processes' commits.
#[derive(Default)]
pub(super) struct Synced {
    /// The records it put in an index: (handle, index, indexed fingerprint bits).
    indexed: Vec<(u64, IndexKind, u64)>,
    /// Whether it erased records.
    erased: bool,
}

impl<S: Store> Deduper<S> {
    /// Sets a store meta value of the caller's own (a key not used by neardup itself, such
    /// as `cli.defaults`), once every batch handed to the store is committed.
    ///
    /// # Errors
    /// A failed commit still in flight; store failures.
    pub fn set_store_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.wait_committed()?;
        self.store.set_meta(key, value)
    }

    /// Runs one decide-and-commit cycle with exclusive access to the store: the store's lock
    /// is taken, changes other processes committed are applied first, `f` decides into a
    /// batch, and the batch is committed before the lock is released. Stores written by one
    /// process make the lock and the sync no-ops.
    pub(super) fn exclusive<T>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut Batch) -> Result<T>,
    ) -> Result<T> {
        self.exclusive_synced(|d, _, batch| f(d, batch))
    }

    /// [`exclusive`](Self::exclusive), telling `f` what the sync applied.
    fn exclusive_synced<T>(
        &mut self,
        f: impl FnOnce(&mut Self, Synced, &mut Batch) -> Result<T>,
    ) -> Result<T> {
        self.check()?;
        self.wait_committed()?;
        self.store.lock()?;
        let result = self.sync_remote().and_then(|synced| {
            let mut batch = Batch::default();
            let out = f(self, synced, &mut batch)?;
            self.commit(batch)?;
            Ok(out)
        });
        let result = self.poison_on_error(result);
        let unlocked = self.store.unlock();
        let out = result?;
        unlocked?;
        Ok(out)
    }

    /// Applies batches committed by other processes since this one last synchronised.
    fn sync_remote(&mut self) -> Result<Synced> {
        let mut remote = Vec::new();
        self.store.sync(&mut |b| remote.push(b))?;
        let mut synced = Synced::default();
        for batch in remote {
            self.apply_remote(batch, &mut synced)?;
        }
        Ok(synced)
    }

    /// Brings memory up to date with a batch another process committed. Idempotent.
    fn apply_remote(&mut self, batch: Batch, synced: &mut Synced) -> Result<()> {
        for n in &batch.records {
            let r = &n.record;
            if self.meta.contains_key(&r.handle) {
                continue;
            }
            self.next_handle = self.next_handle.max(r.handle + 1);
            self.remember(r);
            if self.indexes(r.handle, r.content_hash) {
                if let Some(kind) = self.index_record(r.handle)? {
                    synced.indexed.push((r.handle, kind, r.fingerprint as u64));
                }
            }
        }
        synced.erased |= !batch.erase.is_empty();
        for &h in &batch.erase {
            self.forget(h, &mut Batch::default())?;
        }
        for &(h, survivor) in &batch.survivor_updates {
            self.set_survivor(h, survivor);
        }
        if !batch.boilerplate.is_empty() {
            for (host, b) in batch.boilerplate {
                self.set_host_boilerplate(host, b);
            }
            self.furnish();
        }
        Ok(())
    }

    /// Moves record `h` into the cluster of `survivor`.
    fn set_survivor(&mut self, h: u64, survivor: u64) {
        let Some(m) = self.meta.get_mut(&h) else {
            return;
        };
        let old = std::mem::replace(&mut m.survivor, survivor);
        self.radius.remove(&old);
        self.radius.remove(&survivor);
        if let Some(v) = self.members.get_mut(&old) {
            v.retain(|&x| x != h);
            if v.is_empty() {
                self.members.remove(&old);
            }
        }
        let v = self.members.entry(survivor).or_default();
        if !v.contains(&h) {
            v.push(h);
        }
    }

    fn check(&self) -> Result<()> {
        if self.poisoned {
            Err(Error::Poisoned)
        } else {
            Ok(())
        }
    }

    fn commit(&mut self, batch: Batch) -> Result<()> {
        let committed = self.store.commit(&batch);
        self.poison_on_error(committed)?;
        self.sets.committed();
        self.embeddings.committed();
        Ok(())
    }

    /// `result`, after which this deduper refuses further work if it failed: memory may
    /// hold decisions the store does not.
    fn poison_on_error<T>(&mut self, result: Result<T>) -> Result<T> {
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    /// Deduplicates a batch of records against the store and each other, in order, and
    /// commits the result atomically.
    ///
    /// A record whose id is already stored with the same text is reported as
    /// [`Decision::AlreadyStored`](super::Decision::AlreadyStored) (so an interrupted run
    /// can simply be run again); with different text it is rejected.
    ///
    /// # Errors
    /// Store and index failures. After a failed commit the deduper refuses further work
    /// ([`Error::Poisoned`]): reopen the store to continue from its last committed state.
    pub fn process(&mut self, records: &[Record], now: Timestamp) -> Result<Vec<Outcome>> {
        self.check()?;
        let prepared = self.analyzer_ref().prepare(records);
        self.process_prepared(records, prepared, now)
    }

    /// Whether [`process_prepared_behind`](Self::process_prepared_behind) decides on what
    /// this deduper holds and commits behind; if not, it is
    /// [`process_prepared`](Self::process_prepared), which first catches up with other
    /// processes' commits (and so may find their boilerplate).
    pub fn commits_behind(&self) -> bool {
        self.store.commits_behind()
    }

    /// Decides and commits records analysed by [`Analyzer::prepare`](super::Analyzer::prepare)
    /// (of this deduper's profile), exactly as [`process`](Self::process) would.
    ///
    /// # Errors
    /// As [`process`](Self::process).
    ///
    /// # Panics
    /// When `prepared` does not have one entry per record.
    pub fn process_prepared(
        &mut self,
        records: &[Record],
        prepared: Vec<PreparedRecord>,
        now: Timestamp,
    ) -> Result<Vec<Outcome>> {
        assert_eq!(records.len(), prepared.len(), "one analysis per record");
        self.check()?;
        self.wait_committed()?;
        // The costly half of the decisions (index probes, reading and comparing the
        // candidates' sets: with a remote store, round trips) runs before the store's lock,
        // on what this deduper holds. Under the lock, only the records other processes
        // committed meanwhile are searched on top (a scan, as for the batch's own records),
        // so the lock is held for the decisions, not for the reads, and workers do not
        // queue behind each other's reads.
        let generation = self.generation;
        let analysed: Vec<Analysed> = records
            .iter()
            .zip(prepared)
            .map(|(r, p)| self.current(r, p))
            .collect();
        let found = if records.len() >= PARALLEL_PRESEARCH_MIN {
            Some(self.presearch_window(records, &analysed)?)
        } else {
            None
        };
        self.exclusive_synced(|d, synced, batch| {
            let (analysed, early) = if d.generation != generation {
                // Boilerplate another process committed changed every analysis.
                let analysed = records
                    .iter()
                    .map(|r| Analysed::Done(d.prepare(r, &mut crate::Scratch::default())))
                    .collect();
                (analysed, None)
            } else {
                // An erasure may have freed a place among a record's nearest candidates
                // that the search before the lock cut off: search again then.
                let early = found.filter(|_| !synced.erased).map(|found| Early {
                    found,
                    added: synced.indexed,
                });
                (analysed, early)
            };
            d.grow_index_for(records.len())?;
            d.decide_all(records, analysed, early, now, batch)
        })
    }

    /// Decides `records` into `batch`: their analyses made current (see
    /// [`current`](Self::current)), the index grown for them, then each decided in order.
    fn decide_batch(
        &mut self,
        records: &[Record],
        prepared: Vec<PreparedRecord>,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Vec<Outcome>> {
        let prepared: Vec<Analysed> = records
            .iter()
            .zip(prepared)
            .map(|(r, p)| self.current(r, p))
            .collect();
        self.grow_index_for(records.len())?;
        self.decide_all(records, prepared, None, now, batch)
    }

    /// [`process_prepared`](Self::process_prepared) with the commit behind: the batch is
    /// decided, the batch of the call before is waited for, and this one is handed to the
    /// store, which commits it while the caller prepares and decides the next one (with
    /// SQLite, on a thread of its own; with other stores, before this returns). The
    /// outcomes answered are durable once the next call (or
    /// [`wait_committed`](Self::wait_committed)) returns: write them out then, not before.
    ///
    /// The batch is decided without the store's lock, on what this deduper holds; the
    /// store commits it only if no other process wrote meanwhile. If one did,
    /// [`Error::Conflict`]: nothing of the batch was written, this deduper refuses further
    /// work ([`Error::Poisoned`]), and the records of the batches not yet confirmed are to
    /// be processed again by a deduper opened anew over the store.
    ///
    /// # Errors
    /// As [`process_prepared`](Self::process_prepared) (for this batch or the one before),
    /// and [`Error::Conflict`].
    ///
    /// # Panics
    /// When `prepared` does not have one entry per record.
    pub fn process_prepared_behind(
        &mut self,
        records: &[Record],
        prepared: Vec<PreparedRecord>,
        now: Timestamp,
    ) -> Result<Vec<Outcome>> {
        if !self.store.commits_behind() {
            return self.process_prepared(records, prepared, now);
        }
        assert_eq!(records.len(), prepared.len(), "one analysis per record");
        self.check()?;
        let mut batch = Batch::default();
        let decided = self.decide_batch(records, prepared, now, &mut batch);
        let outcomes = self.poison_on_error(decided)?;
        self.wait_committed()?;
        let handed = self.store.commit_behind(batch);
        self.poison_on_error(handed)?;
        self.behind = Some(self.next_handle);
        Ok(outcomes)
    }

    /// Brings memory up to date with what other processes committed to the store since
    /// this deduper opened it or last wrote to it (a reader's view of a store that another
    /// process writes: a service checking against a watchlist the CLI edits).
    ///
    /// # Errors
    /// Store failures; a deduper with a commit in flight waits for it first.
    pub fn refresh(&mut self) -> Result<()> {
        self.check()?;
        self.wait_committed()?;
        let result = self.sync_remote().map(drop);
        self.poison_on_error(result)
    }

    /// Waits until the batch [`process_prepared_behind`](Self::process_prepared_behind)
    /// handed to the store last is committed; nothing to wait for is no error.
    ///
    /// # Errors
    /// That batch's, as [`process_prepared_behind`](Self::process_prepared_behind)
    /// describes; this deduper then refuses further work.
    pub fn wait_committed(&mut self) -> Result<()> {
        let Some(bound) = self.behind.take() else {
            return Ok(());
        };
        let waited = self.store.wait_behind();
        self.poison_on_error(waited)?;
        self.sets.committed_before(bound);
        self.embeddings.committed_before(bound);
        Ok(())
    }
}
