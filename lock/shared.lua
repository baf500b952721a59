-- shared.lua: what every script of baton shares, and the scripts that
-- serve both modes.
--
-- A script is the part of this file before the first '--- name' line,
-- then, for a script of fast.lua or fair.lua, the part of that file before
-- its first '--- name' line, then the lines under its own '--- name'. Each
-- script names its KEYS and ARGV at its top; the functions take theirs as
-- arguments. Times are in milliseconds, as decimal strings.
--
-- publish, an ARGV of every script that publishes, is the command that
-- does: PUBLISH, or SPUBLISH for shard channels on a Redis Cluster whose
-- nodes know it (Redis 7 and later), where it keeps a message on the node
-- that serves the lock's slot. Every Locker of one key uses the same.

-- serverClock is the server's TIME, read once per script, and only by a
-- script that needs it: an attempt that finds the lock held costs no TIME.
local clock
local function serverClock()
	if not clock then clock = redis.call('TIME') end
	return clock
end

-- nowMs is the server's clock in milliseconds.
local function nowMs()
	local t = serverClock()
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- counterOf is the value of a fencing counter read from Redis, or 0 for
-- anything no token of baton's is: garbled, an error (a key of another
-- type), negative, not finite, or at or past 2^53, where Lua numbers stop
-- holding integers exactly (which the clock reaches in the year 2255).
-- Without this a counter of 1e20 would make a token that Redis turns into
-- a negative integer.
local function counterOf(v)
	local n = tonumber(v)
	if not n or n ~= n or n < 0 or n >= 9007199254740992 then return 0 end
	return math.floor(n)
end

-- issue hands out the next fencing token: one more than the last one (at
-- fence), and never less than the server's clock in microseconds since
-- the epoch. The clock is what keeps tokens increasing when the counter is
-- gone: a restart without persistence, a restart from an older snapshot,
-- the counter's retention running out. A script takes far longer than a
-- microsecond, so the counter never runs ahead of the clock by more than
-- a step. A Lua number holds these integers exactly (below 2^53 until the
-- year 2255). The token is stored with the retention as its TTL and
-- returned; a garbled counter, or a key of another type, reads as 0 and
-- is overwritten, so issue cannot fail: it runs after the lock's SET,
-- which a failing script would leave in place.
--
-- The clock is the token almost always: SET ... GET stores it and reads
-- the last token in one call, and only a counter at or past the clock
-- (two tokens within a microsecond, or a clock set back) costs a second
-- SET. A server before Redis 6.2 refuses SET ... GET, as every server
-- does for a key of another type: issue then reads the counter with GET
-- and stores the token after.
local function issue(fence, retention)
	local t = serverClock()
	local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
	local stored = true -- the clock, by SET ... GET
	local last = redis.pcall('SET', fence, string.format('%.0f', now), 'PX', retention, 'GET')
	if type(last) == 'table' and last.err then
		last, stored = redis.pcall('GET', fence), false
	end
	local token = math.max(now, counterOf(last) + 1)
	if token ~= now or not stored then
		redis.call('SET', fence, string.format('%.0f', token), 'PX', retention)
	end
	return token
end

-- tell publishes message (the waiter's ID, and what follows it) on a
-- waiter's channel and reports whether its process heard it. PUBLISH answers how many clients received the
-- message, and pattern subscribers count among them: one PSUBSCRIBE *
-- anywhere (an operator's redis-cli, a pub/sub bridge) would make every
-- dead waiter look alive and keep the lock for the releaser's TTL. So a
-- plain channel's own subscribers are counted first, and a channel nobody
-- subscribes to is not published on. Shard channels have no pattern
-- subscribers: SPUBLISH's count is trusted.
--
-- tell never raises: it runs after a write-back's first write, whose
-- error reply must mean that nothing was written. A user whose ACL lacks
-- PUBSUB NUMSUB is told by PUBLISH's count; one that lacks PUBLISH counts
-- as heard, and the lock waits out the releaser's TTL for a waiter that
-- was not told.
local function tell(publish, channel, message)
	if publish == 'PUBLISH' then
		local subscribers = redis.pcall('PUBSUB', 'NUMSUB', channel)
		if type(subscribers) == 'table' and subscribers[2] == 0 then return false end
	end
	local heard = redis.pcall(publish, channel, message)
	return type(heard) ~= 'number' or heard > 0
end

-- commit is the fenced write-back of both modes: if owner holds the lock,
-- it sets state to value for stateTTL and then keeps the lock for ttl
-- (keep) or lets it go; handOn() hands it to a waiting owner instead,
-- true if it did. It returns -1 if owner does not hold the lock (nothing
-- written), -2 if ifExists and state is missing (nothing written; the
-- lock kept with keep, else let go), and else 1 if owner still holds the
-- lock, 0 if it let go or handed it on. The state's SET is its first
-- write, so that a script the server stops there (out of memory) has
-- written nothing, and after it only the lock's own SET or DEL can raise
-- (a hand-off never does).
local function commit(lock, owner, state, value, stateTTL, keep, ttl, ifExists, handOn)
	if redis.call('GET', lock) ~= owner then return -1 end
	local result = 0
	if ifExists and redis.call('EXISTS', state) == 0 then
		if keep then return -2 end
		result = -2
	else
		redis.call('SET', state, value, 'PX', stateTTL)
	end
	if handOn() then return result end
	if keep then
		redis.call('SET', lock, owner, 'PX', ttl)
		return 1
	end
	redis.call('DEL', lock)
	return result
end

--- extend
-- Resets the lock's TTL if owner still holds it.
-- KEYS: lock
-- ARGV: owner, ttl
-- Returns 1 if extended, 0 if not held.
local lock = KEYS[1]
local owner, ttl = ARGV[1], ARGV[2]
if redis.call('GET', lock) == owner then
	return redis.call('PEXPIRE', lock, ttl)
end
return 0

--- plainRelease
-- The compare-and-delete every Redis lock uses, blind to requests. Only
-- the release styles that reproduce the problem baton fixes send it.
-- KEYS: lock
-- ARGV: owner
-- Returns 1 if released, 0 if not held.
local lock = KEYS[1]
local owner = ARGV[1]
if redis.call('GET', lock) == owner then
	return redis.call('DEL', lock)
end
return 0

--- inspect
-- Reads every key of one lock at one instant and writes nothing. The fast
-- mode reads no queue, the fair mode no request. The clock is read as the
-- fair scripts read it, so a lease left below zero is exactly an entry
-- they drop.
-- KEYS: lock, fence, wanted, queue, waiters
-- ARGV: fair ("1" in fair mode)
-- Returns {the server's clock, PTTL of the lock, the lock, the fence, the
-- first request, {owner, entry, owner, entry, ...} in queue order}, with
-- an empty string for a missing one.
local lock, fence, wanted, queue, waiters = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local fair = ARGV[1] == '1'
local request, queued = '', {}
if fair then
	for _, owner in ipairs(redis.call('ZRANGE', queue, 0, -1)) do
		queued[#queued + 1] = owner
		queued[#queued + 1] = redis.call('HGET', waiters, owner) or ''
	end
else
	request = redis.pcall('LINDEX', wanted, 0)
	if type(request) ~= 'string' then request = '' end -- none, or an earlier version's one slot
end
return {nowMs(), redis.call('PTTL', lock), redis.call('GET', lock) or '',
	redis.call('GET', fence) or '', request, queued}
