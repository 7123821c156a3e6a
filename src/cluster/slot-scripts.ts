/**
 * The Lua scripts of the shared slot ledger (cluster/slot-ledger.ts). Each runs atomically in
 * Redis, so a take and a release never interleave with another instance's.
 *
 * The scripts build their keys from the prefix they are given (a single Redis, not Redis Cluster:
 * one instance's takes and releases of a turn then go as one command). Keys, per backend B:
 * `slots:B` (a sorted set: lease id → expiry, ms), `queue:B` (parked calls waiting on B:
 * `instance|wait id|deadline|model` → arrival time, ms), `last:B` (the model of B's latest
 * lease, for model affinity); `alive` (instance → heartbeat expiry). While anyone waits for
 * B, every take, release and leave publishes `<leases held>|B` so the instances with parked calls
 * see the slot count move; with nobody waiting nothing is published (an idle cluster sends no
 * message per call; a call that parks joins the line first, so it hears every release after).
 */

/**
 * One instance's releases and takes of one turn of its event loop, in one script call: the
 * releases first, then the takes in order, each seeing the ones before. ARGV: key prefix, now,
 * ttl ms, the number of releases, per release: backend, lease id; then per take: backend, lease
 * id, cap, its wait member ('' for a call that never parked), its arrival time, model, affinity
 * ms. While anyone waits for a backend, its new count is published after each change there.
 * Returns per take {1, leases} when the lease is held, {0, leases, entitled member} when refused:
 * no slot left, or an older parked call (anywhere) is entitled to it — the oldest live waiter, or
 * the oldest waiting for the backend's latest model while the oldest has waited no more than the
 * affinity margin.
 */
export const SETTLE = `
local p, now, ttl, releases = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local alive = p .. 'alive'
local function announce(b, n)
  if redis.call('ZCARD', p .. 'queue:' .. b) > 0 then redis.call('PUBLISH', p .. 'slots', n .. '|' .. b) end
end
for c = 5, 4 + 2 * releases, 2 do
  local slots = p .. 'slots:' .. ARGV[c]
  redis.call('ZREM', slots, ARGV[c + 1])
  redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
  announce(ARGV[c], redis.call('ZCARD', slots))
end
local out = {}
for c = 5 + 2 * releases, #ARGV, 7 do
  local b, lease, cap, me, since, model, affinity =
    ARGV[c], ARGV[c + 1], tonumber(ARGV[c + 2]), ARGV[c + 3], tonumber(ARGV[c + 4]), ARGV[c + 5], tonumber(ARGV[c + 6])
  local slots, queue, lastKey = p .. 'slots:' .. b, p .. 'queue:' .. b, p .. 'last:' .. b
  redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
  local n = redis.call('ZCARD', slots)
  local verdict
  if n >= cap then verdict = {0, n, ''} else
    local last = redis.call('GET', lastKey)
    local head, headScore, same, sameScore = nil, nil, nil, nil
    local entries = redis.call('ZRANGE', queue, 0, 63, 'WITHSCORES')
    for i = 1, #entries, 2 do
      local member = entries[i]
      local inst, deadline, m = string.match(member, '^([^|]*)|[^|]*|([^|]*)|(.*)$')
      local beat = inst and redis.call('ZSCORE', alive, inst)
      if not beat or tonumber(beat) < now or tonumber(deadline) < now then
        redis.call('ZREM', queue, member)
      else
        if head == nil then head = member; headScore = tonumber(entries[i + 1]) end
        if last and m == last then same = member; sameScore = tonumber(entries[i + 1]); break end
      end
    end
    if same ~= nil and now - headScore <= affinity then head = same; headScore = sameScore end
    if head ~= nil and head ~= me and
      ((me ~= '' and redis.call('ZSCORE', queue, me)) or headScore < since) then
      verdict = {0, n, head}
    else
      redis.call('ZADD', slots, now + ttl, lease)
      redis.call('SET', lastKey, model)
      if me ~= '' then redis.call('ZREM', queue, me) end
      announce(b, n + 1)
      verdict = {1, n + 1, ''}
    end
  end
  out[#out + 1] = verdict
end
return out
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
