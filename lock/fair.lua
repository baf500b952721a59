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

-- promote offers the lock to the first live waiter: it makes it the owner
-- for the hand-off window only and tells the waiter (see tell). A channel
-- nobody subscribes to means the waiter's process is gone, and the next
-- waiter is tried at once. The waiter confirms the offer with its own
-- acquire, which sets its full TTL. promote returns the owner offered the
-- lock, or false when no live waiter is left, in which case the lock may
-- be set to a dead waiter and the caller must set or delete it. Like
-- handOff in fast.lua it never raises: a promotion the server refuses
-- part-way returns false.
local function promote(lock, queue, waiters, window, publish)
	local ok, head = pcall(function()
		while true do
			local head = redis.call('ZRANGE', queue, 0, 0)[1]
			if not head then return false end
			redis.call('ZREM', queue, head)
			local entry = redis.call('HGET', waiters, head)
			redis.call('HDEL', waiters, head)
			if entry then
				local deadline, id, channel = string.match(entry, '^(%d+) (%d+) (.+)$')
				if deadline and tonumber(deadline) >= nowMs() then
					redis.call('SET', lock, head, 'PX', window)
					if tell(publish, channel, id) then return head end
				end
			end
		end
	end)
	return ok and head
end

--- acquire
-- Takes the lock, or confirms an offer of it to owner, or queues for it.
-- An offer takes its waiter out of the queue, so an owner taking the lock
-- should never be queued; a claim that has queued and takes a free lock
-- takes itself out all the same. A first attempt, the uncontended case,
-- and the confirmation of an offer save the two commands.
-- KEYS: lock, fence, queue, waiters, seq, wanted
-- ARGV: owner, ttl, waiterID, channel, queueLease, join ("1" to queue,
--       "0" only to try), retention (the fence's TTL), window (the
--       hand-off window), queued ("1" if an earlier attempt of the claim
--       may have queued it), publish
-- Returns the token (an integer) when owner holds the lock, the commonest
-- reply, which costs no array; else {0, PTTL, the last token handed out}.
local lock, fence, queue, waiters, seq, wanted = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local owner, ttl, waiterID, channel, queueLease, join, retention, window, queued, publish =
	ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6] == '1', ARGV[7], ARGV[8], ARGV[9] == '1', ARGV[10]
-- holder is the lock's owner token, or false if it is free. A claim that
-- never queued, and so cannot have been offered the lock, takes a free
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
	-- Free: those queued come first.
	local head = promote(lock, queue, waiters, window, publish)
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
-- If owner holds the lock, offers it to the next live waiter, or deletes
-- it when none is left; otherwise takes owner out of the queue. It serves
-- Unlock and a waiter that gives up: an offer that raced the giving up is
-- passed on at once. An owner is not queued (the offer or acquire that
-- made it one took it out), so an Unlock's only queue command is the look
-- at the head.
-- KEYS: lock, fence, queue, waiters, seq, wanted
-- ARGV: owner, window (the hand-off window), publish
-- Returns 1 if owner held the lock, else 0.
local lock, queue, waiters = KEYS[1], KEYS[3], KEYS[4]
local owner, window, publish = ARGV[1], ARGV[2], ARGV[3]
if redis.call('GET', lock) ~= owner then
	redis.call('ZREM', queue, owner)
	redis.call('HDEL', waiters, owner)
	return 0
end
if not promote(lock, queue, waiters, window, publish) then redis.call('DEL', lock) end
return 1

--- commit
-- The fenced write-back (see commit in shared.lua): with keep, the lock is
-- kept unless a live waiter is queued, who is then offered it.
-- KEYS: lock, fence, queue, waiters, seq, wanted, state
-- ARGV: owner, value, stateTTL, keep ("1" to keep the lock), ttl,
--       ifExists ("1" if the state must exist), window, publish
-- Returns as commit does.
local lock, queue, waiters, state = KEYS[1], KEYS[3], KEYS[4], KEYS[7]
local owner, value, stateTTL, keep, ttl, ifExists, window, publish =
	ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1', ARGV[5], ARGV[6] == '1', ARGV[7], ARGV[8]
return commit(lock, owner, state, value, stateTTL, keep, ttl, ifExists,
	function() return promote(lock, queue, waiters, window, publish) end)
