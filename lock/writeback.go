package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/resp"
)

// Write is a fenced write-back: a value stored beside a lock, only while
// a lease owns the lock, by the same script that then extends or releases
// the lock (Lease.Commit). Nothing another owner does can slip between the
// check of the owner and the write, as it could between a check the caller
// makes and a write it sends afterwards.
type Write struct {
	// Key is where the value is stored. It must share the lock's hash
	// tag, so that the script may touch it on a Redis Cluster: the lock's
	// name (Locker.Key) followed by anything, for example
	// l.Key("account:42") + ":balance".
	Key   string
	Value string
	// TTL is Key's TTL: at least a millisecond, at most 100 years; a
	// fraction of a millisecond is rounded up.
	TTL time.Duration
	// IfExists writes only if Key exists: for a holder that kept its own
	// copy of the value since its last write, which is stale if the key
	// expired or was deleted meanwhile. If Key is missing, nothing is
	// written, the lock is kept or released as below, and the error
	// matches ErrStateMissing.
	IfExists bool
	// Unlock releases the lock after the write, in the same script: an
	// Unlock carrying a write. Without it the lock is kept and extended.
	Unlock bool
}

// ErrStateMissing is matched by Commit's error when Write.IfExists was set
// and the key was missing. Nothing was written.
var ErrStateMissing = errors.New("lock: the state to write over is missing")

// Key is the name in Redis of the lock for key: <prefix>{key}, with the
// Locker's prefix (WithKeyPrefix). Keys that begin with it share its hash
// tag, and so its slot on a Redis Cluster: name the state kept beside a
// lock so, for Write.Key and for the commands of LockAndDo and Inspect. Key
// sends nothing and checks nothing.
func (l *Locker) Key(key string) string { return l.opts.Prefix + "{" + key + "}" }

// LockAndDo is Lock, followed by cmds on the server, or the cluster node,
// that holds the lock: it returns the lease and the commands' replies, in
// order, error replies among them as values. When the lock is free, and
// when it is handed over, the commands travel in the same write as the
// acquire, and cost no round trip of their own; otherwise they follow the
// acquire. Use it to read the state kept under the lock (Key says how to
// name it) as the lease begins. If the commands cannot be run, the lease
// is released and the error returned.
func (l *Locker) LockAndDo(ctx context.Context, key string, cmds ...[]string) (*Lease, []resp.Value, error) {
	return l.lock(ctx, key, cmds)
}

// Commit stores w only if the lease still owns the lock, and then, in the
// same script, extends the lock to the TTL, or with w.Unlock releases it.
// held reports whether the lease still holds the lock afterwards.
//
// With w.Unlock it is Unlock carrying a write, sent as PING + script in
// one write like every release, and it behaves as Unlock on cancellation
// and broken connections.
//
// Without it, the lock is kept only if nobody else wants it: if another
// owner waits (in fast mode, one whose request stands; in fair mode, a
// queued waiter), the lock is handed to it after the write, and held
// reports false. The server's reply decides what is reported: a write that
// landed returns a nil error even if the lease ran out by this process's
// clock while the reply was on its way (the lease then ends, and held is
// false).
//
// If the lease no longer owns the lock, nothing is written, the lease
// ends, and the error matches ErrNotHeld. A w.Key that does not share the
// lock's hash tag, or a TTL out of range, is refused before anything is
// sent (ErrInvalid), the lease still held. An error matching
// conn.UncertainError means the write may or may not have landed; under
// WithReplicaAck, also that too few replicas acknowledged it.
func (ls *Lease) Commit(ctx context.Context, w Write) (held bool, err error) {
	if err := ls.startCall(ctx, "commit", "state TTL", w.TTL); err != nil {
		return false, err
	}
	defer ls.c.l.exit()
	c := &ls.c
	defer func() { c.uncertain(observe.Commit, err) }()
	if cluster.HashTag(w.Key) != cluster.HashTag(c.names.lock) {
		return false, fmt.Errorf("lock: %w: state key %q does not share the hash tag of lock %q", ErrInvalid, w.Key, c.names.lock)
	}
	if w.Unlock {
		release := w // only this copy escapes to the release's goroutine
		return false, ls.unlock(ctx, &release, observe.Released)
	}
	if !ls.isHeld() {
		return false, c.errorf("commit", ErrNotHeld)
	}
	if err := ls.takeTurn(ctx); err != nil {
		return true, c.errorf("commit", err) // nothing sent
	}
	defer ls.giveTurn()
	start := time.Now()
	l := c.l
	// The mode's commit call, chosen here and in sendRelease rather than
	// in a function of its own: one that chose would be too large to
	// inline, and the fast call's KEYS, made inline, cost no allocation.
	var sc scriptCall
	if l.opts.Fair {
		sc = c.fairCommit(&w)
	} else {
		sc = c.fastCommit(&w)
	}
	ls.setHanding(true)
	defer ls.setHanding(false)
	r, err := l.runAcked(ctx, c.cmd, sc, nil)
	if err != nil {
		if mayHaveRun(err) {
			// It may have extended the lock, as an Extend would.
			ls.mayHaveExtended(start, l.opts.TTL)
		}
		// A caller whose ctx ends leaves the script queued or in flight,
		// with ctx's bare error: it may run yet.
		return false, c.errorf("commit", stillUncertain(ctx, retried{}, err))
	}
	if r.short != nil {
		// Whatever the script did, the write may not survive a
		// failover; and it did write, or refused on its own account.
		defer func() {
			if err == nil {
				err = c.errorf("commit", &conn.UncertainError{Cause: r.short})
			}
		}()
	}
	n, err := integerReply(r.reply, -2, 1)
	if err != nil {
		return false, c.errorf("commit", err)
	}
	switch n {
	case -2:
		return true, c.errorf("commit", ErrStateMissing)
	case -1:
		ls.markLost()
		return false, c.errorf("commit", ErrNotHeld)
	case 0:
		// Written, and handed to the owner that asked: whatever the
		// watch read of the lock meanwhile was the hand-off.
		ls.mu.Lock()
		ls.heardLoss = 0
		ls.endLocked(released, observe.Released)
		ls.mu.Unlock()
		return false, nil
	}
	// Written and extended; if the lease ran out meanwhile, the release
	// sent then follows on the same connection, and the write stands.
	return ls.extendTo(start, l.opts.TTL), nil
}

// commitArgs are the commit scripts' ARGV for w.
func (c *claim) commitArgs(w *Write) []string {
	l := c.l
	return commitArgs{owner: c.owner, value: w.Value, stateTTL: millis(w.TTL), keep: !w.Unlock, ttl: l.ttlArg,
		ifExists: w.IfExists, publish: l.publish, retention: l.retentionArg}.argv()
}

// setHanding marks a commit that may hand the lock on as on its way, or,
// with false, as answered: a loss the watch found meanwhile that the
// reply did not explain (a hand-off, a lock found gone) ends the lease
// now, for the reason the watch found.
func (ls *Lease) setHanding(on bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.handing = on
	if on {
		return
	}
	if why := ls.heardLoss; why != 0 {
		ls.heardLoss = 0
		ls.endLocked(lost, why)
	}
}
