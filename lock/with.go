package lock

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/batonlock/baton/resp"
)

// The building blocks for state kept beside a lock (package manager): a
// key whose name shares the lock's hash tag, read in the same write as the
// acquire and written in the same script as the release, only while the
// lease still owns the lock.

// StateKey is the name of a key that shares the hash tag of key's lock, so
// that the lock's scripts may touch it on Redis Cluster too: <prefix>{key}<suffix>.
func StateKey(prefix, key, suffix string) string { return prefix + "{" + key + "}" + suffix }

// LockThen acquires the lock for key as Lock does, then runs cmds on the
// lock's connection. When the lock is free the commands travel in the same
// write as the acquire, so lock and load cost one round trip; after a wait
// they follow in a round trip of their own. Their replies come back in
// order. If they cannot be run the lease is released and the error
// returned.
func (l *Locker) LockThen(ctx context.Context, key string, cmds ...[]string) (*Lease, []resp.Value, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, nil, err
	}
	defer l.calls.Done()
	names := l.keyNames(key)
	if l.opts.fair || !l.sub.Waiting(names.lock) {
		owner := rand.Text()
		var ls *Lease
		var replies []resp.Value
		var err error
		if l.opts.fair {
			ls, _, replies, err = l.fairAttemptThen(ctx, key, names, owner, 0, false, cmds)
		} else {
			ls, _, replies, err = l.tryAcquireThen(ctx, key, names, owner, cmds)
		}
		if ls != nil || err != nil {
			return ls, replies, err
		}
	}
	var ls *Lease
	var err error
	if l.opts.fair {
		ls, err = l.lockFair(ctx, key)
	} else {
		ls, err = l.lockFast(ctx, key, names)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(cmds) == 0 {
		return ls, nil, nil
	}
	replies, err := l.client.DoMulti(ctx, cmds...)
	if err != nil {
		_ = ls.unlock(context.WithoutCancel(ctx))
		return nil, nil, fmt.Errorf("lock %q: after acquiring: %w", key, err)
	}
	return ls, replies, nil
}

// UnlockSetting releases the lock and, in the same script, sets stateKey
// (a key sharing the lock's hash tag, see StateKey) to value with the TTL
// stateTTL, only if this lease still owns the lock: a fenced write-back.
// If the lease no longer owns it, nothing is written and the error matches
// ErrNotHeld. Cancellation behaves as for Unlock: the release and its
// write complete in the background.
func (ls *Lease) UnlockSetting(ctx context.Context, stateKey, value string, stateTTL time.Duration) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if stateTTL < time.Millisecond {
		return fmt.Errorf("%w: state TTL %v, want at least 1ms", ErrInvalid, stateTTL)
	}
	if !ls.l.enter() {
		return fmt.Errorf("lock %q: unlock: %w", ls.key, ErrClosed)
	}
	defer ls.l.calls.Done()
	ls.mu.Lock()
	ended := !ls.endLocked(released)
	ls.mu.Unlock()
	if ended {
		return fmt.Errorf("lock %q: unlock: %w", ls.key, ErrNotHeld)
	}
	w := &stateWrite{key: stateKey, value: value, ttl: strconv.FormatInt(stateTTL.Milliseconds(), 10)}
	return ls.l.release(ctx, ls.key, ls.names, ls.owner, w)
}

// stateWrite is a write-back that a release carries.
type stateWrite struct {
	key, value, ttl string
}

// releaseSetScript is releaseScript with a write-back.
// KEYS: lock, state. ARGV: owner, value, state TTL in ms.
var releaseSetScript = newScript(`
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('del', KEYS[1])
return 1
`)

// fairReleaseSetScript is fairReleaseScript with a write-back.
// KEYS: lock, fence, queue, waiters, seq, state. ARGV: owner, value, state
// TTL in ms.
var fairReleaseSetScript = newScript(fairPrelude + `
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[6], ARGV[2], 'PX', ARGV[3])
if not promote() then redis.call('DEL', KEYS[1]) end
return 1
`)
