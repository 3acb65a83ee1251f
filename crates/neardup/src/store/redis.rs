//! The Redis store (feature `redis`): one shared store for many `neardup` processes on many
//! machines, on a single Redis server or a Redis Cluster.
//!
//! # URLs
//!
//! `redis://[user:pass@]host:port/db?prefix=news` for one server, and
//! `redis+cluster://[user:pass@]host:port,host:port/?prefix=news` for a cluster (any of its
//! masters; the rest are discovered). `rediss://` is recognised but needs a build with TLS,
//! which this one lacks. Query options: `prefix` (default `neardup`: one prefix per
//! dataset), `bands` (seed 000's band sets written for other tools: 0, 2, 4 (default), 8 or
//! 16), `lock_ttl_ms` (30000), `lock_timeout_ms` (60000), `timeout_ms` (30000: connect and
//! reply), `retries` (6).
//!
//! # Layout
//!
//! Keys under the hash tag `{P}` share one cluster slot, so one Lua script can change them
//! atomically: `{P}:meta` (hash), `{P}:lock` (string), `{P}:log` (stream: the change log),
//! `{P}:rec` (hash: handle -> `token fingerprint features json-record`), `{P}:surv` (hash:
//! handle -> survivor, after a survivor change), `{P}:merges` and `{P}:rejections` (lists of
//! JSON rows, `""` where a row was erased), `{P}:bp` (hash: host -> boilerplate) and `{P}:gc`
//! (list: derived keys an erasure still has to clean on a cluster). Derived data is spread
//! over slots: `P:s:<handle>:<token>` (compact shingle ids, little-endian u32s) and seed
//! 000's band sets `P:b:<band>:<value>` (`P:c:…` for short-text records) with members
//! `<handle>:<fingerprint hex>`, so a tool querying Redis directly needs no second round
//! trip per candidate.
//!
//! # Consistency
//!
//! Each process keeps the index in memory (one round trip per batch instead of one per band
//! per record). [`lock`](Store::lock) takes `{P}:lock` with `SET NX PX` and, in the same
//! script, reads the change log past this process's position; [`commit`](Store::commit) is
//! one script that refuses the batch if the log moved since (a lock that expired under a
//! stalled process), then writes records, survivor changes, merge log, rejections,
//! boilerplate and erasures and appends the change to the log. Shingle blobs and band
//! members are written before that script (under a key no other commit can use), so a
//! committed record always has them. A commit whose reply was lost is recognised by its
//! token in the log, never blindly retried.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use redis::{Cmd, RedisError, RedisResult, Value};

use super::{
    blob_to_ids, ids_as_blob, Batch, Features, HostBoilerplate, MergeLogEntry, NewRecord,
    Rejection, Store, StoredRecord,
};
use crate::{Error, Result};

/// Version of the layout above, kept in `{P}:meta` as `redis_layout`.
const LAYOUT_VERSION: &str = "1";

/// Log entries read per round trip when catching up.
const SYNC_CHUNK: usize = 32;

/// Shingle sets kept in memory (the records this process committed are the likeliest
/// candidates of the next ones).
const CACHE_CAPACITY: usize = 200_000;

/// `lock` and the catch-up read in one script: takes the lock when `ARGV[1]` is not empty,
/// then returns the log entries after `ARGV[3]` with the records they name.
const LOCK_SYNC: &str = r#"
if ARGV[1] ~= '' then
  local cur = redis.call('GET', KEYS[1])
  if cur == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  elseif not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return {0}
  end
