//! Catching up with the change log `{P}:log`: what other processes committed since this one
//! last read it, with the records they added.

use std::sync::Arc;

use redis::{Cmd, Value};

use super::conn::{bytes, text};
use super::layout::{parse_record_value, Change};
use super::scripts::LOCK_SYNC;
use super::{lock, RedisStore};
use crate::store::{Batch, NewRecord};
use crate::Result;

/// Log entries read per round trip when catching up.
pub(super) const SYNC_CHUNK: usize = 32;

impl RedisStore {
    pub(super) fn last_log_id(&self) -> Result<String> {
        let k = self.keys.tagged("log");
        let v: Value = self.call("reading the change log", |c| {
            c.query(
                redis::cmd("XREVRANGE")
                    .arg(&k)
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1),
            )
        })?;
        Ok(match &v {
            Value::Array(entries) => match entries.first() {
                Some(Value::Array(e)) => e.first().map(text).unwrap_or_default(),
                _ => String::new(),
            },
            _ => String::new(),
        })
    }

    pub(super) fn lock_sync_cmd(&self, lock_token: &str, after: &str) -> Cmd {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(LOCK_SYNC)
            .arg(4)
            .arg(self.keys.tagged("lock"))
            .arg(self.keys.tagged("log"))
            .arg(self.keys.tagged("rec"))
            .arg(self.keys.tagged("surv"))
            .arg(lock_token)
            .arg(self.cfg.lock_ttl.as_millis() as u64)
            .arg(after)
            .arg(SYNC_CHUNK);
        cmd
    }

    /// Parses [`LOCK_SYNC`]'s reply: whether the lock was taken, and the log entries.
    pub(super) fn parse_sync(&self, v: &Value) -> Result<(bool, Vec<(String, Batch)>)> {
        let items = match v {
            Value::Array(items) => items,
            other => {
                return Err(self.fail(format!("unexpected reply to the sync script: {other:?}")))
            }
        };
        let int = |v: Option<&Value>| match v {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        };
        let taken = int(items.first()) == Some(1);
        let mut out = Vec::new();
        let mut it = items.iter().skip(1);
        let mut tokens = lock(&self.tokens);
        let mut cache = lock(&self.cache);
        while let Some(id) = it.next() {
            let id = text(id);
            let _token = it.next();
            let json = it.next().map(text).unwrap_or_default();
            let change: Change = serde_json::from_str(&json)
                .map_err(|e| self.fail(format!("change log entry {id} is unreadable: {e}")))?;
            let n = int(it.next()).unwrap_or(0);
            let mut batch = Batch::default();
            for _ in 0..n {
                let (h, rec, surv) = (it.next(), it.next(), it.next());
                let h = h.map(text).unwrap_or_default();
                let rec = rec.and_then(bytes).unwrap_or_default();
                if rec.is_empty() {
                    continue; // erased since: a later entry says so
                }
                let surv = surv.and_then(bytes).unwrap_or_default();
                let (record, token) =
                    parse_record_value(&h, rec, surv).map_err(|r| self.fail(r))?;
                tokens.insert(record.handle, token);
                batch.records.push(NewRecord {
                    record,
                    shingles: Arc::default(),
                    embedding: None,
                });
            }
            for h in &change.erase {
                tokens.remove(h);
                cache.remove(h);
            }
            batch.survivor_updates = change.survivor_updates;
            batch.boilerplate = change.boilerplate;
            batch.erase = change.erase;
            out.push((id, batch));
        }
        Ok((taken, out))
    }

    /// [`Store::sync`](crate::store::Store::sync): the entries read with the lock first, then
    /// the rest of the log in chunks.
    pub(super) fn catch_up(&mut self, f: &mut dyn FnMut(Batch)) -> Result<()> {
        let started = std::time::Instant::now();
        let mut more = true;
        if !self.prefetched.is_empty() || self.lock_token.is_some() {
            more = self.prefetch_full;
            for (id, batch) in std::mem::take(&mut self.prefetched) {
                f(batch);
                *lock(&self.seen) = id;
            }
        }
        while more {
            let after = lock(&self.seen).clone();
            let cmd = self.lock_sync_cmd("", &after);
            let reply: Value = self.call("reading the change log", |c| c.query(&cmd))?;
            let (_, entries) = self.parse_sync(&reply)?;
            more = entries.len() >= SYNC_CHUNK;
            for (id, batch) in entries {
                f(batch);
                *lock(&self.seen) = id;
            }
        }
        self.sync_time.add(started);
        Ok(())
    }
}
