//! Reading: records, verification sets (through a bounded in-memory cache), boilerplate,
//! the merge log, rejections and labels.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use redis::{Cmd, Value};

use super::layout::{
    parse_boilerplate_value, parse_merge_row, parse_record_value, parse_rejection_row,
};
use super::{lock, RedisStore};
use crate::store::{blob_to_ids, HostBoilerplate, Label, MergeLogEntry, Rejection, StoredRecord};
use crate::Result;

/// Shingle sets kept in memory (the records this process committed are the likeliest
/// candidates of the next ones).
const CACHE_CAPACITY: usize = 200_000;

impl RedisStore {
    /// [`Store::load`](crate::store::Store::load).
    pub(super) fn load_records(&self, f: &mut dyn FnMut(StoredRecord)) -> Result<()> {
        // The position first: whatever is committed while the hashes are read is also
        // delivered by the next `sync`, which applies it idempotently.
        let last = self.last_log_id()?;
        let survivors: HashMap<Vec<u8>, Vec<u8>> = self.scan_hash("surv")?.into_iter().collect();
        let mut records = Vec::new();
        let mut tokens = HashMap::new();
        for (h, v) in self.scan_hash("rec")? {
            let hs = String::from_utf8_lossy(&h).into_owned();
            let surv = survivors.get(&h).map_or(&[][..], Vec::as_slice);
            let (record, token) = parse_record_value(&hs, &v, surv).map_err(|r| self.fail(r))?;
            tokens.insert(record.handle, token);
            records.push(record);
        }
        records.sort_by_key(|r| r.handle);
        *lock(&self.tokens) = tokens;
        *lock(&self.seen) = last;
        for r in records {
            f(r);
        }
        Ok(())
    }

    /// [`Store::shingles_many`](crate::store::Store::shingles_many): the cached sets, the
    /// rest in one pipeline.
    pub(super) fn shingle_sets(&self, handles: &[u64]) -> Result<Vec<Option<Vec<u32>>>> {
        let mut out: Vec<Option<Vec<u32>>> = vec![None; handles.len()];
        let mut missing: Vec<(usize, u64, String)> = Vec::new();
        {
            let cache = lock(&self.cache);
            let tokens = lock(&self.tokens);
            for (i, &h) in handles.iter().enumerate() {
                if let Some(s) = cache.get(&h) {
                    out[i] = Some(s.as_ref().clone());
                } else if let Some(&token) = tokens.get(&h) {
                    missing.push((i, h, self.keys.shingles(h, token)));
                }
            }
        }
        if missing.is_empty() {
            return Ok(out);
        }
        let started = std::time::Instant::now();
        let values = self.get_many(missing.iter().map(|(_, _, key)| key), "reading shingles")?;
        self.read_time.add(started);
        self.shingle_reads
            .fetch_add(missing.len() as u64, Ordering::Relaxed);
        for ((i, h, _), value) in missing.into_iter().zip(values) {
            let blob: Option<Vec<u8>> = redis::from_redis_value(value)
                .map_err(|e| self.fail(format!("reading shingles: {e}")))?;
            let ids = blob
                .map(|b| blob_to_ids(&b))
                .transpose()
                .map_err(|reason| {
                    self.fail(format!(
                        "the verification set of record handle {h} is damaged: {reason}"
                    ))
                })?;
            if let Some(ids) = ids {
                self.remember_shingles(h, Arc::new(ids.clone()));
                out[i] = Some(ids);
            }
        }
        Ok(out)
    }

