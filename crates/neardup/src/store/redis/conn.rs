//! The connection: to one server or a cluster, reconnected and retried while errors are
//! transient; and reading the values of replies.

use std::sync::atomic::Ordering;
use std::time::Duration;

use redis::{Cmd, RedisError, RedisResult, Value};

use super::{lock, RedisStore};
use crate::Result;

/// One connection: to a server, or to a cluster (which routes each key to its node).
pub(super) enum Conn {
    Single(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl Conn {
    pub(super) fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> RedisResult<T> {
        match self {
            Conn::Single(c) => cmd.query(c),
            Conn::Cluster(c) => cmd.query(c),
        }
    }

    /// Runs commands in one pipeline (on a cluster, one per node, in parallel).
    pub(super) fn pipeline(&mut self, cmds: &[Cmd]) -> RedisResult<Vec<Value>> {
        match self {
            Conn::Single(c) => {
                let mut p = redis::pipe();
                for cmd in cmds {
                    p.add_command(cmd.clone());
                }
                p.query(c)
            }
            Conn::Cluster(c) => {
                let mut p = redis::cluster::cluster_pipe();
                for cmd in cmds {
                    p.add_command(cmd.clone());
                }
                p.query(c)
            }
        }
    }
}

/// Errors worth retrying: the server went away, is restarting, or the cluster is moving.
pub(super) fn transient(e: &RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_cluster_error()
        || matches!(
            e.kind(),
            ErrorKind::Server(ServerErrorKind::BusyLoading)
                | ErrorKind::Server(ServerErrorKind::MasterDown)
                | ErrorKind::ClusterConnectionNotFound
        )
}

pub(super) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

pub(super) fn text(v: &Value) -> String {
    bytes(v).map_or_else(String::new, |b| String::from_utf8_lossy(b).into_owned())
}

impl RedisStore {
    pub(super) fn connect(&self) -> RedisResult<Conn> {
        if self.cfg.cluster {
            let client = redis::cluster::ClusterClientBuilder::new(self.cfg.nodes.clone())
                .connection_timeout(self.cfg.timeout)
                .response_timeout(self.cfg.timeout)
                .retries(2)
                .build()?;
            Ok(Conn::Cluster(Box::new(client.get_connection()?)))
        } else {
            let client = redis::Client::open(self.cfg.nodes[0].as_str())?;
            let conn = client.get_connection_with_timeout(self.cfg.timeout)?;
            conn.set_read_timeout(Some(self.cfg.timeout))?;
            conn.set_write_timeout(Some(self.cfg.timeout))?;
            Ok(Conn::Single(conn))
        }
    }

    /// Runs `op` on the connection, reconnecting and retrying with backoff while the error
    /// is transient. Only for operations that are safe to repeat.
    pub(super) fn call<T>(
        &self,
        what: &str,
        mut op: impl FnMut(&mut Conn) -> RedisResult<T>,
    ) -> Result<T> {
        self.retrying(what, || {
            let mut guard = lock(&self.conn);
            let res = match guard.as_mut() {
                Some(c) => op(c),
                None => self.connect().and_then(|mut c| {
                    let r = op(&mut c);
                    *guard = Some(c);
                    r
                }),
            };
            if matches!(&res, Err(e) if transient(e)) {
                *guard = None;
            }
            res
        })
    }

    /// [`call`](Self::call) for reads that may run on several threads at once (the
    /// verification sets a batch's records are searched against, in parallel): each runs on
    /// a connection of a small pool instead of waiting for the one connection, so their
    /// round trips overlap instead of queueing behind each other.
    pub(super) fn read<T>(
        &self,
        what: &str,
        mut op: impl FnMut(&mut Conn) -> RedisResult<T>,
    ) -> Result<T> {
        self.retrying(what, || {
            let pooled = lock(&self.readers).pop();
            let mut conn = match pooled {
                Some(c) => c,
                None => self.connect()?,
            };
            let res = op(&mut conn);
            if !matches!(&res, Err(e) if transient(e)) {
                lock(&self.readers).push(conn);
            }
            res
        })
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries for transient
    /// errors are spent, with backoff; counts each attempt as a round trip.
    fn retrying<T>(&self, what: &str, mut attempt: impl FnMut() -> RedisResult<T>) -> Result<T> {
        let mut delay = Duration::from_millis(50);
        let mut tries = 0;
        loop {
            let res = attempt();
            self.round_trips.fetch_add(1, Ordering::Relaxed);
            match res {
                Ok(v) => return Ok(v),
                Err(e) if transient(&e) && tries < self.cfg.retries => {
                    tries += 1;
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                Err(e) if transient(&e) => {
                    return Err(self.fail(format!(
                        "{what}: {e} (gave up after {} tries: is the Redis server running and reachable?)",
                        tries + 1
                    )))
                }
                Err(e) => return Err(self.fail(format!("{what}: {e}"))),
            }
        }
    }
}
