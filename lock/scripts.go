package lock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
)

// script is a Lua script run by EVALSHA, falling back to EVAL (which also
// loads it) when the server answers NOSCRIPT.
type script struct {
	src, sha string
}

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// tokenPrelude defines issue(retention), which hands out the next fencing
// token: one more than the last one (KEYS[2]), and never less than the
// server's clock in microseconds since the epoch. The clock is what keeps
// tokens increasing when the counter is gone: a restart without
// persistence, a restart from an older snapshot, the counter's retention
// running out. A script takes far longer than a microsecond, so the
// counter never runs ahead of the clock by more than a step. A Lua number
// holds these integers exactly (they stay below 2^53 until the year 2255).
// The token is stored with the retention as its TTL and returned; a
// garbled counter reads as 0, so issue cannot fail.
//
// The clock is read once per script, and only by a script that needs it
// (serverClock): an attempt that finds the lock held costs no TIME.
const tokenPrelude = `
local clock
local function serverClock()
	if not clock then clock = redis.call('TIME') end
	return clock
end
local function issue(retention)
	local token = (tonumber(redis.call('GET', KEYS[2])) or 0) + 1
	local t = serverClock()
	local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
	if now > token then token = now end
	redis.call('SET', KEYS[2], string.format('%.0f', token), 'PX', retention)
	return token
end
`

// The fast mode. KEYS: lock, fence, wanted.
//
// A waiter asks for the lock by appending its request,
// "<owner> <waiter-id> <channel>", to the list of requests (the wanted key)
// unless it stands there already; the first request of an empty list is
// published on the list's name as a channel, for a holder that keeps the
// lock between writes (Lease.Wanted). A release, or a commit that lets
// go, hands the lock to the first request whose waiter can be told: it
// takes the request off the list, sets the lock to the asker's owner
// token with a short TTL (the hand-off window) and publishes the waiter's
// ID to its process channel; the asker's next acquire finds the lock its
// own and confirms it with its full TTL. A process channel that nobody
// subscribes to means the asker's process is gone (see tellFunc), and the
// next request is tried. So
// under contention every release hands the lock on, in the order the
// waiters asked, and wakes one waiter: no waiter is passed over for ever
// by a newer one, and no release wakes them all.

// listPrelude defines onList(cmd, key, ...), which runs a list command on
// the requests at key. A key of another type there is a one-slot request
// that an earlier version of baton left (a string): it is dropped, its
// waiter asks again at its next attempt, and the command runs on no list.
// So a process of this version keeps working on a lock that an earlier
// one asked for; the earlier version's scripts fail on a list, so those
// processes err until the upgrade has replaced them.
const listPrelude = `
local function onList(cmd, key, ...)
	local r = redis.pcall(cmd, key, ...)
	if type(r) == 'table' and r.err then
		if string.find(r.err, 'WRONGTYPE', 1, true) then redis.call('DEL', key) end
		r = redis.call(cmd, key, ...) -- any other error is raised, as by a plain call
	end
	return r
end
`

// requestPrelude defines dropRequest(entry): the request entry leaves the
// list at KEYS[3], once its claim acquires or gives up.
const requestPrelude = listPrelude + dropRequestFunc

const dropRequestFunc = `
local function dropRequest(entry)
	onList('LREM', KEYS[3], 1, entry)
end
`

// acquireScript takes the lock if it is free, or confirms a hand-off to
// the caller, and then issues a fencing token. Otherwise, unless ARGV[3]
// is "0", it asks the holder to let go.
// ARGV: owner, TTL ms, how to ask ("0": not at all, from a claim that has
// never asked, which has no request to take back; "1": a claim's first
// ask, whose request cannot stand yet, so it saves the LPOS; "2": a later
// one), "<waiter-id> <channel>" of the asker, fence retention ms. The list
// of requests lives a TTL after the last attempt that asks, so that a
// request whose waiter died goes.
// It returns the new fencing token (> 0) on success; otherwise -1 - PTTL of
// the lock, from which the time to look again is read back, or 0 for a
// lock without a TTL. One integer, so the reply costs no allocation.
var acquireScript = newScript(tokenPrelude + requestPrelude + `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
	if ARGV[3] ~= '0' then
		local entry = ARGV[1] .. ' ' .. ARGV[4]
		if (ARGV[3] == '1' or not onList('LPOS', KEYS[3], entry)) and onList('RPUSH', KEYS[3], entry) == 1 then
			redis.call('PUBLISH', KEYS[3], '1')
		end
		redis.call('PEXPIRE', KEYS[3], ARGV[2])
	end
	local ttl = redis.call('PTTL', KEYS[1])
	if ttl < 0 then return 0 end
	return -1 - ttl
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
-- A hand-off took the request off already; a first ask that finds the
-- lock free has none.
if ARGV[3] == '2' and holder ~= ARGV[1] then dropRequest(ARGV[1] .. ' ' .. ARGV[4]) end
return issue(ARGV[5])
`)

