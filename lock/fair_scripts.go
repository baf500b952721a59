package lock

// The fair mode's scripts. Besides the lock and its fencing counter, a fair
// lock has three keys under the same hash tag:
//
//	<prefix>{key}:queue    sorted set: waiting owners, scored by arrival
//	<prefix>{key}:waiters  hash: owner -> "<deadline-ms> <waiter-id> <channel>"
//	<prefix>{key}:seq      counter giving arrivals their order
//
// A queue entry lives until its deadline, which a live waiter pushes back
// every third of the queue lease; the three keys expire a queue lease
// after the last waiter renewed, so an abandoned queue leaves nothing.
//
// KEYS, for all of them: lock, fence, queue, waiters, seq, wanted (a
// channel: a new waiter asks a holder that keeps the lock between writes to
// let go). In fair mode, "others want the lock" is "the queue is not
// empty".

// fairPrelude adds to tokenPrelude nowMs() (the server's clock in ms) and
// promote, which offers the lock to the first live waiter: it makes it the
// owner for the hand-off window only and publishes the waiter's ID to the
// waiter's process channel (see tellFunc). No subscriber of that channel
// means that process is gone (its connection closed when it died), and the
// next waiter is tried at once. The waiter confirms the
// offer with its own acquire, which sets its full TTL. promote returns the
// owner offered the lock, or false when no live waiter is left, in which
// case the lock may be set to a dead waiter and the caller must set or
// delete it. Like handOff (see handOffFunc), it never raises: a promotion
// the server refuses part-way returns false.
const fairPrelude = tokenPrelude + tellFunc + `
local function nowMs()
	local t = serverClock()
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function promote(window)
	local ok, head = pcall(function()
		while true do
			local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
			if not head then return false end
			redis.call('ZREM', KEYS[3], head)
			local entry = redis.call('HGET', KEYS[4], head)
			redis.call('HDEL', KEYS[4], head)
			if entry then
				local deadline, id, channel = string.match(entry, '^(%d+) (%d+) (.+)$')
				if deadline and tonumber(deadline) >= nowMs() then
					redis.call('SET', KEYS[1], head, 'PX', window)
					if tell(channel, id) then return head end
				end
			end
		end
	end)
	return ok and head
end
`

// fairAcquireScript takes the lock, or confirms an offer of it to the
// caller, or queues for it.
// ARGV: owner, TTL ms, waiter id, channel, queue lease ms, "1" to queue or
// "0" to only try, fence retention ms, hand-off window ms, "1" if an
// earlier attempt of the claim may have queued it.
// Returns the token (an integer) when the caller holds the lock, the
// commonest reply, which costs no array; else {0, PTTL, the last token
// handed out}.
//
// An offer takes its waiter out of the queue, so an owner taking the lock
// should never be queued; a claim that has queued and takes a free lock
// takes itself out all the same. A first attempt, the uncontended case,
// and the confirmation of an offer save the two commands.
var fairAcquireScript = newScript(fairPrelude + `
local owner = ARGV[1]
local holder = redis.call('GET', KEYS[1])
local offered = holder == owner
if not holder then
	-- Free: those queued come first.
	local head = promote(ARGV[8])
	if not head or head == owner then holder = owner end
end
if holder == owner then
	redis.call('SET', KEYS[1], owner, 'PX', ARGV[2])
	if ARGV[9] == '1' and not offered then
		redis.call('ZREM', KEYS[3], owner)
		redis.call('HDEL', KEYS[4], owner)
	end
	return issue(ARGV[7])
end
if ARGV[6] == '1' then
	local entry = (nowMs() + tonumber(ARGV[5])) .. ' ' .. ARGV[3] .. ' ' .. ARGV[4]
	if redis.call('HSET', KEYS[4], owner, entry) == 1 then
		redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[5]), owner)
		-- Tell a holder that keeps the lock between writes to let go.
		redis.call('PUBLISH', KEYS[6], '1')
	end
	redis.call('PEXPIRE', KEYS[3], ARGV[5])
	redis.call('PEXPIRE', KEYS[4], ARGV[5])
	redis.call('PEXPIRE', KEYS[5], ARGV[5])
end
return {0, redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2])) or 0}
`)

// fairReleaseScript, if the caller owns the lock, offers the lock to the
// next live waiter, or deletes it when none is left; otherwise it takes the
// caller out of the queue. It serves Unlock and a waiter that gives up: an
// offer that raced the giving up is passed on at once. An owner is not
// queued (the offer or acquire that made it one took it out), so an
// Unlock's only queue command is the look at the head.
// ARGV: owner, hand-off window ms. Returns 1 if the caller owned the lock,
// else 0.
var fairReleaseScript = newScript(fairPrelude + `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	redis.call('ZREM', KEYS[3], ARGV[1])
	redis.call('HDEL', KEYS[4], ARGV[1])
	return 0
end
if not promote(ARGV[2]) then redis.call('DEL', KEYS[1]) end
return 1
`)

// fairCommitScript is commitScript in fair mode. KEYS: the six, then
// state. ARGV and replies as for commitScript. With keep, the lock is kept
// unless a live waiter is queued, who is then offered it.
var fairCommitScript = newScript(fairPrelude + statePrelude + commitBody("KEYS[7]", "promote(ARGV[7])"))
