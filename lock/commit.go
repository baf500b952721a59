package lock

import (
	"context"
	"fmt"
	"time"
)

// Write is a fenced write-back: a value stored beside the lock, only while
// the lease owns the lock, in the same script that releases or extends it.
// Package manager keeps its state this way.
type Write struct {
	// Key must share the lock's hash tag, so that the script may touch it
	// on Redis Cluster too: <prefix>{key}<anything>, with the lock's key
	// between the braces.
	Key   string
	Value string
	// TTL is the Key's TTL; at least a millisecond, rounded up to one.
	TTL time.Duration
	// IfExists writes only if Key exists: for a holder that kept its own
	// copy of the value since its last write, which is stale if the key
	// expired or was deleted meanwhile. If Key is missing, nothing is
	// written, the lock is kept, and Commit's error matches
	// ErrStateMissing.
	IfExists bool
}

// ErrStateMissing is matched by Commit's error when Write.IfExists was set
// and the key was missing. Nothing was written.
var ErrStateMissing = fmt.Errorf("lock: the state to write over is missing")

// Commit stores w only if this lease still owns the lock, and then, in the
// same script, releases the lock, or with keep extends it to the TTL.
//
// Without keep it is Unlock carrying a write, sent as PING + script in one
// write like every release, and it behaves as Unlock on cancellation and
// broken connections.
//
// With keep, the lock is kept only if nobody else wants it: if another
// owner waits (in fast mode, one whose request stands; in fair mode, a
// queued waiter), the lock is handed to it after the write, and held
// reports false. The server's reply decides what is reported: a write that
// landed returns a nil error even if the lease ran out by this process's
// clock while the reply was on its way (the lease then ends, and held is
// false).
//
// If the lease no longer owns the lock, nothing is written, the lease
// ends, and the error matches ErrNotHeld. An error matching
// conn.UncertainError means the write may or may not have landed.
func (ls *Lease) Commit(ctx context.Context, w Write, keep bool) (held bool, err error) {
	if err := ls.startCall(ctx, "commit", "state TTL", w.TTL); err != nil {
		return false, err
	}
	defer ls.c.l.exit()
	c := &ls.c
	if hashTag(w.Key) != hashTag(c.names.lock) {
		return false, fmt.Errorf("%w: state key %q does not share the hash tag of lock %q", ErrInvalid, w.Key, c.names.lock)
	}
	if !keep {
		release := w // only this copy escapes to the release's goroutine
		return false, ls.unlock(ctx, &release)
	}
	if !ls.isHeld() {
		return false, c.errorf("commit", ErrNotHeld)
	}
	start := time.Now()
	l := c.l
	var keys []string
	s := commitScript
	if l.opts.Fair {
		keys, s = append(c.names.fairKeys(), w.Key), fairCommitScript
	} else {
		keys = []string{c.names.lock, w.Key, c.names.wanted}
	}
	v, err := run(ctx, l.client, s, false, keys, w.args(c, true)...)
	if err != nil {
		return false, c.errorf("commit", err)
	}
	n, err := integerReply(v, -2, 1)
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
		// Written, and handed to the owner that asked.
		ls.mu.Lock()
		ls.endLocked(released)
		ls.mu.Unlock()
		return false, nil
	}
	// Written and extended; if the lease ran out meanwhile, the release
	// sent then follows on the same connection, and the write stands.
	return ls.extendTo(start, l.opts.TTL), nil
}

// args are the commit scripts' ARGV.
func (w *Write) args(c *claim, keep bool) []string {
	keepArg, ifExists := "0", "0"
	if keep {
		keepArg = "1"
	}
	if w.IfExists {
		ifExists = "1"
	}
	return []string{c.owner, w.Value, millis(w.TTL), keepArg, c.l.ttlArg, ifExists, c.l.windowArg}
}
