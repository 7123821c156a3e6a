/**
 * The Lua scripts of the shared slot ledger (cluster/slot-ledger.ts). Each runs atomically in
 * Redis, so a take and a release never interleave with another instance's.
 *
 * Keys, per backend B: `slots:B` (a sorted set: lease id → expiry, ms), `queue:B` (parked calls
 * waiting on B: `instance|wait id|deadline|model` → arrival time, ms), `last:B` (the model of B's
 * latest lease, for model affinity); `alive` (instance → heartbeat expiry). Every take, release
 * and leave publishes `<leases held>|B` so the other instances see the slot count move.
 */

/**
 * KEYS: slots:B, queue:B, last:B, alive. ARGV: lease id, cap, now, ttl ms, my wait member ('' for
 * a call that never parked), my arrival time, model, affinity ms, channel, B.
 * Returns {1, leases} when the lease is held, {0, leases, entitled member} when refused: no slot
 * left, or an older parked call (anywhere) is entitled to it — the oldest live waiter, or the oldest
 * waiting for B's latest model while the oldest has waited no more than the affinity margin.
 */
export const TAKE = `
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then return {0, n, ''} end
local me = ARGV[5]
local last = redis.call('GET', KEYS[3])
local head, headScore, same, sameScore = nil, nil, nil, nil
local entries = redis.call('ZRANGE', KEYS[2], 0, 63, 'WITHSCORES')
for i = 1, #entries, 2 do
  local member = entries[i]
  local inst, deadline, model = string.match(member, '^([^|]*)|[^|]*|([^|]*)|(.*)$')
  local alive = inst and redis.call('ZSCORE', KEYS[4], inst)
  if not alive or tonumber(alive) < now or tonumber(deadline) < now then
    redis.call('ZREM', KEYS[2], member)
  else
    if head == nil then head = member; headScore = tonumber(entries[i + 1]) end
    if last and model == last then same = member; sameScore = tonumber(entries[i + 1]); break end
  end
end
if same ~= nil and now - headScore <= tonumber(ARGV[8]) then head = same; headScore = sameScore end
local granted = head == nil or head == me
if not granted then
  if me ~= '' and redis.call('ZSCORE', KEYS[2], me) then return {0, n, head} end
  if headScore < tonumber(ARGV[6]) then return {0, n, head} end
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
redis.call('SET', KEYS[3], ARGV[7])
if me ~= '' then redis.call('ZREM', KEYS[2], me) end
redis.call('PUBLISH', ARGV[9], (n + 1) .. '|' .. ARGV[10])
return {1, n + 1, ''}
`;

/** KEYS: slots:B. ARGV: lease id, now, channel, B. Frees the lease; returns the leases left. */
export const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]))
local n = redis.call('ZCARD', KEYS[1])
redis.call('PUBLISH', ARGV[3], n .. '|' .. ARGV[4])
return n
`;

/** KEYS: slots:B, queue:B. ARGV: wait member, now, channel, B. A parked call leaves B's line. */
export const LEAVE = `
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return -1 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]))
local n = redis.call('ZCARD', KEYS[1])
redis.call('PUBLISH', ARGV[3], n .. '|' .. ARGV[4])
return n
`;

/** KEYS: slots:B1, slots:B2, …. ARGV: now. Leases held on each, expired ones dropped first. */
export const COUNT = `
local counts = {}
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', tonumber(ARGV[1]))
  counts[i] = redis.call('ZCARD', KEYS[i])
end
return counts
`;