// withdrawScript ends the claim of a fast waiter that gave up: it takes
// back its request, so that the lock is not handed to nobody, and releases
// a lock handed to it meanwhile (or taken by an attempt whose reply never
// came), handing it on as a release does: the waiters behind wait for
// their hand-off, not for the key's events. ARGV: owner,
// "<waiter-id> <channel>" of its request, "" if it never asked, hand-off
// window ms.
var withdrawScript = newScript(listPrelude + dropRequestFunc + handOffFunc + `
if ARGV[2] ~= '' then dropRequest(ARGV[1] .. ' ' .. ARGV[2]) end
if redis.call('GET', KEYS[1]) == ARGV[1] and not handOff(KEYS[3], ARGV[1], ARGV[3]) then
	redis.call('DEL', KEYS[1])
end
return 1
`)

// handOffPrelude defines handOff(wanted, owner, window): it takes the
// first request off the list at the key wanted and, if it is another
// owner's, sets the lock (KEYS[1]) to the asker's owner token for the
// hand-off window and tells the asker's waiter on its process channel; it
// returns true. A request whose waiter nobody hears (its process is gone),
// or owner's own, is dropped and the next is tried; with none left it
// returns false: the caller keeps or deletes the lock.
const handOffPrelude = listPrelude + handOffFunc

// tellFunc defines tell(channel, id), which publishes a waiter's ID on its
// process's channel and reports whether that process heard it. PUBLISH
// answers how many clients received the message, and pattern subscribers
// count among them: one PSUBSCRIBE * anywhere (an operator's redis-cli, a
// pub/sub bridge) would make every dead waiter look alive and keep the
// lock for its hand-off window. So the channel's own subscribers are
// counted first, and a channel nobody subscribes to is not published on.
// Shard channels have no pattern subscribers: their flavour (see
// publishing.sharded) trusts SPUBLISH's count.
//
// tell never raises: it runs after a write-back's first write, whose
// error reply must mean that nothing was written. A user whose ACL lacks
// PUBSUB NUMSUB (the minimal ACL of earlier versions) is told by
// PUBLISH's count, as before; one that lacks PUBLISH counts as heard, and
// the lock waits out its hand-off window for a waiter that was not told.
const tellFunc = `
local function tell(channel, id)
	local subscribers = redis.pcall('PUBSUB', 'NUMSUB', channel)
	if type(subscribers) == 'table' and subscribers[2] == 0 then return false end
	local heard = redis.pcall('PUBLISH', channel, id)
	return type(heard) ~= 'number' or heard > 0
end
`

// tellShardedFunc is tellFunc for shard channels.
const tellShardedFunc = `
local function tell(channel, id)
	local heard = redis.pcall('SPUBLISH', channel, id)
	return type(heard) ~= 'number' or heard > 0
end
`

// handOffFunc defines handOff (see handOffPrelude). A hand-off the server
// refuses part-way (an ACL without one of its commands, a key of another
// type) is given up, and handOff returns false as when nobody waits: the
// caller then keeps or deletes the lock. So a release
// that has begun always ends, and a write-back, whose state is written
// before the hand-off, never answers with an error after writing.
const handOffFunc = tellFunc + `
local function handOff(wanted, owner, window)
	local ok, handed = pcall(function()
		while true do
			local asker = onList('LPOP', wanted)
			if not asker then return false end
			local other, id, channel = string.match(asker, '^(%S+) (%d+) (.+)$')
			if other and other ~= owner then
				redis.call('SET', KEYS[1], other, 'PX', window)
				if tell(channel, id) then return true end
			end
		end
	end)
	return ok and handed
end
`

// releaseScript releases the lock if the caller still owns it: it hands
// it to the standing asker, if any, or deletes it.
// KEYS: lock, wanted. ARGV: owner token, hand-off window ms. Returns 2 if
// handed on, 1 if deleted, 0 if not held.
var releaseScript = newScript(handOffPrelude + `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if handOff(KEYS[2], ARGV[1], ARGV[2]) then return 2 end
redis.call('DEL', KEYS[1])
return 1
`)

// plainReleaseScript is the compare-and-delete every Redis lock uses,
// blind to requests. Only the release styles that reproduce the problem
// baton fixes send it. KEYS: lock. ARGV: owner token. Returns 1 if
// released, 0 if not held.
var plainReleaseScript = newScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// extendScript resets the lock's TTL if the caller still owns it.
// KEYS: lock. ARGV: owner token, TTL in ms. Returns 1 if extended, 0 if not
// held.
var extendScript = newScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// statePrelude defines writeState(key), the write-back of the commit
// scripts, whose ARGV it reads: it sets key to the value with its TTL and
// returns 0, or, when the state must exist and key is missing, writes
// nothing and returns -2.
const statePrelude = `
local function writeState(key)
	if ARGV[6] == '1' and redis.call('EXISTS', key) == 0 then return -2 end
	redis.call('SET', key, ARGV[2], 'PX', ARGV[3])
	return 0
end
`

