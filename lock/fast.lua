-- fast.lua: the fast mode's protocol (see fast.go, and docs/PROTOCOL.md).
--
-- A fast lock has, beside the lock and its fencing counter, one key under
-- the same hash tag: wanted, a list of requests "<owner> <waiter-id>
-- <channel>" in the order their waiters asked, which is also a channel: the
-- first request of an empty list is published on it, for a holder that
-- keeps the lock between writes (Lease.Wanted). A release hands the lock
-- to the first request whose waiter can be told: it takes the request off
-- the list, sets the lock to the asker's owner token for the releaser's
-- TTL, issues the asker's fencing token and publishes it, with the TTL,
-- to the waiter on its channel, which holds the lease from then on (or
-- confirms it with an acquire, where it cannot count on the TTL). A
-- channel that nobody subscribes to means the asker's process is gone
-- (see tell), and the next request is tried. So under contention every
-- release hands the lock on, in the order the waiters asked, and wakes one
-- waiter: no waiter is passed over for ever by a newer one, and no release
-- wakes them all.

-- onList runs a list command on the requests at key. A key of another
-- type there is a one-slot request that an earlier version of baton left
-- (a string): it is dropped, its waiter asks again at its next attempt,
-- and the command runs on no list. So a process of this version keeps
-- working on a lock that an earlier one asked for.
local function onList(cmd, key, ...)
	local r = redis.pcall(cmd, key, ...)
	if type(r) == 'table' and r.err then
		if string.find(r.err, 'WRONGTYPE', 1, true) then redis.call('DEL', key) end
		r = redis.call(cmd, key, ...) -- any other error is raised, as by a plain call
	end
	return r
end

