#include "scripts.h"

#include <openssl/sha.h>

#include <dlock/error.h>
#include <dlock/lock_path.h>

namespace dlock::redis_backend {

namespace {

// What every script shares. A contender's id is "<client>-h<n>-<role>": the role is its last
// letter (x exclusive, w writer, r reader, s semaphore), "dlock:wake:<client>" is the channel of
// the client that waits for it, and the "h" says that client takes a lock handed over by a
// release (an older dlock's ids, "<client>-<n>-<role>", are only woken).
constexpr std::string_view kPrelude = R"lua(
if redis.replicate_commands then redis.replicate_commands() end
local lock, queue, waiting, shared, data, kind, fence =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function role_of(id) return string.sub(id, -1) end
local function exclusive(role) return role == 'x' or role == 'w' end

-- The lock key's value while readers hold and no writer: programs that take the key by the
-- plain convention (SET NX PX) see the lock taken. Not an id (ids end in their role).
local READERS = 'dlock:readers'

-- Whether the lock key's value `value` (false: no key) is a holder that excludes readers: a
-- mutex or writer of dlock, or another program's.
local function excludes_readers(value) return value and value ~= READERS end

-- The readers' mark lasts as long as the longest reader's lease, and goes with the last
-- reader. Never replaces a holder's value, nor a key of another type, whose error would end
-- a script that already wrote (pcall).
local function mark_readers(now)
  local value = redis.pcall('GET', lock)
  if type(value) == 'table' or excludes_readers(value) then return end
  local last = redis.call('ZRANGE', shared, -1, -1, 'WITHSCORES')
  local ms = last[2] and tonumber(last[2]) - now or 0
  if ms > 0 then
    redis.call('SET', lock, READERS, 'PX', string.format('%.0f', ms))
  elseif value then
    redis.call('DEL', lock)
  end
end

local function leave_queue(id)
  redis.call('ZREM', queue, id)
  redis.call('ZREM', waiting, id)
  redis.call('HDEL', data, id)
end

-- The expiry of queue entry `id`, or nil for an entry no dlock client wrote: an id without
-- its client and role, or no expiry (the acquire script writes both at once). No release or
-- expiry would ever remove such a stranger.
local function expiry_of(id)
  if not string.match(id, '^[^-]+%-.*[xwrs]$') then return nil end
  local score = redis.call('ZSCORE', waiting, id)
  return score and tonumber(score) or nil
end

-- Whether the lock has a queue, waiters or shared holders: a sorted set goes with its last
-- member, so an uncontended mutex has none, and its scripts skip what only they would need.
local function lists_exist()
  return redis.call('EXISTS', queue, waiting, shared) > 0
end

-- Waiters and shared holders whose time ran out: their clients died or were cut off. Returns
-- whether it may have written the lock key (the readers' mark).
local function prune(now)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', waiting, '-inf', now)) do leave_queue(id) end
  local readers_left = false
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', shared, '-inf', now)) do
    redis.call('ZREM', shared, id)
    redis.call('HDEL', data, id)
    readers_left = readers_left or role_of(id) == 'r'
  end
  if readers_left then mark_readers(now) end
  return readers_left
end

-- The head of the queue and its expiry, after removing strangers from there, where they would
-- block everyone behind for good. Nil for an empty queue.
local function queue_head()
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then return nil end
    local expires = expiry_of(head)
    if expires then return head, expires end
    leave_queue(head)
  end
end

-- `key` (if it exists) lives at least three quarters of `ms` more, and at most `ms`. Callers
-- pass twice the life of the entries the key holds, so it outlives them, and most calls find
-- enough time left and write nothing. `left`: the key's PTTL if the caller read it since its
-- last write to the key (-2: it did not exist then, and was written since).
local function outlive(key, ms, left)
  if ms <= 0 then return end
  if not left then
    left = redis.call('PTTL', key)
    if left == -2 then return end
  end
  if left < ms - ms / 4 then redis.call('PEXPIRE', key, ms) end
end

-- The bookkeeping outlives the last contender by at most `ms`: an abandoned lock leaves nothing.
-- `listed`: lists_exist(), or true if unknown; `granted`: a grant() kept the records already.
local function keep(ms, listed, granted)
  if listed then
    outlive(queue, ms)
    outlive(waiting, ms)
    outlive(shared, ms)
  end
  if not granted then outlive(data, ms) end
  outlive(kind, ms)
end

-- Lua's numbers are doubles, exact up to 2^53: a counter that high (set by hand, or drawn from
-- a clock two centuries ahead) could not grow by one, and holders would share a token. Tokens
-- stop short of it, with room for the grants of one release. A call that could draw one checks
-- first, before it writes anything (a script's writes stay after an error), and returns why
-- not: a counter spent, or a key that holds no counter.
local LAST_TOKEN = 9007199254740991 - 4294967296
local function fence_fault(now)
  -- pcall: a key of another type is no counter, and must not fail a release after its writes.
  local text = redis.pcall('GET', fence)
  local last = 0
  if type(text) == 'table' then last = nil elseif text then last = tonumber(text) end
  -- Lua 5.1 reads "nan" as a number, which no comparison holds for.
  if not last or last ~= last then
    return 'DLOCKFENCE ' .. fence .. ' holds no fencing counter'
  end
  if not (math.max(last + 1, now * 1000) <= LAST_TOKEN) then
    return 'DLOCKFENCE ' .. fence .. ' is spent: no larger fencing token can be given'
  end
end

-- The next fencing token: one more than the last, and never less than the server's time in
-- microseconds, so that tokens keep growing after a restart that lost the counter (unless the
-- server's clock steps back). As text: Lua would print a large number in exponent form.
local function next_token(now)
  local token = math.max(tonumber(redis.call('GET', fence) or '0') + 1, now * 1000)
  local text = string.format('%.0f', token)
  redis.call('SET', fence, text)
  return token, text
end

-- Whether a contender of `role` with `ahead` entries queued before it may hold now. `holder`:
-- the lock key's value (false: no key); `listed`: lists_exist().
local function may_take(role, ahead, permits, holder, listed)
  local sharing = listed and redis.call('ZCARD', shared) or 0
  if role == 's' then return sharing + ahead < permits end
  if role == 'r' then
    if excludes_readers(holder) then return false end
    if ahead == 0 then return true end
    for _, other in ipairs(redis.call('ZRANGE', queue, 0, ahead - 1)) do
      if exclusive(role_of(other)) then return false end
    end
    return true
  end
  return not holder and ahead == 0 and sharing == 0
end

-- Makes `id` a holder until `expires` (server time, ms): the lock key for a mutex or writer, an
-- entry among the shared holders for a reader or a semaphore holder; a fresh fencing token;
-- its record, holding since `now`; out of the queue if `queued`. `freed`: the caller has just
-- deleted the lock key and the record of its holder. Returns the token, and as text.
local function grant(id, now, expires, record, queued, freed)
  if queued then
    redis.call('ZREM', queue, id)
    redis.call('ZREM', waiting, id)
  end
  local token, token_text = next_token(now)
  local fields = string.sub(string.gsub(record, '"since":%d+',
                                        '"since":' .. string.format('%.0f', now), 1), 2)
  if string.match(fields, '^%s*}') then fields = '}' else fields = ',' .. fields end
  local entry = '{"token":' .. token_text .. fields
  -- -2: no records at all, so none of a holder before us either.
  local records_left = redis.call('PTTL', data)
  if exclusive(role_of(id)) then
    -- The record of the holder before us outlives its key if that holder died (a release
    -- deletes both).
    if records_left ~= -2 and not freed then
      local previous = redis.call('HGET', data, '!exclusive')
      if previous then redis.call('HDEL', data, previous) end
    end
    redis.call('SET', lock, id, 'PX', expires - now)
    -- HMSET: HSET takes several fields only from Redis 4.0, and an older one would fail here,
    -- after the SET above, leaving a holder without its record.
    redis.call('HMSET', data, '!exclusive', id, id, entry)
  else
    redis.call('ZADD', shared, expires, id)
    if role_of(id) == 'r' then mark_readers(now) end
    -- A release's grant may create the key, or hold past what the waiter's last call kept.
    outlive(shared, 2 * (expires - now))
    redis.call('HSET', data, id, entry)
  end
  outlive(data, 2 * (expires - now), records_left)
  return token, token_text
end

-- Hands the lock to each waiter that may hold now, in queue order, and tells it so with one
-- message ("<id> <token>"): after a mutex's release that is the head alone; readers go together
-- up to the first writer; a semaphore fills its permits. A waiter's lease runs until its queue
-- entry would have expired, which its client counts from the request that last refreshed the
-- entry: the grant needs no round trip of the waiter's own. `freed`: the caller has just
-- deleted the lock key and its holder's record.
local function wake(now, freed)
  prune(now)
  if not freed and excludes_readers(redis.call('GET', lock)) then return end
  local held = redis.call('ZCARD', shared)
  local permits  -- read when a semaphore's waiter comes up
  local granted, gone = 0, 0  -- gone: the batch's entries that left the queue
  local batch = redis.call('ZRANGE', queue, 0, 99)
  for _, id in ipairs(batch) do
    local expires = expiry_of(id)
    if not expires then
      leave_queue(id)
      gone = gone + 1
    else
      local role = role_of(id)
      if role == 's' then
        permits = permits or tonumber(string.match(redis.call('GET', kind) or '',
                                                   '^semaphore:(%d+)$') or 0)
        if held + granted >= permits then return end
      elseif exclusive(role) and (granted > 0 or held > 0) then
        return
      end
      local channel = 'dlock:wake:' .. string.match(id, '^[^-]+')
      if string.match(id, '^[^-]+%-h') then
        local _, token_text =
          grant(id, now, expires, redis.call('HGET', data, id) or '{}', true, freed)
        redis.call('PUBLISH', channel, id .. ' ' .. token_text)
        gone = gone + 1
      else
        redis.call('PUBLISH', channel, id)
      end
      granted = granted + 1
      if exclusive(role) then return end
    end
  end
  -- A whole batch that left the queue (readers granted, strangers removed) and found no one
  -- to stop at: the waiters behind it come next. An older client's waiter, only woken, stays
  -- queued, and would be met again.
  if gone == 100 then return wake(now, freed) end
end
)lua";

constexpr std::string_view kAcquire = R"lua(
local id, ttl, permits, record, wait, want =
  ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5] == '1', ARGV[6]
local now = now_ms()
local role = role_of(id)
local fault = fence_fault(now)
if fault then return redis.error_reply(fault) end
-- Read before anything is written: a key of another type on the path fails the script here
-- (WRONGTYPE), not after the kind key was written without its expiry.
local lock_value = redis.call('GET', lock)
local current = redis.call('GET', kind)

-- Queues us, or refreshes our entry if `queued` (it may be there), and returns our place. A
-- new place is drawn like a token: below the token of any grant a release hands this entry,
-- and above that of any grant to an entry of ours that expired before (even across a restart
-- that lost the counter). Last in the queue, so a head read before stays the head.
local function enter_queue(queued)
  local place = queued and redis.call('ZSCORE', queue, id)
  if place then
    place = tonumber(place)
  else
    local place_text
    place, place_text = next_token(now)
    redis.call('ZADD', queue, place_text, id)
    redis.call('HSET', data, id, record)
  end
  redis.call('ZADD', waiting, now + ttl, id)
  keep(2 * ttl, true)
  return place
end

-- Whether the key holds another program's lock, which wakes nobody: polled at short intervals.
local function foreign(holder)
  return excludes_readers(holder) and redis.call('HEXISTS', data, holder) == 0
end

-- Another's exclusive hold, where we could only queue. What the rest of the script reads
-- besides (waiters that died, the queue's head, shared holders) matters to nobody until that
-- holder's release, whose script wakes the queue, or its key's expiry, when we come again.
if exclusive(role) and current == want and excludes_readers(lock_value) and lock_value ~= id then
  if not wait then return {0, -1} end
  local place = enter_queue(true)
  if foreign(lock_value) then return {0, 50, place} end
  local left = redis.call('PTTL', lock)
  return {0, left > 0 and left + 1 or -1, place}
end

local listed = lists_exist()
local head, head_expires
if listed then
  if prune(now) then lock_value = redis.call('GET', lock) end
  head, head_expires = queue_head()
end
if current and current ~= want then
  local busy = redis.call('ZCARD', queue) + redis.call('ZCARD', shared) + (lock_value and 1 or 0)
  if busy > 0 then return redis.error_reply('DLOCKMISMATCH ' .. current) end
end
if current ~= want then redis.call('SET', kind, want) end
-- Granted before, and the reply lost with its connection: ours still, with the same token.
local held
if exclusive(role) then
  held = lock_value == id
else
  held = listed and redis.call('ZSCORE', shared, id) ~= false
end
local earlier = held and string.match(redis.call('HGET', data, id) or '', '^{"token":(%d+)[,}]')
if earlier then
  if exclusive(role) then redis.call('PEXPIRE', lock, ttl)
  else
    redis.call('ZADD', shared, now + ttl, id)
    if role == 'r' then mark_readers(now) end
  end
  keep(2 * ttl, listed)
  return {1, tonumber(earlier)}
end
local rank = listed and redis.call('ZRANK', queue, id)
local ahead = rank or (listed and redis.call('ZCARD', queue) or 0)
if may_take(role, ahead, permits, lock_value, listed) then
  local token = grant(id, now, now + ttl, record, rank ~= false)
  keep(2 * ttl, listed, true)
  return {1, token}
end
if not wait then
  keep(2 * ttl, listed)
  return {0, -1}
end
local place = enter_queue(rank ~= false)
-- When what blocks us could vanish without a release (a holder or a waiter ahead that died).
if foreign(lock_value) then return {0, 50, place} end
local retry = -1
local function sooner(ms) if ms > 0 and (retry < 0 or ms < retry) then retry = ms end end
sooner(redis.call('PTTL', lock))
local first = redis.call('ZRANGE', shared, 0, 0, 'WITHSCORES')
if first[2] then sooner(tonumber(first[2]) - now) end
if head and head ~= id then sooner(head_expires - now) end
if retry > 0 then retry = retry + 1 end
return {0, retry, place}
)lua";

constexpr std::string_view kRenew = R"lua(
local id, ttl = ARGV[1], tonumber(ARGV[2])
if exclusive(role_of(id)) then
  if redis.call('GET', lock) ~= id then return 0 end
  redis.call('PEXPIRE', lock, ttl)
else
  local now = now_ms()
  local expires = redis.call('ZSCORE', shared, id)
  if not expires or tonumber(expires) <= now then return 0 end
  redis.call('ZADD', shared, now + ttl, id)
  if role_of(id) == 'r' then mark_readers(now) end
end
keep(2 * ttl, true)
return 1
)lua";

constexpr std::string_view kRelease = R"lua(
local id = ARGV[1]
local released, fields = 0, {id}
local exclusive_role = exclusive(role_of(id))
if exclusive_role then
  if redis.call('GET', lock) == id then
    released = redis.call('DEL', lock)
    table.insert(fields, '!exclusive')  -- our grant pointed it at us
  end
else
  released = redis.call('ZREM', shared, id)
  if released == 1 and role_of(id) == 'r' then mark_readers(now_ms()) end
end
redis.call('HDEL', data, unpack(fields))
-- Without a queue, nobody waits to be woken. Nor with a fencing counter that cannot give the
-- next holder a token: the waiters learn why when they ask again, as their ttl runs out.
if lists_exist() then
  redis.call('ZREM', queue, id)
  redis.call('ZREM', waiting, id)
  local now = now_ms()
  if not fence_fault(now) then wake(now, exclusive_role and released == 1) end
end
return released
)lua";