// commitScript is the fenced write-back (Lease.commit) in fast mode.
// KEYS: lock, state, wanted. ARGV: owner, value, state TTL ms, "1" to keep
// the lock, lock TTL ms, "1" if the state must exist, hand-off window ms.
// Returns -1 if the caller does not own the lock (nothing written), and -2
// if the state it needs is missing (nothing written; the lock is kept with
// keep, else released). Else the state is written and it returns 1 if the
// caller still holds the lock, 0 if it was released or handed to the
// asker.
var commitScript = newScript(handOffPrelude + statePrelude + commitBody("KEYS[2]", "handOff(KEYS[3], ARGV[1], ARGV[7])"))

// commitBody is the commit scripts' body, around the key of the state and
// the Lua call that hands the lock to a waiting owner, true if it did. The
// state's SET is its first write, so that a script the server stops there
// (out of memory) has written nothing, and after it only the lock's own
// SET or DEL can raise (the hand-off never does): refusedWriteBack rests
// on it.
func commitBody(stateKey, handOn string) string {
	return `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local result = writeState(` + stateKey + `)
if result == -2 and ARGV[4] == '1' then return -2 end
if ` + handOn + ` then return result end
if ARGV[4] == '1' then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[5])
	return 1
end
redis.call('DEL', KEYS[1])
return result
`
}

var pingCommand = []string{"PING"}

// allScripts are loaded by Open, so that the first use of each is an
// EVALSHA like every other.
var allScripts = []script{acquireScript, withdrawScript, releaseScript, plainReleaseScript, extendScript, commitScript,
	fairAcquireScript, fairReleaseScript, fairCommitScript, inspectScript}

// loadScripts sends SCRIPT LOAD for every script in one write. It is an
// optimisation only: where SCRIPT is refused or forgotten (a restart, a
// failover, SCRIPT FLUSH), EVALSHA's NOSCRIPT falls back to EVAL.
func loadScripts(ctx context.Context, c *conn.Client) {
	cmds := make([][]string, len(allScripts))
	for i, s := range allScripts {
		cmds[i] = []string{"SCRIPT", "LOAD", s.src}
	}
	_, _ = c.DoMulti(ctx, cmds...)
}

// run executes s on keys with args, preceded in the same write by a PING
// when ping is set (the release's wire rule), and returns the script's
// reply. An error reply comes back as the error too.
func run(ctx context.Context, c commander, s script, ping bool, keys []string, args ...string) (resp.Value, error) {
	v, _, err := runWith(ctx, c, s, ping, keys, args, nil)
	return v, err
}

// runWith is run with further commands sent right after the script, in the
// same write; their replies come back after the script's.
func runWith(ctx context.Context, c commander, s script, ping bool, keys, args []string, after [][]string) (resp.Value, []resp.Value, error) {
	v, rest, err := s.call(ctx, c, false, ping, keys, args, after)
	if errors.Is(err, resp.NoScript) {
		v, rest, err = s.call(ctx, c, true, ping, keys, args, after)
	}
	return v, rest, err
}

// command is EVALSHA, or EVAL with the source, of s.
func (s script) command(eval bool, keys, args []string) []string {
	return s.appendCommand(make([]string, 0, 3+len(keys)+len(args)), eval, keys, args)
}

// pingBatch is PING and a script's command, made in one allocation: a
// release's, or any script sent behind a PING, whose arguments fit.
type pingBatch struct {
	cmds [2][]string
	args [12]string
}

func (s script) appendCommand(cmd []string, eval bool, keys, args []string) []string {
	if eval {
		cmd = append(cmd, "EVAL", s.src)
	} else {
		cmd = append(cmd, "EVALSHA", s.sha)
	}
	cmd = append(cmd, strconv.Itoa(len(keys)))
	cmd = append(cmd, keys...)
	return append(cmd, args...)
}

func (s script) call(ctx context.Context, c commander, eval, ping bool, keys, args []string, after [][]string) (resp.Value, []resp.Value, error) {
	var replies []resp.Value
	var err error
	switch {
	case !ping && len(after) == 0:
		v, err := c.Do(ctx, s.command(eval, keys, args)...)
		return v, nil, err
	case ping && len(after) == 0 && 3+len(keys)+len(args) <= len(pingBatch{}.args):
		b := new(pingBatch)
		b.cmds[0], b.cmds[1] = pingCommand, s.appendCommand(b.args[:0], eval, keys, args)
		replies, err = c.DoMulti(ctx, b.cmds[:]...)
	default:
		cmd := s.command(eval, keys, args)
		cmds := make([][]string, 0, 2+len(after))
		if ping {
			cmds = append(cmds, pingCommand)
		}
		cmds = append(append(cmds, cmd), after...)
		replies, err = c.DoMulti(ctx, cmds...)
	}
	if err != nil {
		return resp.Value{}, nil, err
	}
	if ping {
		replies = replies[1:]
	}
	return replies[0], replies[1:], replies[0].Err()
}

// integerReply checks that a script answered with an integer within
// [lo, hi]: a server that answers otherwise is not running our script, and
// nothing it said is trusted.
func integerReply(v resp.Value, lo, hi int64) (int64, error) {
	if v.Type != resp.Integer || v.Int < lo || v.Int > hi {
		return 0, fmt.Errorf("%w: %s", errBadReply, v)
	}
	return v.Int, nil
}
