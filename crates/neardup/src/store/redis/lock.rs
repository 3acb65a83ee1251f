//! The store lock `{P}:lock`: one decide-and-commit cycle at a time across processes,
//! taken together with the first catch-up read.

use std::time::{Duration, Instant};

use redis::Value;

use super::scripts::UNLOCK;
use super::sync::SYNC_CHUNK;
use super::{lock, new_token, RedisStore};
use crate::Result;

impl RedisStore {
    /// [`Store::lock`](crate::store::Store::lock): takes the lock with `SET NX PX`, waiting
    /// up to `lock_timeout_ms`, and keeps the log entries read with it for the next `sync`.
    pub(super) fn take_lock(&mut self) -> Result<()> {
        if self.lock_token.is_some() {
            return Ok(());
        }
        let token = format!("{:016x}", new_token());
        let deadline = Instant::now() + self.cfg.lock_timeout;
        let mut backoff = Duration::from_millis(1);
        loop {
            let after = lock(&self.seen).clone();
            let cmd = self.lock_sync_cmd(&token, &after);
            let reply: Value = self.call("taking the store lock", |c| c.query(&cmd))?;
            let (taken, entries) = self.parse_sync(&reply)?;
            if taken {
                self.prefetch_full = entries.len() >= SYNC_CHUNK;
                self.prefetched = entries;
                self.lock_token = Some(token);
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.fail(format!(
                    "could not take the store lock {} within {:?}: another neardup process holds it (it expires {:?} after that process stops renewing it)",
                    self.keys.tagged("lock"),
                    self.cfg.lock_timeout,
                    self.cfg.lock_ttl
                )));
            }
            // Jitter keeps waiting processes from retrying in step.
            let jitter = Duration::from_micros(new_token() % 1000);
            std::thread::sleep(backoff + jitter);
            backoff = (backoff * 2).min(Duration::from_millis(50));
        }
    }

    /// [`Store::unlock`](crate::store::Store::unlock): releases the lock if this process still
    /// holds it.
    pub(super) fn release_lock(&mut self) -> Result<()> {
        self.prefetched.clear();
        let Some(token) = self.lock_token.take() else {
            return Ok(());
        };
        let k = self.keys.tagged("lock");
        self.call("releasing the store lock", |c| {
            c.query::<i64>(redis::cmd("EVAL").arg(UNLOCK).arg(1).arg(&k).arg(&token))
        })?;
        Ok(())
    }
}
