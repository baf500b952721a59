package lock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
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
	return l.lockThen(ctx, key, mannerPlain, cmds)
}

// LockThenPolitely is LockThen for an owner that keeps the lock between
// writes and lets it go when another owner asks (package manager, with
// hold): having let go, it must not take the lock straight back. In fast
// mode, when it finds the lock free but asked for by a waiter, it does not
// take it: it waits next in line, and the waiter, on acquiring, finds the
// lock asked for in turn (ExtendSetting reports it). If the waiter has not
// taken the lock within the polite grace (WithPoliteGrace, default 100ms),
// the polite owner takes it anyway: the waiter may have gone. In fair mode
// the queue already orders owners, and LockThenPolitely is LockThen.
func (l *Locker) LockThenPolitely(ctx context.Context, key string, cmds ...[]string) (*Lease, []resp.Value, error) {
	if l.opts.politeGrace == 0 {
		return l.lockThen(ctx, key, mannerPlain, cmds)
	}
	return l.lockThen(ctx, key, mannerPolite, cmds)
}

func (l *Locker) lockThen(ctx context.Context, key, manner string, cmds [][]string) (*Lease, []resp.Value, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, nil, err
	}
	defer l.calls.Done()
	names := l.keyNames(key)
	a := attempt{owner: rand.Text(), ask: true, manner: manner}
	var ls *Lease
	var replies []resp.Value
	var err error
	switch {
	case l.opts.fair:
		// Queue at once: a first attempt that only tried would keep a
		// holder that yields to waiters unaware for a round trip.
		ls, replies, err = l.lockFairThen(ctx, key, cmds)
	case !l.sub.Waiting(names.lock):
		ls, _, replies, err = l.tryAcquireThen(ctx, key, names, a, cmds)
		if ls == nil && err == nil {
			ls, err = l.lockFast(ctx, key, names, a)
			replies = nil
		}
	default:
		ls, err = l.lockFast(ctx, key, names, a)
	}
	if err != nil || replies != nil {
		return ls, replies, err
	}
	if len(cmds) == 0 {
		return ls, nil, nil
	}
	replies, err = l.client.DoMulti(ctx, cmds...)
	if err != nil {
		_ = ls.unlock(context.WithoutCancel(ctx), nil)
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
	if err := ls.startCall(ctx, "unlock", "state TTL", stateTTL); err != nil {
		return err
	}
	defer ls.l.calls.Done()
	return ls.unlock(ctx, &stateWrite{key: stateKey, value: value, ttl: strconv.FormatInt(stateTTL.Milliseconds(), 10)})
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
// KEYS: lock, fence, queue, waiters, seq, wanted, state. ARGV: owner,
// value, state TTL in ms.
var fairReleaseSetScript = newScript(fairPrelude + `
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[7], ARGV[2], 'PX', ARGV[3])
if not promote() then redis.call('DEL', KEYS[1]) end
return 1
`)

// ErrWanted is returned by ExtendSetting when asked to refuse and another
// owner has asked for the lock: nothing was written, and the holder should
// let go and redo its modification after the others.
var ErrWanted = errors.New("lock: another owner asked for the lock; nothing written")

// ExtendSetting sets stateKey (see StateKey) to value with the TTL
// stateTTL and extends the lock to the Locker's TTL, in one script, only if
// this lease still owns the lock: the write-back of a holder that keeps the
// lock between writes. It reports whether another owner's request for the
// lock stands (see WantedChannel), so that the holder lets go. With refuseIfWanted set, such a request makes it write nothing
// and return ErrWanted instead. If the lease no longer owns the lock,
// nothing is written and the error matches ErrNotHeld.
func (ls *Lease) ExtendSetting(ctx context.Context, stateKey, value string, stateTTL time.Duration, refuseIfWanted bool) (wanted bool, err error) {
	if err := ls.startCall(ctx, "write", "state TTL", stateTTL); err != nil {
		return false, err
	}
	defer ls.l.calls.Done()
	if !ls.isHeld() {
		return false, fmt.Errorf("lock %q: write: %w", ls.key, ErrNotHeld)
	}
	refuse := "0"
	if refuseIfWanted {
		refuse = "1"
	}
	start := time.Now()
	v, err := run(ctx, ls.l.client, holdWriteScript, false, []string{ls.names.lock, stateKey, ls.names.wanted},
		ls.owner, value, strconv.FormatInt(stateTTL.Milliseconds(), 10), ls.l.ttlArg, refuse)
	if err != nil {
		return false, fmt.Errorf("lock %q: write: %w", ls.key, err)
	}
	switch v.Int {
	case -1:
		ls.markLost()
		return false, fmt.Errorf("lock %q: write: %w", ls.key, ErrNotHeld)
	case 2:
		return true, fmt.Errorf("lock %q: write: %w", ls.key, ErrWanted)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.state != held {
		return false, fmt.Errorf("lock %q: write: %w", ls.key, ErrNotHeld)
	}
	ls.deadline = start.Add(ls.l.opts.ttl)
	return v.Int == 1, nil
}

// holdWriteScript writes state and extends the lock if the caller owns it.
// KEYS: lock, state, wanted. ARGV: owner, value, state TTL ms, lock TTL ms,
// and "1" to refuse when asked. Returns -1 if not held; 2 if asked and
// refusing (nothing written); else 1 if asked, 0 if not. The request is
// left standing: it is answered when its owner acquires.
var holdWriteScript = newScript(`
if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end
local asked = redis.call('exists', KEYS[3])
if asked == 1 and ARGV[5] == '1' then return 2 end
redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('pexpire', KEYS[1], ARGV[4])
return asked
`)

// WantedChannel is the channel on which waiters for key ask its holder to
// let go: every failed attempt of a Lock in fast mode, and every new queue
// entry in fair mode, publishes on it, and sets a flag of the same name
// that ExtendSetting reads. A request can also stand with no publish of
// its own (it predates the acquire, or a polite owner's request took the
// place of the one answered), so a holder that subscribes should read the
// flag (EXISTS) once subscribed.
func (l *Locker) WantedChannel(key string) string { return l.keyNames(key).wanted }

// Subscriber is the Locker's subscriber, for callers who watch channels
// beside the lock's (WantedChannel).
func (l *Locker) Subscriber() *subscriber.Subscriber { return l.sub }

// TTL is the lock TTL the Locker was made with.
func (l *Locker) TTL() time.Duration { return l.opts.ttl }
