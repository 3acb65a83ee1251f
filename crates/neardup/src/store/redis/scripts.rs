//! The Lua scripts that change the atomic slot `{P}`: the lock with the catch-up read, the
//! unlock, and the atomic part of a commit.

/// `lock` and the catch-up read in one script: takes the lock when `ARGV[1]` is not empty,
/// then returns the log entries after `ARGV[3]` with the records they name.
pub(super) const LOCK_SYNC: &str = r#"
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

/// Releases the lock `KEYS[1]` if this process still holds it, and wakes one process
/// waiting for it: a token pushed on `KEYS[2]`, which waiters block on (`BLPOP`). One token
/// at most is kept, so a release nobody waited for costs a waiter one extra try, never a
/// list that grows; it expires with the lock's time to live.
pub(super) const UNLOCK: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('LPUSH', KEYS[2], '1')
  redis.call('LTRIM', KEYS[2], 0, 0)
  redis.call('PEXPIRE', KEYS[2], 60000)
  return 1
end
return 0
"#;

/// The atomic part of a commit. See `RedisStore::commit_cmd` for the arguments.
pub(super) const COMMIT: &str = r#"
local r = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local last = ''
if #r > 0 then last = r[1][1] end
if last ~= ARGV[1] then
  return redis.error_reply('NEARDUP_STALE the change log is at ' .. (last == '' and 'its start' or last) ..
    ', not at ' .. (ARGV[1] == '' and 'its start' or ARGV[1]) .. ' where this process last read it')
end
local i = 9
local function take() local v = ARGV[i]; i = i + 1; return v end
-- `n` items of `width` arguments each, written by one command per 256 items (a call per
-- item made a batch's thousands of rows a thousand-odd calls from Lua, under the lock).
local function many(cmd, key, n, width)
  for s = 1, n, 256 do
    local part = {}
    for _ = s, math.min(s + 255, n) do
      for _ = 1, width do part[#part + 1] = take() end
    end
    redis.call(cmd, key, unpack(part))
  end
end
many('HSET', KEYS[2], tonumber(take()), 2)
many('HSET', KEYS[3], tonumber(take()), 2)
many('RPUSH', KEYS[4], tonumber(take()), 1)
many('RPUSH', KEYS[5], tonumber(take()), 1)
local n = tonumber(take())
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
    derived('D', prefix .. ':e:' .. h .. ':' .. tok)
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
if ARGV[3] ~= '' and redis.call('GET', KEYS[7]) == ARGV[3] then
  redis.call('DEL', KEYS[7])
  redis.call('LPUSH', KEYS[9], '1')
  redis.call('LTRIM', KEYS[9], 0, 0)
  redis.call('PEXPIRE', KEYS[9], 60000)
end
local out = {id}
if not inline then
  for _, g in ipairs(redis.call('LRANGE', KEYS[8], 0, -1)) do out[#out + 1] = g end
end
return out
"#;