end
local start = '-'
if ARGV[3] ~= '' then start = '(' .. ARGV[3] end
local entries = redis.call('XRANGE', KEYS[2], start, '+', 'COUNT', ARGV[4])
local out = {1}
for _, e in ipairs(entries) do
  local f = {}
  for j = 1, #e[2], 2 do f[e[2][j]] = e[2][j + 1] end
  out[#out + 1] = e[1]
  out[#out + 1] = f.t or ''
  out[#out + 1] = f.b or '{}'
  local hs = {}
  for h in string.gmatch(f.h or '', '%d+') do hs[#hs + 1] = h end
  out[#out + 1] = #hs
  for s = 1, #hs, 500 do
    local part = {}
    for j = s, math.min(s + 499, #hs) do part[#part + 1] = hs[j] end
    local recs = redis.call('HMGET', KEYS[3], unpack(part))
    local survs = redis.call('HMGET', KEYS[4], unpack(part))
    for j = 1, #part do
      out[#out + 1] = part[j]
      out[#out + 1] = recs[j] or ''
      out[#out + 1] = survs[j] or ''
    end
  end
end
return out
"#;

/// Releases the lock if this process still holds it.
const UNLOCK: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#;

/// The atomic part of a commit. See `RedisStore::commit_args` for the arguments.
const COMMIT: &str = r#"
local r = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local last = ''
if #r > 0 then last = r[1][1] end
if last ~= ARGV[1] then
  return redis.error_reply('NEARDUP_STALE the change log is at ' .. (last == '' and 'its start' or last) ..
    ', not at ' .. (ARGV[1] == '' and 'its start' or ARGV[1]) .. ' where this process last read it')
end
local i = 9
local function take() local v = ARGV[i]; i = i + 1; return v end
local n = tonumber(take())
for _ = 1, n do
  redis.call('HSET', KEYS[2], take(), take())
end
n = tonumber(take())
for _ = 1, n do
  local h = take()
  redis.call('HSET', KEYS[3], h, take())
end
n = tonumber(take())
for _ = 1, n do redis.call('RPUSH', KEYS[4], take()) end
n = tonumber(take())
for _ = 1, n do redis.call('RPUSH', KEYS[5], take()) end
n = tonumber(take())
for _ = 1, n do
  local host = take()
  redis.call('HSET', KEYS[6], host, take())
end
local inline = ARGV[4] == '1'
local prefix = ARGV[5]
local bands = tonumber(ARGV[6])
local function derived(op, key, member)
  if inline then
    if op == 'D' then redis.call('DEL', key) else redis.call('SREM', key, member) end
  elseif op == 'D' then
    redis.call('RPUSH', KEYS[8], 'D ' .. key)
  else
    redis.call('RPUSH', KEYS[8], 'S ' .. key .. ' ' .. member)
  end
end
local erased, any = {}, false
n = tonumber(take())
for _ = 1, n do
  local h = take()
  local v = redis.call('HGET', KEYS[2], h)
  if v then
    local tok, fp, feat = string.sub(v, 1, 16), string.sub(v, 18, 49), string.sub(v, 51, 51)
    erased[cjson.decode(string.sub(v, 53)).id] = true
    any = true
    redis.call('HDEL', KEYS[2], h)
    redis.call('HDEL', KEYS[3], h)
    derived('D', prefix .. ':s:' .. h .. ':' .. tok)
    if bands > 0 and (feat == 'w' or feat == 'c') then
      local kind = 'b'
      if feat == 'c' then kind = 'c' end
      local low = string.sub(fp, 17, 32)
      local member = h .. ':' .. fp
      if string.sub(fp, 1, 16) == '0000000000000000' then member = h .. ':' .. low end
      local nd = 16 / bands
      for b = 0, bands - 1 do
        local chunk = string.sub(low, 17 - (b + 1) * nd, 16 - b * nd)
        derived('S', prefix .. ':' .. kind .. ':' .. b .. ':' .. string.format('%d', tonumber(chunk, 16)), member)
      end
    end
  end
end
local function rewrite(key, fn)
  local len = redis.call('LLEN', key)
  for s = 0, len - 1, 1000 do
    local rows = redis.call('LRANGE', key, s, s + 999)
    for j, row in ipairs(rows) do
      if row ~= '' then
        local new = fn(cjson.decode(row))
        if new then redis.call('LSET', key, s + j - 1, new) end
      end
    end
  end
end
if any then
  rewrite(KEYS[4], function(m)
    if erased[m[2]] then return '' end
    local changed = false
    if erased[m[1]] then m[1] = '<erased>'; changed = true end
    if erased[m[3]] then m[3] = '<erased>'; changed = true end
    if changed then return cjson.encode(m) end
    return nil
  end)
  rewrite(KEYS[5], function(x)
    if erased[x[1]] or erased[x[2]] then return '' end
    return nil
  end)
end
local id = redis.call('XADD', KEYS[1], '*', 't', ARGV[2], 'h', ARGV[7], 'b', ARGV[8])
if ARGV[3] ~= '' and redis.call('GET', KEYS[7]) == ARGV[3] then redis.call('DEL', KEYS[7]) end
local out = {id}
if not inline then
  for _, g in ipairs(redis.call('LRANGE', KEYS[8], 0, -1)) do out[#out + 1] = g end
end
return out
"#;

/// What the change log carries besides the handles of new records (whose data other
/// processes read from `{P}:rec`, so an erasure leaves no copy of a record in the log).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Change {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    survivor_updates: Vec<(u64, u64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    boilerplate: Vec<(String, HostBoilerplate)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    erase: Vec<u64>,
}

/// Where the servers are and how to use them, parsed from the store URL.
#[derive(Debug, Clone)]
struct Config {
    /// The URL with any password masked, for messages.
    display: String,
    /// Connection URLs: one, or a cluster's seed nodes.
    nodes: Vec<String>,
    cluster: bool,
    prefix: String,
    bands: u32,
    lock_ttl: Duration,
    lock_timeout: Duration,
    timeout: Duration,
    retries: u32,
}

impl Config {
    fn parse(url: &str) -> std::result::Result<Config, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or("expected redis://host:port/db or redis+cluster://host:port,host:port/")?;
        let (cluster, tls) = match scheme {
            "redis" => (false, false),
            "rediss" => (false, true),
            "redis+cluster" => (true, false),
            "rediss+cluster" => (true, true),
            other => {
                return Err(format!(
                    "unknown scheme {other:?}: use redis://, rediss:// or redis+cluster://"
                ))
            }
        };
        if tls {
            return Err("this neardup was built without TLS support for Redis: use redis:// (a TLS tunnel such as stunnel or spiped can carry it) or build the redis crate with its tls-rustls feature".into());
        }
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = before_query.split_once('/').unwrap_or((before_query, ""));
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let mut cfg = Config {
            display: String::new(),
            nodes: Vec::new(),
            cluster,
            prefix: "neardup".into(),
            bands: 4,
            lock_ttl: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
            retries: 6,
        };
        let mut passthrough = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let ms = || {
                v.parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|_| format!("{k}={v:?}: expected milliseconds"))
            };
            match k {
                "prefix" => {
                    if v.is_empty()
                        || !v
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
                    {
                        return Err(format!(
                            "prefix={v:?}: use letters, digits and - _ . : only"
                        ));
                    }
                    cfg.prefix = v.to_owned();
                }
                "bands" => {
                    cfg.bands = match v.parse() {
                        Ok(b @ (0 | 2 | 4 | 8 | 16)) => b,
                        _ => return Err(format!("bands={v:?}: expected 0, 2, 4, 8 or 16")),
                    }
                }
                "lock_ttl_ms" => cfg.lock_ttl = ms()?,
                "lock_timeout_ms" => cfg.lock_timeout = ms()?,
                "timeout_ms" => cfg.timeout = ms()?,
                "retries" => {
                    cfg.retries = v
                        .parse()
                        .map_err(|_| format!("retries={v:?}: expected a count"))?
                }
                _ => passthrough.push(pair),
            }
        }
        if cfg.lock_ttl.is_zero() || cfg.timeout.is_zero() {
            return Err("lock_ttl_ms and timeout_ms must be positive".into());
        }
        let hosts: Vec<&str> = hosts.split(',').filter(|h| !h.is_empty()).collect();
        if hosts.is_empty() {
            return Err("no host: expected redis://host:port/db".into());
        }
        if !cluster && hosts.len() > 1 {
            return Err("several hosts need redis+cluster://".into());
        }
        let auth = userinfo.map_or(String::new(), |u| format!("{u}@"));
        let query = if passthrough.is_empty() {
            String::new()
        } else {
            format!("?{}", passthrough.join("&"))
        };
        let db = if cluster { "" } else { path };
        cfg.nodes = hosts
            .iter()
            .map(|h| format!("redis://{auth}{h}/{db}{query}"))
            .collect();
        let masked = match userinfo {
            Some(u) => match u.split_once(':') {
                Some((user, _)) => format!("{user}:***@"),
                None => "***@".to_owned(),
            },
            None => String::new(),
        };
        cfg.display = format!(
            "{scheme}://{masked}{}",
            url.split_once('@').map_or(rest, |x| x.1)
        );
        Ok(cfg)
    }
}

/// One connection: to a server, or to a cluster (which routes each key to its node).
enum Conn {
    Single(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl Conn {
    fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> RedisResult<T> {
        match self {
            Conn::Single(c) => cmd.query(c),
            Conn::Cluster(c) => cmd.query(c),
        }
    }

    /// Runs commands in one pipeline (on a cluster, one per node, in parallel).
    fn pipeline(&mut self, cmds: &[Cmd]) -> RedisResult<Vec<Value>> {
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

/// Key names.
#[derive(Debug, Clone)]
struct Keys {
    prefix: String,
}

impl Keys {
    /// A key in the atomic slot.
    fn tagged(&self, name: &str) -> String {
        format!("{{{}}}:{name}", self.prefix)
    }
    fn shingles(&self, handle: u64, token: u64) -> String {
        format!("{}:s:{handle}:{token:016x}", self.prefix)
    }
}

/// Counters of the store's traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedisStats {
    /// Requests sent and answered (a pipeline or a script counts once).
    pub round_trips: u64,
    /// Shingle sets read from Redis (cache misses).
    pub shingle_reads: u64,
    /// Commits refused because another process had committed under a lock this one had lost.
    pub stale_commits: u64,
}

/// The Redis store. See the [module documentation](self) for URLs and the layout.
pub struct RedisStore {
    cfg: Config,
    keys: Keys,
    conn: Mutex<Option<Conn>>,
    /// The last change-log id this process has applied (`""`: none).
    seen: Mutex<String>,
    /// Commit token of each known record: part of its shingle key.
    tokens: Mutex<HashMap<u64, u64>>,
    cache: Mutex<HashMap<u64, Arc<Vec<u32>>>>,
    /// The lock's token while this process holds it.
    lock_token: Option<String>,
    /// Log entries read together with the lock, for the `sync` that follows.
    prefetched: Vec<(String, Batch)>,
    /// Whether the prefetch stopped at its chunk size (more may follow).
    prefetch_full: bool,
    round_trips: AtomicU64,
    shingle_reads: AtomicU64,
    stale_commits: AtomicU64,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.cfg.display)
            .field("prefix", &self.cfg.prefix)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent, so a poisoned lock is usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Errors worth retrying: the server went away, is restarting, or the cluster is moving.
fn transient(e: &RedisError) -> bool {
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

fn is_stale(e: &RedisError) -> bool {
    e.to_string().contains("NEARDUP_STALE")
}

fn new_token() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut seed = Vec::with_capacity(40);
    seed.extend_from_slice(&nanos.to_le_bytes());
    seed.extend_from_slice(&std::process::id().to_le_bytes());
    seed.extend_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let stack = 0u8;
    seed.extend_from_slice(&(std::ptr::addr_of!(stack) as usize).to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&seed)
}

fn features_char(f: Features) -> char {
    match f {
        Features::Words => 'w',
        Features::Chars => 'c',
        Features::ExactOnly => 'x',
    }
}

/// `{P}:rec`'s value: fixed-width fields the scripts read without parsing JSON, then the
/// record.
fn record_value(r: &StoredRecord, token: u64) -> String {
    format!(
        "{token:016x} {:032x} {} {}",
        r.fingerprint,
        features_char(r.features),
        serde_json::to_string(r).expect("records serialise")
    )
}

fn parse_record_value(
    handle: &str,
    value: &[u8],
    survivor: &[u8],
) -> std::result::Result<(StoredRecord, u64), String> {
    let bad = |what: &str| format!("record {handle} in Redis is unreadable ({what})");
    if value.len() < 53 {
        return Err(bad("too short"));
    }
    let token = std::str::from_utf8(&value[..16])
        .ok()
        .and_then(|t| u64::from_str_radix(t, 16).ok())
        .ok_or_else(|| bad("token"))?;
    let mut record: StoredRecord =
        serde_json::from_slice(&value[52..]).map_err(|e| bad(&e.to_string()))?;
    if !survivor.is_empty() {
        record.survivor = std::str::from_utf8(survivor)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("survivor"))?;
    }
    Ok((record, token))
}

fn fingerprint_member(handle: u64, fp: u128) -> String {
    if fp >> 64 == 0 {
        format!("{handle}:{fp:016x}")
    } else {
        format!("{handle}:{fp:032x}")
    }
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn text(v: &Value) -> String {
    bytes(v).map_or_else(String::new, |b| String::from_utf8_lossy(b).into_owned())
}

impl RedisStore {
    /// Connects to the Redis server or cluster at `url` (see the module documentation) and
    /// checks the layout version under the URL's prefix.
    ///
    /// # Errors
    /// [`Error::Store`] for a malformed URL, a server that cannot be reached after the
    /// retries, or keys of another layout version under the prefix.
    pub fn open(url: &str) -> Result<RedisStore> {
        let cfg = Config::parse(url).map_err(|reason| Error::Store {
            path: PathBuf::from(url.split('@').next_back().unwrap_or(url)),
            reason,
        })?;
        let store = RedisStore {
            keys: Keys {
                prefix: cfg.prefix.clone(),
            },
            cfg,
            conn: Mutex::new(None),
            seen: Mutex::new(String::new()),
            tokens: Mutex::new(HashMap::new()),
            cache: Mutex::new(HashMap::new()),
            lock_token: None,
            prefetched: Vec::new(),
            prefetch_full: false,
            round_trips: AtomicU64::new(0),
            shingle_reads: AtomicU64::new(0),
            stale_commits: AtomicU64::new(0),
        };
        match store.get_meta("redis_layout")? {
            None => store.put_meta("redis_layout", LAYOUT_VERSION)?,
            Some(v) if v == LAYOUT_VERSION => {}
            Some(v) => {
                return Err(store.fail(format!(
                    "keys under prefix {:?} have Redis layout version {v}; this neardup reads version {LAYOUT_VERSION}: use the neardup release that wrote them, or another prefix",
                    store.cfg.prefix
                )))
            }
        }
        *lock(&store.seen) = store.last_log_id()?;
        Ok(store)
    }

    /// The key prefix (one per dataset).
    pub fn prefix(&self) -> &str {
        &self.cfg.prefix
    }

    /// Traffic counters since the store was opened.
    pub fn stats(&self) -> RedisStats {
        RedisStats {
            round_trips: self.round_trips.load(Ordering::Relaxed),
            shingle_reads: self.shingle_reads.load(Ordering::Relaxed),
            stale_commits: self.stale_commits.load(Ordering::Relaxed),
        }
    }

    fn fail(&self, reason: String) -> Error {
        Error::Store {
            path: PathBuf::from(&self.cfg.display),
            reason,
        }
    }

    fn connect(&self) -> RedisResult<Conn> {
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
    fn call<T>(&self, what: &str, mut op: impl FnMut(&mut Conn) -> RedisResult<T>) -> Result<T> {
        let mut delay = Duration::from_millis(50);
        let mut attempt = 0;
        loop {
            let res = {
                let mut guard = lock(&self.conn);
                let res = match guard.as_mut() {
                    Some(c) => op(c),
                    None => self.connect().and_then(|mut c| {
                        let r = op(&mut c);
                        *guard = Some(c);
                        r
                    }),
                };
                self.round_trips.fetch_add(1, Ordering::Relaxed);
                if matches!(&res, Err(e) if transient(e)) {
                    *guard = None;
                }
                res
            };
            match res {
                Ok(v) => return Ok(v),
                Err(e) if transient(&e) && attempt < self.cfg.retries => {
                    attempt += 1;
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                Err(e) if transient(&e) => {
                    return Err(self.fail(format!(
                        "{what}: {e} (gave up after {} tries: is the Redis server running and reachable?)",
                        attempt + 1
                    )))
                }
                Err(e) => return Err(self.fail(format!("{what}: {e}"))),
            }
        }
    }

    fn get_meta(&self, key: &str) -> Result<Option<String>> {
        let k = self.keys.tagged("meta");
        self.call("reading meta", |c| {
            c.query(redis::cmd("HGET").arg(&k).arg(key))
        })
    }

    fn put_meta(&self, key: &str, value: &str) -> Result<()> {
        let k = self.keys.tagged("meta");
        self.call("writing meta", |c| {
            c.query(redis::cmd("HSET").arg(&k).arg(key).arg(value))
        })
    }

    fn last_log_id(&self) -> Result<String> {
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

    fn lock_sync_cmd(&self, lock_token: &str, after: &str) -> Cmd {
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
    fn parse_sync(&self, v: &Value) -> Result<(bool, Vec<(String, Batch)>)> {
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

    /// The arguments of [`COMMIT`].
    fn commit_cmd(&self, batch: &Batch, token: u64, expected: &str, release: &str) -> Cmd {
        let inline = !self.cfg.cluster;
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(COMMIT).arg(8);
        for k in [
            "log",
            "rec",
            "surv",
            "merges",
            "rejections",
            "bp",
            "lock",
            "gc",
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
            let rest = MergeLogEntry {
                kept: String::new(),
                merged: String::new(),
                matched: String::new(),
                ..m.clone()
            };
            let row = (
                &m.kept,
                &m.merged,
                &m.matched,
                serde_json::to_string(&rest).expect("merges serialise"),
            );
            cmd.arg(serde_json::to_string(&row).expect("rows serialise"));
        }
        cmd.arg(batch.rejections.len());
        for r in &batch.rejections {
            let rest = Rejection {
                record: String::new(),
                candidate: String::new(),
                ..r.clone()
            };
            let row = (
                &r.record,
                &r.candidate,
                serde_json::to_string(&rest).expect("rejections serialise"),
            );
            cmd.arg(serde_json::to_string(&row).expect("rows serialise"));
        }
        cmd.arg(batch.boilerplate.len());
        for (host, b) in &batch.boilerplate {
            let mut blob = b.pages.to_le_bytes().to_vec();
            blob.extend(b.shingles.iter().flat_map(|h| h.to_le_bytes()));
            cmd.arg(host).arg(blob);
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

    fn shingle_blob(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        let Some(token) = lock(&self.tokens).get(&handle).copied() else {
            return Ok(None);
        };
        let key = self.keys.shingles(handle, token);
        let blob: Option<Vec<u8>> =
            self.call("reading shingles", |c| c.query(redis::cmd("GET").arg(&key)))?;
        self.shingle_reads.fetch_add(1, Ordering::Relaxed);
        blob.map(|b| blob_to_ids(&b)).transpose().map_err(|reason| {
            self.fail(format!(
                "the verification set of record handle {handle} is damaged: {reason}"
            ))
        })
    }

    fn remember_shingles(&self, handle: u64, ids: Arc<Vec<u32>>) {
        let mut cache = lock(&self.cache);
        if cache.len() >= CACHE_CAPACITY {
            // Crude but bounded: start over rather than track recency on every read.
            cache.clear();
        }
        cache.insert(handle, ids);
    }

    /// Reads every entry of a list of JSON rows, skipping erased ones.
    fn rows(&self, name: &str, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let k = self.keys.tagged(name);
        let mut start = 0i64;
        loop {
            let rows: Vec<Vec<u8>> = self.call("reading a log", |c| {
                c.query(redis::cmd("LRANGE").arg(&k).arg(start).arg(start + 999))
            })?;
            for row in &rows {
                if !row.is_empty() {
                    f(row)?;
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

impl Store for RedisStore {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.get_meta(key)
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.put_meta(key, value)
    }

    fn load(&self, f: &mut dyn FnMut(StoredRecord)) -> Result<()> {
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

    fn shingles_many(&self, handles: &[u64]) -> Result<Vec<Option<Vec<u32>>>> {
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
        let cmds: Vec<Cmd> = missing
            .iter()
            .map(|(_, _, key)| {
                let mut c = redis::cmd("GET");
                c.arg(key);
                c
            })
            .collect();
        let values = self.call("reading shingles", |c| c.pipeline(&cmds))?;
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

    fn shingles(&self, handle: u64) -> Result<Option<Vec<u32>>> {
        if let Some(s) = lock(&self.cache).get(&handle) {
            return Ok(Some(s.as_ref().clone()));
        }
        let ids = self.shingle_blob(handle)?;
        if let Some(ids) = &ids {
            self.remember_shingles(handle, Arc::new(ids.clone()));
        }
        Ok(ids)
    }

    fn boilerplate(&self) -> Result<Vec<(String, HostBoilerplate)>> {
        let mut out: Vec<(String, HostBoilerplate)> = self
            .scan_hash("bp")?
            .into_iter()
            .filter(|(_, blob)| blob.len() >= 8)
            .map(|(host, blob)| {
                (
                    String::from_utf8_lossy(&host).into_owned(),
                    HostBoilerplate {
                        pages: u64::from_le_bytes(blob[..8].try_into().expect("8 bytes")),
                        shingles: blob[8..]
                            .chunks_exact(8)
                            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                            .collect(),
                    },
                )
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn merges(&self, f: &mut dyn FnMut(MergeLogEntry)) -> Result<()> {
        self.rows("merges", &mut |row| {
            let (kept, merged, matched, rest): (String, String, String, String) =
                serde_json::from_slice(row)
                    .map_err(|e| self.fail(format!("merge-log row is unreadable: {e}")))?;
            let entry: MergeLogEntry = serde_json::from_str(&rest)
                .map_err(|e| self.fail(format!("merge-log row is unreadable: {e}")))?;
            f(MergeLogEntry {
                kept,
                merged,
                matched,
                ..entry
            });
            Ok(())
        })
    }

    fn rejections(&self, f: &mut dyn FnMut(Rejection)) -> Result<()> {
        self.rows("rejections", &mut |row| {
            let (record, candidate, rest): (String, String, String) =
                serde_json::from_slice(row)
                    .map_err(|e| self.fail(format!("rejection row is unreadable: {e}")))?;
            let r: Rejection = serde_json::from_str(&rest)
                .map_err(|e| self.fail(format!("rejection row is unreadable: {e}")))?;
            f(Rejection {
                record,
                candidate,
                ..r
            });
            Ok(())
        })
    }

    fn commit(&mut self, batch: &Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
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
                            c.arg(self.keys.shingles(n.record.handle, token));
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
        if !release.is_empty() {
            self.lock_token = None;
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

    fn lock(&mut self) -> Result<()> {
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

    fn unlock(&mut self) -> Result<()> {
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

    fn sync(&mut self, f: &mut dyn FnMut(Batch)) -> Result<()> {
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
        Ok(())
    }
}

#[cfg(test)]
#[path = "../../tests/support/redis_server.rs"]
pub(crate) mod test_server;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_options_and_mask_passwords() {
        let c = Config::parse("redis://u:secret@10.0.0.1:6380/2?prefix=news&bands=8&retries=2")
            .unwrap();
        assert_eq!(c.nodes, ["redis://u:secret@10.0.0.1:6380/2"]);
        assert_eq!((c.prefix.as_str(), c.bands, c.retries), ("news", 8, 2));
        assert!(!c.display.contains("secret"), "{}", c.display);
        let c = Config::parse("redis+cluster://a:1,b:2/?prefix=x").unwrap();
        assert!(c.cluster);
        assert_eq!(c.nodes, ["redis://a:1/", "redis://b:2/"]);
        for bad in [
            "redis://h:1/?bands=3",
            "redis://h:1/?prefix=a{b}",
            "http://h:1",
            "redis://a:1,b:2/",
            "rediss://h:1/",
        ] {
            assert!(Config::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn record_values_round_trip() {
        let r = StoredRecord {
            handle: 7,
            id: "x y".into(),
            fingerprint: u128::MAX - 5,
            content_hash: 9,
            url: None,
            host: None,
            first_seen: crate::record::Timestamp(5),
            retention_class: None,
            survivor: 7,
            arrival: super::super::Arrival::New,
            tokens: 3,
            language: None,
            features: Features::Words,
        };
        let v = record_value(&r, 0xabc);
        assert_eq!(&v[17..49], format!("{:032x}", r.fingerprint));
        assert_eq!(&v[50..51], "w");
        let (back, token) = parse_record_value("7", v.as_bytes(), b"3").unwrap();
        assert_eq!(token, 0xabc);
        assert_eq!(back, StoredRecord { survivor: 3, ..r });
    }
}
