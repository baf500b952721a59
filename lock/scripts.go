package lock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
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

// The fast mode's requests. A waiter asks for the lock by setting the
// wanted flag to its owner token (and publishing on the flag's name as a
// channel), for a holder that keeps the lock between writes to let go (see
// package manager). The flag is one slot: the latest asker's. It stays
// until that waiter acquires or withdraws, or its TTL ends, so a holder
// that takes the lock again first still sees it. An owner that acquires
// politely (LockThenPolitely) lets the asker go first when it finds the
// lock free, and waits next in line: the next key holds its token until
// the asker acquires, when it becomes the flag (without a publish: the new
// holder reads the flag), so that the asker in turn is asked to let go.
//
// fastPrelude defines answered(owner): owner acquired, or gave up, so its
// requests are answered; unless another owner's request stands, the owner
// waiting next, if any, is now the one asking.
const fastPrelude = `
local function answered(owner)
	if redis.call('get', KEYS[4]) == owner then redis.call('del', KEYS[4]) end
	local asker = redis.call('get', KEYS[3])
	if asker and asker ~= owner then return end
	if redis.call('exists', KEYS[4]) == 1 then
		redis.call('rename', KEYS[4], KEYS[3])
	else
		redis.call('del', KEYS[3])
	end
end
`

// Manners of an acquire attempt, ARGV[4] of acquireScript.
const (
	mannerPlain     = "0" // take the lock whenever it is free
	mannerPolite    = "1" // let a waiter that asked go first
	mannerPastGrace = "2" // polite, but the asker had its grace and did not come
)

// acquireScript takes the lock if it is free and bumps the fencing counter.
// KEYS: lock, fence, wanted, next. ARGV: owner token, TTL in ms, "1" to ask
// for the lock (set the wanted flag and publish) when it is held, and the
// manner (see mannerPlain).
// It returns the new fencing token (always > 0) on success. Otherwise it
// returns -1 - PTTL of the lock (or, for a polite refusal, of the asker's
// flag): a value <= -1 from which the time to look again is read back, or
// 0 for a key without a TTL. One integer, so the reply costs no
// allocation.
var acquireScript = newScript(fastPrelude + `
if ARGV[4] ~= '0' and redis.call('exists', KEYS[1]) == 0 then
	local asker = redis.call('get', KEYS[3])
	if asker and asker ~= ARGV[1] then
		if ARGV[4] == '1' then
			redis.call('set', KEYS[4], ARGV[1], 'PX', ARGV[2])
			local ttl = redis.call('pttl', KEYS[3])
			if ttl < 0 then return 0 end
			return -1 - ttl
		end
		if redis.call('get', KEYS[4]) == ARGV[1] then redis.call('del', KEYS[3]) end
	end
end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	answered(ARGV[1])
	return redis.call('incr', KEYS[2])
end
local ttl = redis.call('pttl', KEYS[1])
if ARGV[3] == '1' then
	redis.call('set', KEYS[3], ARGV[1], 'PX', ARGV[2])
	redis.call('publish', KEYS[3], '1')
end
if ttl < 0 then return 0 end
return -1 - ttl
`)

// withdrawScript takes back the requests of a waiter that gave up, so that
// a holder is not asked to let go for nobody. A polite owner waiting
// behind the request becomes the one asking, but is not woken: it takes
// the lock when its grace ends. KEYS: lock, fence, wanted, next. ARGV:
// owner.
var withdrawScript = newScript(fastPrelude + `
answered(ARGV[1])
return 1
`)

// releaseScript deletes the lock if the caller still owns it.
// KEYS: lock. ARGV: owner token. Returns 1 if released, 0 if not held.
var releaseScript = newScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
	return redis.call('del', KEYS[1])
end
return 0
`)

// extendScript resets the lock's TTL if the caller still owns it.
// KEYS: lock. ARGV: owner token, TTL in ms. Returns 1 if extended, 0 if not
// held.
var extendScript = newScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
	return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
`)

var pingCommand = []string{"PING"}

// allScripts are loaded by Open, so that the first use of each is an
// EVALSHA like every other.
var allScripts = []script{acquireScript, withdrawScript, releaseScript, extendScript, fairAcquireScript, fairReleaseScript, releaseSetScript, fairReleaseSetScript, holdWriteScript}

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
func run(ctx context.Context, c *conn.Client, s script, ping bool, keys []string, args ...string) (resp.Value, error) {
	v, _, err := runWith(ctx, c, s, ping, keys, args, nil)
	return v, err
}

// runWith is run with further commands sent right after the script, in the
// same write; their replies come back after the script's.
func runWith(ctx context.Context, c *conn.Client, s script, ping bool, keys, args []string, after [][]string) (resp.Value, []resp.Value, error) {
	v, rest, err := s.call(ctx, c, false, ping, keys, args, after)
	if errors.Is(err, resp.NoScript) {
		v, rest, err = s.call(ctx, c, true, ping, keys, args, after)
	}
	return v, rest, err
}

// command is EVALSHA, or EVAL with the source, of s.
func (s script) command(eval bool, keys, args []string) []string {
	cmd := make([]string, 0, 3+len(keys)+len(args))
	if eval {
		cmd = append(cmd, "EVAL", s.src)
	} else {
		cmd = append(cmd, "EVALSHA", s.sha)
	}
	cmd = append(cmd, strconv.Itoa(len(keys)))
	cmd = append(cmd, keys...)
	return append(cmd, args...)
}

func (s script) call(ctx context.Context, c *conn.Client, eval, ping bool, keys, args []string, after [][]string) (resp.Value, []resp.Value, error) {
	cmd := s.command(eval, keys, args)
	var replies []resp.Value
	var err error
	switch {
	case !ping && len(after) == 0:
		v, err := c.Do(ctx, cmd...)
		return v, nil, err
	case ping && len(after) == 0:
		replies, err = c.DoMulti(ctx, pingCommand, cmd)
	default:
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