-- handOff takes the first request off wanted and, if it is another
-- owner's, hands the lock to the asker: it sets the lock to the asker's
-- owner token for ttl, issues the asker's fencing token and publishes
-- "<waiter-id> <token> <ttl> <owner>" on the asker's channel, and returns
-- true. The asker's process holds the lease from that message alone,
-- counted from before it asked (see fast.go's handedOver); the owner
-- token in it is the proof that the message comes from a script that
-- read the request, which a client allowed to publish but not to read
-- baton's keys cannot forge. A process of an earlier version, which
-- reads the ID alone, confirms the hand-off with an acquire as before. A
-- request whose waiter nobody hears (its process is gone), or owner's
-- own, is dropped and the next is tried; with none left it returns false,
-- and the caller keeps or deletes the lock. Its second result is the
-- number of requests dropped because nobody heard their waiter. A
-- hand-off the server refuses part-way (an ACL without one of its
-- commands, a key of another type) is given up, and handOff returns
-- false as when nobody waits: so a release that has begun always ends,
-- and a write-back never answers with an error after writing.
local function handOff(lock, fence, wanted, owner, ttl, retention, publish)
	local skipped = 0
	local ok, handed = pcall(function()
		while true do
			local asker = onList('LPOP', wanted)
			if not asker then return false end
			local other, id, channel = string.match(asker, '^(%S+) (%d+) (.+)$')
			if other and other ~= owner then
				redis.call('SET', lock, other, 'PX', ttl)
				local token = issue(fence, retention)
				if tell(publish, channel, id .. ' ' .. string.format('%.0f', token) .. ' ' .. ttl .. ' ' .. other) then return true end
				skipped = skipped + 1
			end
		end
	end)
	return ok and handed, skipped
end

--- acquire
-- Takes the lock if it is free, or confirms a hand-off to owner, and then
-- issues a fencing token. Otherwise, unless ask is "0", asks the holder to
-- let go: owner's request joins wanted, unless it stands there already.
-- wanted lives a TTL after the last attempt that asks, so that a request
-- whose waiter died goes.
-- KEYS: lock, fence, wanted
-- ARGV: owner, ttl, ask ("0": not at all, from a claim that never asked;
--       "1": a claim's first ask, whose request cannot stand yet, so it
--       saves the LPOS; "2": a later one), asker ("<waiter-id> <channel>"),
--       retention (the fence's TTL), publish
-- Returns the new fencing token (> 0); otherwise -1 - PTTL of the lock,
-- or 0 for a lock without a TTL: one integer, whose reply costs no
-- allocation.
local lock, fence, wanted = KEYS[1], KEYS[2], KEYS[3]
local owner, ttl, ask, asker, retention, publish = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
-- A claim that never asked holds no request and cannot have been handed
-- the lock: one SET NX takes a free lock, where GET and SET took two
-- calls. When it fails the holder is read all the same: it may be the
-- claim's own, taken by this very attempt, which the cluster client sent
-- again because a command after it in the same batch was refused.
if ask == '0' and redis.call('SET', lock, owner, 'NX', 'PX', ttl) then
	return issue(fence, retention)
end
local holder = redis.call('GET', lock)
if holder and holder ~= owner then
	if ask ~= '0' then
		local entry = owner .. ' ' .. asker
		if (ask == '1' or not onList('LPOS', wanted, entry)) and onList('RPUSH', wanted, entry) == 1 then
			redis.call(publish, wanted, '1')
		end
		redis.call('PEXPIRE', wanted, ttl)
	end
	local left = redis.call('PTTL', lock)
	if left < 0 then return 0 end
	return -1 - left
end
redis.call('SET', lock, owner, 'PX', ttl)
-- A hand-off took the request off already; a first ask that finds the
-- lock free has none.
if ask == '2' and holder ~= owner then onList('LREM', wanted, 1, owner .. ' ' .. asker) end
return issue(fence, retention)

--- withdraw
-- Ends the claim of a waiter that gave up: it takes back its request, so
-- that the lock is not handed to nobody, and releases a lock handed to it
-- meanwhile (or taken by an attempt whose reply never came), handing it
-- on as a release does: the waiters behind wait for their hand-off, not
-- for the key's events.
-- KEYS: lock, fence, wanted
-- ARGV: owner, asker ("<waiter-id> <channel>" of its request, "" if it
--       never asked), ttl (a hand-off's), retention (the fence's TTL),
--       publish
-- Returns 1.
local lock, fence, wanted = KEYS[1], KEYS[2], KEYS[3]
local owner, asker, ttl, retention, publish = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if asker ~= '' then onList('LREM', wanted, 1, owner .. ' ' .. asker) end
if redis.call('GET', lock) == owner and not handOff(lock, fence, wanted, owner, ttl, retention, publish) then
	redis.call('DEL', lock)
end
return 1

--- release
-- Releases the lock if owner still holds it: hands it to the standing
-- asker, if any, or deletes it.
-- KEYS: lock, fence, wanted
-- ARGV: owner, ttl (a hand-off's), retention (the fence's TTL), publish
-- Returns 0 if not held; else 2 if handed on, 1 if deleted, plus 4 for
-- each request dropped on the way because its waiter's process was gone
-- (see released in release.go).
local lock, fence, wanted = KEYS[1], KEYS[2], KEYS[3]
local owner, ttl, retention, publish = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('GET', lock) ~= owner then return 0 end
local handed, skipped = handOff(lock, fence, wanted, owner, ttl, retention, publish)
if handed then return 2 + 4 * skipped end
redis.call('DEL', lock)
return 1 + 4 * skipped

--- commit
-- The fenced write-back (see commit in shared.lua): with keep, the lock is
-- kept unless a request stands, whose asker is then handed it.
-- KEYS: lock, state, wanted, fence
-- ARGV: owner, value, stateTTL, keep ("1" to keep the lock), ttl (the
--       lock's, and a hand-off's), ifExists ("1" if the state must
--       exist), publish, retention (the fence's TTL)
-- Returns as commit does.
local lock, state, wanted, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, value, stateTTL, keep, ttl, ifExists, publish, retention =
	ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1', ARGV[5], ARGV[6] == '1', ARGV[7], ARGV[8]
return commit(lock, owner, state, value, stateTTL, keep, ttl, ifExists,
	function() return handOff(lock, fence, wanted, owner, ttl, retention, publish) end)
