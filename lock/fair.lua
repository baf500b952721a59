-- fair.lua: the fair mode's protocol (see fair.go, and docs/PROTOCOL.md).
--
-- Besides the lock and its fencing counter, a fair lock has four keys
-- under the same hash tag:
--
--   queue    sorted set: waiting owners, scored by arrival
--   waiters  hash: owner -> "<deadline-ms> <waiter-id> <channel>"
--   seq      counter giving arrivals their order
--   wanted   a channel: a new waiter asks a holder that keeps the lock
--            between writes to let go
--
-- A queue entry lives until its deadline, which a live waiter pushes back
-- every third of the queue lease; queue, waiters and seq expire a queue
-- lease after the last waiter renewed, so an abandoned queue leaves
-- nothing. "Others want the lock" is "the queue is not empty".

-- promote hands the lock to the first live waiter other than self: it sets
-- the lock to the waiter's owner token for ttl, issues the waiter's
-- fencing token and publishes "<waiter-id> <token> <ttl> <owner>" on the
-- waiter's channel (see tell), as fast.lua's handOff does. The waiter's
-- process holds the lease from that message alone, counted from before
-- it first queued (see fair.go); a process of an earlier version, which
-- reads the ID alone, confirms the hand-off with its own acquire, which sets
-- its full TTL and issues it a token anew. A channel nobody subscribes to
-- means the waiter's process is gone, and the next waiter is tried at
-- once. self, when it heads the queue, is taken out and returned, and the
-- caller, an acquire of self's, takes the lock itself, over any hand-off
-- to a dead waiter that was ahead of it.
-- promote returns the owner it handed the lock to (or self), or false
-- when no live waiter is left, in which case the lock may be set to a
-- dead waiter and the caller must set or delete it; and, second, the
-- number of waiters passed over because their process was gone or their
-- place had run out. Like handOff in fast.lua it never raises: a
-- promotion the server refuses part-way returns false.
local function promote(lock, fence, queue, waiters, ttl, retention, publish, self)
	local skipped = 0
	local ok, head = pcall(function()
		while true do
			local head = redis.call('ZRANGE', queue, 0, 0)[1]
			if not head then return false end
			redis.call('ZREM', queue, head)
			local entry = redis.call('HGET', waiters, head)
			redis.call('HDEL', waiters, head)
			if head == self then return head end
			if entry then
				local deadline, id, channel = string.match(entry, '^(%d+) (%d+) (.+)$')
				if deadline and tonumber(deadline) >= nowMs() then
					redis.call('SET', lock, head, 'PX', ttl)
					local token = issue(fence, retention)
					if tell(publish, channel, id .. ' ' .. string.format('%.0f', token) .. ' ' .. ttl .. ' ' .. head) then return head end
				end
				skipped = skipped + 1
			end
		end
	end)
	return ok and head, skipped
end

--- acquire
-- Takes the lock, or confirms a hand-off of it to owner, or queues for
-- it. A hand-off takes its waiter out of the queue, so an owner taking the
-- lock should never be queued; a claim that has queued and takes a free
-- lock takes itself out all the same. A first attempt, the uncontended
-- case, and the confirmation of a hand-off save the two commands. A
-- confirmation sets the owner's own TTL and issues it a token anew, so
-- that a waiter that cannot count on the hand-off's message (see fair.go)
-- holds the lease from its own acquire.
-- KEYS: lock, fence, queue, waiters, seq, wanted
-- ARGV: owner, ttl, waiterID, channel, queueLease, join ("1" to queue,
--       "0" only to try), retention (the fence's TTL), queued ("1" if an
--       earlier attempt of the claim may have queued it), publish
-- Returns the token (an integer) when owner holds the lock, the commonest
-- reply, which costs no array; else {0, PTTL, the last token handed out}.
local lock, fence, queue, waiters, seq, wanted = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local owner, ttl, waiterID, channel, queueLease, join, retention, queued, publish =
	ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6] == '1', ARGV[7], ARGV[8] == '1', ARGV[9]