    /// The values of `keys`, in order: one MGET, or on a cluster (whose keys lie in many
    /// slots) one GET each, pipelined per node.
    fn get_many<'k>(
        &self,
        keys: impl Iterator<Item = &'k String>,
        what: &str,
    ) -> Result<Vec<Value>> {
        if self.cfg.cluster {
            let cmds: Vec<Cmd> = keys
                .map(|key| {
                    let mut c = redis::cmd("GET");
                    c.arg(key);
                    c
                })
                .collect();
            self.read(what, |c| c.pipeline(&cmds))
        } else {
            let mut mget = redis::cmd("MGET");
            for key in keys {
                mget.arg(key);
            }
            self.read(what, |c| c.query(&mget))
        }
    }

    /// [`Store::embeddings_many`](crate::store::Store::embeddings_many): nothing cached
    /// here (the pipeline caches what it reads).
    pub(super) fn embeddings(&self, handles: &[u64]) -> Result<Vec<Option<Vec<f32>>>> {
        let keys: Vec<(usize, String)> = {
            let tokens = lock(&self.tokens);
            handles
                .iter()
                .enumerate()
                .filter_map(|(i, h)| Some((i, self.keys.embedding(*h, *tokens.get(h)?))))
                .collect()
        };
        let mut out = vec![None; handles.len()];
        if keys.is_empty() {
            return Ok(out);
        }
        let values = self.get_many(keys.iter().map(|(_, key)| key), "reading embeddings")?;
        for ((i, _), value) in keys.into_iter().zip(values) {
            let blob: Option<Vec<u8>> = redis::from_redis_value(value)
                .map_err(|e| self.fail(format!("reading embeddings: {e}")))?;
            out[i] = blob.map(|b| crate::semantic::blob_embedding(&b));
        }
        Ok(out)
    }

    /// [`Store::shingles`](crate::store::Store::shingles).
    pub(super) fn shingle_set(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        if let Some(s) = lock(&self.cache).get(&handle) {
            return Ok(Some(s.as_ref().clone()));
        }
        let ids = self.shingle_blob(handle)?;
        if let Some(ids) = &ids {
            self.remember_shingles(handle, Arc::new(ids.clone()));
        }
        Ok(ids)
    }

    /// [`Store::boilerplate`](crate::store::Store::boilerplate), sorted by host.
    pub(super) fn read_boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>> {
        let mut out: Vec<(String, HostBoilerplate)> = self
            .scan_hash("bp")?
            .into_iter()
            .filter_map(|(host, blob)| {
                let b = parse_boilerplate_value(&blob)?;
                Some((String::from_utf8_lossy(&host).into_owned(), b))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// [`Store::merges`](crate::store::Store::merges).
    pub(super) fn read_merges(&self, f: &mut dyn FnMut(MergeLogEntry)) -> Result<()> {
        self.rows("merges", "merge-log row", parse_merge_row, f)
    }

    /// [`Store::rejections`](crate::store::Store::rejections).
    pub(super) fn read_rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()> {
        self.rows("rejections", "rejection row", parse_rejection_row, f)
    }

    /// [`Store::labels`](crate::store::Store::labels), ordered by `at`, then by pair.
    pub(super) fn read_labels(&self, f: &mut dyn FnMut(Label)) -> Result<()> {
        let mut labels = self
            .scan_hash("labels")?
            .into_iter()
            .map(|(_, v)| {
                serde_json::from_slice::<Label>(&v)
                    .map_err(|e| self.fail(format!("a label is unreadable: {e}")))
            })
            .collect::<Result<Vec<Label>>>()?;
        labels.sort_by(|x, y| (&x.at, &x.a, &x.b).cmp(&(&y.at, &y.a, &y.b)));
        labels.into_iter().for_each(f);
        Ok(())
    }

    fn shingle_blob(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        let Some(token) = lock(&self.tokens).get(&handle).copied() else {
            return Ok(None);
        };
        let key = self.keys.shingles(handle, token);
        let blob: Option<Vec<u8>> =
            self.read("reading shingles", |c| c.query(redis::cmd("GET").arg(&key)))?;
        self.shingle_reads.fetch_add(1, Ordering::Relaxed);
        blob.map(|b| blob_to_ids(&b)).transpose().map_err(|reason| {
            self.fail(format!(
                "the verification set of record handle {handle} is damaged: {reason}"
            ))
        })
    }

    pub(super) fn remember_shingles(&self, handle: u64, ids: Arc<Vec<u32>>) {
        let mut cache = lock(&self.cache);
        if cache.len() >= CACHE_CAPACITY {
            // Crude but bounded: start over rather than track recency on every read.
            cache.clear();
        }
        cache.insert(handle, ids);
    }

    /// Reads every entry of a list of JSON rows, skipping erased ones; `what` names a row
    /// in the error for one `parse` cannot read.
    fn rows<T>(
        &self,
        name: &str,
        what: &str,
        parse: fn(&[u8]) -> serde_json::Result<T>,
        f: &mut dyn FnMut(T),
    ) -> Result<()> {
        let k = self.keys.tagged(name);
        let mut start = 0i64;
        loop {
            let rows: Vec<Vec<u8>> = self.call("reading a log", |c| {
                c.query(redis::cmd("LRANGE").arg(&k).arg(start).arg(start + 999))
            })?;
            for row in &rows {
                if !row.is_empty() {
                    f(parse(row).map_err(|e| self.fail(format!("{what} is unreadable: {e}")))?);
                }
            }
            if rows.len() < 1000 {
                return Ok(());
            }
            start += 1000;
        }
    }

    /// Every field of a hash, in chunks.
    fn scan_hash(&self, name: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let k = self.keys.tagged(name);
        let mut out = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, items): (u64, Vec<Vec<u8>>) = self.call("reading records", |c| {
                c.query(
                    redis::cmd("HSCAN")
                        .arg(&k)
                        .arg(cursor)
                        .arg("COUNT")
                        .arg(5000),
                )
            })?;
            let mut it = items.into_iter();
            while let (Some(a), Some(b)) = (it.next(), it.next()) {
                out.push((a, b));
            }
            if next == 0 {
                return Ok(out);
            }
            cursor = next;
        }
    }
}
