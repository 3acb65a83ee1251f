//! The store lock `{P}:lock`: one decide-and-commit cycle at a time across processes,
//! taken together with the first catch-up read.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use redis::Value;

use super::scripts::UNLOCK;
use super::sync::SYNC_CHUNK;
use super::{lock, new_token, RedisStore};
use crate::Result;

/// The longest a process blocks waiting for the lock's release before it tries again.
const WAKE_POLL: Duration = Duration::from_millis(200);

impl RedisStore {
    /// [`Store::lock`](crate::store::Store::lock): takes the lock with `SET NX PX`, waiting
    /// up to `lock_timeout_ms`, and keeps the log entries read with it for the next `sync`.
    ///
    /// A process that finds the lock taken blocks on `{P}:wake` (`BLPOP`) until the holder
    /// releases it and pushes a token there, then tries again at once: the lock passes to
    /// a waiter within a round trip of its release. Sleeping between tries instead lost up
    /// to the whole backoff (50 ms) at every hand-over, and the waiters' tries took turns
    /// with the holder's requests on the server. The wait is cut at [`WAKE_POLL`], so a
    /// lock whose holder died (it expires after `lock_ttl_ms`, no token) is still found
    /// free soon after.
    pub(super) fn take_lock(&mut self) -> Result<()> {
        if self.lock_token.is_some() {
            return Ok(());
        }
        let token = format!("{:016x}", new_token());
        let started = Instant::now();
        let deadline = started + self.cfg.lock_timeout;
        let wake = self.keys.tagged("wake");
        loop {
            let after = lock(&self.seen).clone();
            let cmd = self.lock_sync_cmd(&token, &after);
            let reply: Value = self.call("taking the store lock", |c| c.query(&cmd))?;
            let (taken, entries) = self.parse_sync(&reply)?;
            if taken {
                self.lock_wait.add(started);
                self.locks.fetch_add(1, Ordering::Relaxed);
                self.locked_at = Some(Instant::now());
                self.prefetch_full = entries.len() >= SYNC_CHUNK;
                self.prefetched = entries;
                self.lock_token = Some(token);
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.fail(format!(
                    "could not take the store lock {} within {:?}: another neardup process holds it (it expires {:?} after that process stops renewing it)",
                    self.keys.tagged("lock"),
                    self.cfg.lock_timeout,
                    self.cfg.lock_ttl
                )));
            }
            // Below the reply timeout, so a wait that runs its course is no error.
            let wait = WAKE_POLL
                .min(deadline - now)
                .min(self.cfg.timeout / 2)
                .max(Duration::from_millis(1));
            let mut blpop = redis::cmd("BLPOP");
            blpop.arg(&wake).arg(format!("{:.3}", wait.as_secs_f64()));
            self.call("waiting for the store lock", |c| c.query::<Value>(&blpop))?;
        }
    }

    /// [`Store::unlock`](crate::store::Store::unlock): releases the lock if this process still
    /// holds it.
    pub(super) fn release_lock(&mut self) -> Result<()> {
        self.prefetched.clear();
        let Some(token) = self.lock_token.take() else {
            return Ok(());
        };
        self.lock_released();
        let (k, wake) = (self.keys.tagged("lock"), self.keys.tagged("wake"));
        self.call("releasing the store lock", |c| {
            c.query::<i64>(
                redis::cmd("EVAL")
                    .arg(UNLOCK)
                    .arg(2)
                    .arg(&k)
                    .arg(&wake)
                    .arg(&token),
            )
        })?;
        Ok(())
    }

    /// Counts the time the lock was held, once it is released.
    pub(super) fn lock_released(&mut self) {
        if let Some(at) = self.locked_at.take() {
            self.lock_held.add(at);
        }
    }
}