-- holder is the lock's owner token, or false if it is free. A claim that
-- never queued, and so cannot have been handed the lock, takes a free
-- lock with nobody queued at the cost of SET NX and a look at the queue,
-- where GET, ZRANGE and SET took three calls. A lock free while others are
-- queued (their holder's TTL ran out before any of them renewed) is given
-- back before the script ends, so that no client finds it held, and the
-- claim goes behind them. When SET NX fails the holder is read all the
-- same: it may be the claim's own, taken by this very attempt, which the
-- cluster client sent again because a command after it in the same batch
-- was refused.
local holder
if queued or not redis.call('SET', lock, owner, 'NX', 'PX', ttl) then
	holder = redis.call('GET', lock)
elseif redis.call('EXISTS', queue) == 0 then
	return issue(fence, retention)
else
	redis.call('DEL', lock)
	holder = false
end
local offered = holder == owner
if not holder then
	-- Free: those queued come first, for the acquirer's TTL.
	local head = promote(lock, fence, queue, waiters, ttl, retention, publish, owner)
	if not head or head == owner then holder = owner end
end
if holder == owner then
	redis.call('SET', lock, owner, 'PX', ttl)
	if queued and not offered then
		redis.call('ZREM', queue, owner)
		redis.call('HDEL', waiters, owner)
	end
	return issue(fence, retention)
end
if join then
	local entry = (nowMs() + tonumber(queueLease)) .. ' ' .. waiterID .. ' ' .. channel
	if redis.call('HSET', waiters, owner, entry) == 1 then
		redis.call('ZADD', queue, redis.call('INCR', seq), owner)
		-- Tell a holder that keeps the lock between writes to let go.
		redis.call(publish, wanted, '1')
	end
	redis.call('PEXPIRE', queue, queueLease)
	redis.call('PEXPIRE', waiters, queueLease)
	redis.call('PEXPIRE', seq, queueLease)
end
return {0, redis.call('PTTL', lock), counterOf(redis.pcall('GET', fence))}

--- release
-- If owner holds the lock, hands it to the next live waiter, or deletes
-- it when none is left; otherwise takes owner out of the queue. It serves
-- Unlock and a waiter that gives up: a hand-off that raced the giving up
-- is passed on at once. An owner is not queued (the hand-off or acquire
-- that made it one took it out), so an Unlock's only queue command is the
-- look at the head.
-- KEYS: lock, fence, queue, waiters, seq, wanted
-- ARGV: owner, ttl (a hand-off's), retention (the fence's TTL), publish
-- Returns 0 if owner did not hold the lock; else 2 if handed on, 1 if
-- deleted, plus 4 for each waiter passed over on the way (see promote).
local lock, fence, queue, waiters = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, ttl, retention, publish = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('GET', lock) ~= owner then
	redis.call('ZREM', queue, owner)
	redis.call('HDEL', waiters, owner)
	return 0
end
local head, skipped = promote(lock, fence, queue, waiters, ttl, retention, publish)
if not head then
	redis.call('DEL', lock)
	return 1 + 4 * skipped
end
return 2 + 4 * skipped

--- commit
-- The fenced write-back (see commit in shared.lua): with keep, the lock is
-- kept unless a live waiter is queued, who is then handed it.
-- KEYS: lock, fence, queue, waiters, seq, wanted, state
-- ARGV: owner, value, stateTTL, keep ("1" to keep the lock), ttl (the
--       lock's, and a hand-off's), ifExists ("1" if the state must
--       exist), publish, retention (the fence's TTL)
-- Returns as commit does.
local lock, fence, queue, waiters, state = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[7]
local owner, value, stateTTL, keep, ttl, ifExists, publish, retention =
	ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1', ARGV[5], ARGV[6] == '1', ARGV[7], ARGV[8]
return commit(lock, owner, state, value, stateTTL, keep, ttl, ifExists,
	function() return promote(lock, fence, queue, waiters, ttl, retention, publish) end)