constexpr std::string_view kStatus = R"lua(
local now = now_ms()
local holders, waiters = {}, {}
-- A key of another type on the path is another program's: shown, not failed on, so that
-- list() goes on past it.
local holder = redis.pcall('GET', lock)
if type(holder) == 'table' then
  table.insert(holders, {'(a ' .. redis.call('TYPE', lock).ok .. ' key)', ''})
elseif excludes_readers(holder) then
  table.insert(holders, {holder, redis.call('HGET', data, holder) or ''})
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', shared, '(' .. now, '+inf')) do
  table.insert(holders, {id, redis.call('HGET', data, id) or ''})
end
for _, id in ipairs(redis.call('ZRANGE', queue, 0, -1)) do
  local expires = redis.call('ZSCORE', waiting, id)
  if expires and tonumber(expires) > now then
    table.insert(waiters, {id, redis.call('HGET', data, id) or ''})
  end
end
return {holders, waiters}
)lua";

std::string hex_sha1(std::string_view text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  if (SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest) == nullptr) {
    throw Error(errc::backend_failure, "OpenSSL could not compute a script's SHA-1");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : digest) {
    hex += kHex[byte >> 4];
    hex += kHex[byte & 15];
  }
  return hex;
}

Script make_script(std::string_view body, bool may_run_late) {
  std::string source = std::string(kPrelude) + std::string(body);
  std::string sha1 = hex_sha1(source);
  return {std::move(source), std::move(sha1), may_run_late};
}

}  // namespace

