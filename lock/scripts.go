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

// acquireScript takes the lock if it is free and bumps the fencing counter.
// KEYS: lock, fence. ARGV: owner token, TTL in ms.
// It returns the new fencing token (always > 0) on success. When the lock
// is held it returns -1 - PTTL: a value <= -1 from which the remaining TTL
// is read back, or 0 for a lock held without a TTL. One integer, so the
// reply costs no allocation.
var acquireScript = newScript(`
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return redis.call('incr', KEYS[2])
end
local ttl = redis.call('pttl', KEYS[1])
if ttl < 0 then return 0 end
return -1 - ttl
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

// run executes s on keys with args, preceded in the same write by a PING
// when ping is set (the release's wire rule), and returns the script's
// reply. An error reply comes back as the error too.
func run(ctx context.Context, c *conn.Client, s script, ping bool, keys []string, args ...string) (resp.Value, error) {
	v, err := s.call(ctx, c, false, ping, keys, args)
	if errors.Is(err, resp.NoScript) {
		v, err = s.call(ctx, c, true, ping, keys, args)
	}
	return v, err
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

func (s script) call(ctx context.Context, c *conn.Client, eval, ping bool, keys, args []string) (resp.Value, error) {
	cmd := s.command(eval, keys, args)
	if !ping {
		return c.Do(ctx, cmd...)
	}
	replies, err := c.DoMulti(ctx, pingCommand, cmd)
	if err != nil {
		return resp.Value{}, err
	}
	return replies[1], replies[1].Err()
}
