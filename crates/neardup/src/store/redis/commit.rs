//! Committing a batch: shingle blobs and band members first, then the atomic script, a
//! commit whose reply was lost recognised by its token in the log, and the erasure cleanup
//! a cluster does after it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use redis::{Cmd, RedisError, RedisResult, Value};

use super::conn::{text, transient};
use super::layout::{
    boilerplate_value, fingerprint_member, merge_row, record_value, rejection_row, Change,
};
use super::scripts::COMMIT;
use super::{lock, new_token, RedisStore};
use crate::semantic::embedding_blob;
use crate::store::{ids_as_blob, Batch, Features};
use crate::Result;

fn is_stale(e: &RedisError) -> bool {
    e.to_string().contains("NEARDUP_STALE")
}

impl RedisStore {
    /// [`Store::commit`](crate::store::Store::commit).
    pub(super) fn commit_batch(&mut self, batch: &Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let token = new_token();
        let expected = lock(&self.seen).clone();
        // A single server releases the lock inside the commit script (one round trip less);
        // a cluster keeps it until the erasure cleanup is done.
        let release = match (&self.lock_token, self.cfg.cluster) {
            (Some(t), false) => t.clone(),
            _ => String::new(),
        };
        let derived = self.derived_cmds(batch, token);
        let cmd = self.commit_cmd(batch, token, &expected, &release);
        let mut delay = Duration::from_millis(50);
        let mut attempt = 0;
        let (id, gc) = loop {
            let err = match self.try_commit(&derived, &cmd) {
                Ok(done) => break done,
                Err(e) => e,
            };
            // The script may have run although its reply was lost (or the cluster client
            // resent it after it ran): the log says which.
            if transient(&err) {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_secs(1));
            }
            match self.find_commit(&expected, token) {
                Ok(Some(done)) => break done,
                Ok(None) if is_stale(&err) => {
                    self.stale_commits.fetch_add(1, Ordering::Relaxed);
                    // Our blobs are under our token: nobody else reads them.
                    let keys: Vec<Cmd> = batch
                        .records
                        .iter()
                        .map(|n| {
                            let mut c = redis::cmd("DEL");
                            c.arg(self.keys.shingles(n.record.handle, token))
                                .arg(self.keys.embedding(n.record.handle, token));
                            c
                        })
                        .collect();
                    if !keys.is_empty() {
                        let _ = self.call("cleaning up", |c| c.pipeline(&keys));
                    }
                    let detail = err
                        .detail()
                        .unwrap_or("")
                        .trim_start_matches("NEARDUP_STALE ");
                    return Err(self.fail(format!(
                        "store changed under a stale lock ({detail}): another process committed after this one's lock expired; nothing of this batch was written; reopen the store to continue"
                    )));
                }
                Ok(None) if transient(&err) && attempt < self.cfg.retries => {
                    attempt += 1;
                }
                Ok(None) => return Err(self.fail(format!("commit: {err}"))),
                Err(e) => return Err(e),
            }
        };
        *lock(&self.seen) = id;
        self.commit_time.add(started);
        if !release.is_empty() {
            self.lock_token = None;
            self.lock_released();
        }
        self.drain_gc(&gc);
        {
            let mut tokens = lock(&self.tokens);
            let mut cache = lock(&self.cache);
            for h in &batch.erase {
                tokens.remove(h);
                cache.remove(h);
            }
            for n in &batch.records {
                tokens.insert(n.record.handle, token);
            }
        }
        for n in &batch.records {
            if !n.shingles.is_empty() {
                self.remember_shingles(n.record.handle, Arc::new(n.shingles.to_vec()));
            }
        }
        Ok(())
    }

    /// The arguments of [`COMMIT`].
    fn commit_cmd(&self, batch: &Batch, token: u64, expected: &str, release: &str) -> Cmd {
        let inline = !self.cfg.cluster;
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(COMMIT).arg(9);
        for k in [
            "log",
            "rec",
            "surv",
            "merges",
            "rejections",
            "bp",
            "lock",
            "gc",
            "wake",
        ] {
            cmd.arg(self.keys.tagged(k));
        }
        let handles: Vec<String> = batch
            .records
            .iter()
            .map(|n| n.record.handle.to_string())
            .collect();
        let change = Change {
            survivor_updates: batch.survivor_updates.clone(),
            boilerplate: batch.boilerplate.clone(),
            erase: batch.erase.clone(),
        };
        cmd.arg(expected)
            .arg(format!("{token:016x}"))
            .arg(release)
            .arg(if inline { "1" } else { "0" })
            .arg(&self.cfg.prefix)
            .arg(self.cfg.bands)
            .arg(handles.join(" "))
            .arg(serde_json::to_string(&change).expect("changes serialise"));
        cmd.arg(batch.records.len());
        for n in &batch.records {
            cmd.arg(n.record.handle).arg(record_value(&n.record, token));
        }
        cmd.arg(batch.survivor_updates.len());
        for &(h, s) in &batch.survivor_updates {
            cmd.arg(h).arg(s);
        }
        cmd.arg(batch.merges.len());
        for m in &batch.merges {
            cmd.arg(merge_row(m));
        }
        cmd.arg(batch.rejections.len());
        for r in &batch.rejections {
            cmd.arg(rejection_row(r));
        }
        cmd.arg(batch.boilerplate.len());
        for (host, b) in &batch.boilerplate {
            cmd.arg(host).arg(boilerplate_value(b));
        }
        cmd.arg(batch.erase.len());
        for &h in &batch.erase {
            cmd.arg(h);
        }
        cmd
    }

    /// Shingle blobs and band-set members of the batch's new records, written before the
    /// atomic part so a committed record always has them.
    fn derived_cmds(&self, batch: &Batch, token: u64) -> Vec<Cmd> {
        let mut cmds = Vec::new();
        for n in &batch.records {
            let r = &n.record;
            if !n.shingles.is_empty() {
                let mut c = redis::cmd("SET");
                c.arg(self.keys.shingles(r.handle, token))
                    .arg(ids_as_blob(&n.shingles).as_ref());
                cmds.push(c);
            }
            if let Some(e) = &n.embedding {
                let mut c = redis::cmd("SET");
                c.arg(self.keys.embedding(r.handle, token))
                    .arg(embedding_blob(e));
                cmds.push(c);
            }
            let kind = match r.features {
                Features::Words => 'b',
                Features::Chars => 'c',
                Features::ExactOnly => continue,
            };
            if self.cfg.bands == 0 {
                continue;
            }
            let member = fingerprint_member(r.handle, r.fingerprint);
            let width = 64 / self.cfg.bands;
            let low = r.fingerprint as u64;
            for b in 0..self.cfg.bands {
                let value = (low >> (b * width)) & ((1u64 << width) - 1);
                let mut c = redis::cmd("SADD");
                c.arg(format!("{}:{kind}:{b}:{value}", self.cfg.prefix))
                    .arg(&member);
                cmds.push(c);
            }
        }
        cmds
    }

    /// Looks for the log entry of the commit with `token` after `after`: whether a commit
    /// whose reply was lost was applied.
    fn find_commit(&self, after: &str, token: u64) -> Result<Option<(String, Vec<String>)>> {
        let k = self.keys.tagged("log");
        let start = if after.is_empty() {
            "-".to_owned()
        } else {
            format!("({after}")
        };
        let want = format!("{token:016x}");
        let v: Value = self.call("checking whether the commit was applied", |c| {
            c.query(
                redis::cmd("XRANGE")
                    .arg(&k)
                    .arg(&start)
                    .arg("+")
                    .arg("COUNT")
                    .arg(64),
            )
        })?;
        let Value::Array(entries) = v else {
            return Ok(None);
        };
        for e in entries {
            let Value::Array(parts) = e else { continue };
            let id = parts.first().map(text).unwrap_or_default();
            let Some(Value::Array(fields)) = parts.get(1) else {
                continue;
            };
            let has = fields
                .chunks(2)
                .any(|f| f.len() == 2 && text(&f[0]) == "t" && text(&f[1]) == want);
            if has {
                let gc = if self.cfg.cluster {
                    let k = self.keys.tagged("gc");
                    self.call("reading pending cleanup", |c| {
                        c.query(redis::cmd("LRANGE").arg(&k).arg(0).arg(-1))
                    })?
                } else {
                    Vec::new()
                };
                return Ok(Some((id, gc)));
            }
        }
        Ok(None)
    }

    /// Removes derived keys of erased records (cluster only; a single server does it inside
    /// the commit script), then drops them from `{P}:gc`. A failure leaves them for the next
    /// commit.
    fn drain_gc(&self, gc: &[String]) {
        if gc.is_empty() {
            return;
        }
        let mut cmds = Vec::with_capacity(gc.len());
        for g in gc {
            let mut parts = g.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("D"), Some(key), None) => {
                    let mut c = redis::cmd("DEL");
                    c.arg(key);
                    cmds.push(c);
                }
                (Some("S"), Some(key), Some(member)) => {
                    let mut c = redis::cmd("SREM");
                    c.arg(key).arg(member);
                    cmds.push(c);
                }
                _ => {}
            }
        }
        let k = self.keys.tagged("gc");
        let done = cmds.is_empty()
            || self
                .call("cleaning erased records' keys", |c| c.pipeline(&cmds))
                .is_ok();
        if done {
            let _ = self.call("cleaning erased records' keys", |c| {
                c.query::<()>(redis::cmd("LTRIM").arg(&k).arg(gc.len()).arg(-1))
            });
        }
    }

    /// One attempt at a commit: the new log id and the cleanup still to do.
    fn try_commit(&self, derived: &[Cmd], commit: &Cmd) -> RedisResult<(String, Vec<String>)> {
        let mut guard = lock(&self.conn);
        if guard.is_none() {
            *guard = Some(self.connect()?);
        }
        let conn = guard.as_mut().expect("connected above");
        let reply = if self.cfg.cluster {
            if !derived.is_empty() {
                self.round_trips.fetch_add(1, Ordering::Relaxed);
                conn.pipeline(derived)?;
            }
            self.round_trips.fetch_add(1, Ordering::Relaxed);
            conn.query::<Value>(commit)
        } else {
            // One round trip: the server runs them in order, so the script sees the blobs.
            let mut all = derived.to_vec();
            all.push(commit.clone());
            self.round_trips.fetch_add(1, Ordering::Relaxed);
            conn.pipeline(&all)
                .map(|mut v| v.pop().unwrap_or(Value::Nil))
        };
        let reply = match reply {
            Ok(v) => v,
            Err(e) => {
                if transient(&e) {
                    *guard = None;
                }
                return Err(e);
            }
        };
        let Value::Array(items) = reply else {
            return Err(RedisError::from((
                redis::ErrorKind::UnexpectedReturnType,
                "unexpected reply to the commit script",
            )));
        };
        let mut it = items.iter().map(text);
        let id = it.next().unwrap_or_default();
        Ok((id, it.collect()))
    }
}
