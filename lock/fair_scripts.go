package lock

// The fair mode's scripts. Besides the lock and its fencing counter, a fair
// lock has three keys under the same hash tag:
//
//	<prefix>{key}:queue    sorted set: waiting owners, scored by arrival
//	<prefix>{key}:waiters  hash: owner -> "<deadline-ms> <ttl-ms> <id> <channel>"
//	<prefix>{key}:seq      counter giving arrivals their order
//
// A queue entry lives until its deadline, which a live waiter pushes back
// every third of the queue lease; an entry past its deadline belongs to a
// waiter that vanished and is skipped at hand-off.
//
// KEYS, for all of them: lock, fence, queue, waiters, seq, wanted (a flag
// and a channel: a new waiter asks a holder that keeps the lock between
// writes to let go; see package manager).

// fairPrelude defines now (server time, in ms) and promote, which hands the
// lock to the first live waiter: it makes it the owner with its own TTL,
// bumps the fencing counter, and publishes "<id> <fence>" to the waiter's
// process channel, so the new owner learns of it with no round trip. It
// returns the new owner, or false when no live waiter is queued.
const fairPrelude = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function promote()
	while true do
		local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
		if not head then return false end
		redis.call('ZREM', KEYS[3], head)
		local entry = redis.call('HGET', KEYS[4], head)
		redis.call('HDEL', KEYS[4], head)
		if entry then
			local deadline, ttl, id, channel = string.match(entry, '^(%d+) (%d+) (%d+) (.+)$')
			if deadline and tonumber(deadline) >= now then
				redis.call('SET', KEYS[1], head, 'PX', ttl)
				-- The new owner is asked to let go only if others wait.
				if redis.call('ZCARD', KEYS[3]) > 0 then
					redis.call('SET', KEYS[6], '1', 'PX', ttl)
				else
					redis.call('DEL', KEYS[6])
				end
				local fence = redis.call('INCR', KEYS[2])
				redis.call('PUBLISH', channel, id .. ' ' .. fence)
				return head
			end
		end
	end
end
`

// fairAcquireScript takes the lock, or queues for it, or reports that the
// caller owns it already (a hand-off whose message was lost).
// ARGV: owner, TTL ms, waiter id, channel, queue lease ms, and "1" to queue
// or "0" to only try.
// Returns {1, fence} when the caller owns the lock, else {0, PTTL, fence
// now}: the last fencing token handed out when the caller queued or renewed.
var fairAcquireScript = newScript(fairPrelude + `
local owner = ARGV[1]
local holder = redis.call('GET', KEYS[1])
if holder == owner then
	redis.call('ZREM', KEYS[3], owner)
	redis.call('HDEL', KEYS[4], owner)
	return {1, tonumber(redis.call('GET', KEYS[2]))}
end
if not holder then
	-- Free: those queued come first.
	local head = promote()
	if not head then
		redis.call('SET', KEYS[1], owner, 'PX', ARGV[2])
		redis.call('DEL', KEYS[6])
		return {1, redis.call('INCR', KEYS[2])}
	end
	if head == owner then
		return {1, tonumber(redis.call('GET', KEYS[2]))}
	end
end
if ARGV[6] == '1' then
	local entry = (now + tonumber(ARGV[5])) .. ' ' .. ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4]
	if redis.call('HSET', KEYS[4], owner, entry) == 1 then
		redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[5]), owner)
		-- Tell a holder that keeps the lock between writes to let go.
		redis.call('SET', KEYS[6], '1', 'PX', ARGV[2])
		redis.call('PUBLISH', KEYS[6], '1')
	end
end
return {0, redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0')}
`)

// fairReleaseScript takes the caller out of the queue and, if it owns the
// lock, hands the lock to the next live waiter, or deletes it when none is
// left. It serves Unlock and a waiter that gives up: a hand-off that raced
// the giving up is passed on at once.
// ARGV: owner. Returns 1 if the caller owned the lock, else 0.
var fairReleaseScript = newScript(fairPrelude + `
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if not promote() then redis.call('DEL', KEYS[1]) end
return 1
`)