void check_unreserved(std::string_view path) {
  if (path.find(kReservedInPaths) != std::string_view::npos) {
    throw Error(errc::invalid_path, printable(path) + ": names dlock's own keys on Redis (" +
                                        std::string(kReservedInPaths) + " is reserved)");
  }
}

LockKeys::LockKeys(std::string_view path) {
  check_unreserved(path);
  const std::string base(path);
  names_ = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{
      base, base + ":dlock:queue", base + ":dlock:waiting", base + ":dlock:shared",
      base + ":dlock:data", base + std::string(kKindSuffix), "dlock:fence"});
}

std::string LockKeys::another_type() const {
  const std::string& path = all()[0];
  return "a key of the lock " + printable(path) +
         " holds a value of another type than dlock's: " + printable(path) +
         " itself or one of dlock's beside it, " + printable(path) + ":dlock:*";
}

namespace {

struct Scripts {
  Script acquire, renew, release, status;
};

// Made once and never destroyed: a lock handle with static storage is destroyed at exit, maybe
// after a static here would be, and its release runs a script.
const Scripts& scripts() {
  static const Scripts* const made = new Scripts{
      make_script(kAcquire, /*may_run_late=*/false), make_script(kRenew, /*may_run_late=*/true),
      make_script(kRelease, /*may_run_late=*/true), make_script(kStatus, /*may_run_late=*/true)};
  return *made;
}

}  // namespace

void prepare_scripts() { scripts(); }

const Script& acquire_script() { return scripts().acquire; }

const Script& renew_script() { return scripts().renew; }

const Script& release_script() { return scripts().release; }

const Script& status_script() { return scripts().status; }

Command script_command(const Script& script, bool by_sha, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args) {
  Command command{by_sha ? "EVALSHA" : "EVAL", by_sha ? script.sha1 : script.source,
                  std::to_string(keys.size())};
  command.insert(command.end(), keys.begin(), keys.end());
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

}  // namespace dlock::redis_backend
