package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/batonlock/baton/cluster"
	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/lockstate"
	"github.com/batonlock/baton/resp"
)

func init() {
	lockstate.Register(lockstate.Ops[Locker, Lease]{
		LockThen: (*Locker).lockThen,
		Commit:   (*Lease).commit,
		Commander: func(l *Locker, key string) lockstate.Commander {
			return l.nodes.commander(key)
		},
		LockKey: func(l *Locker, key string) string { return l.opts.Prefix + "{" + key + "}" },
	})
}

// lockThen is Lock with commands in the same write (lockstate.Ops.LockThen).
func (l *Locker) lockThen(ctx context.Context, key string, cmds ...[]string) (*Lease, []resp.Value, error) {
	return l.lock(ctx, key, cmds)
}

// commit (lockstate.Ops.Commit) stores w only if this lease still owns the lock, and then, in the
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
func (ls *Lease) commit(ctx context.Context, w lockstate.Write, keep bool) (held bool, err error) {
	if err := ls.startCall(ctx, "commit", "state TTL", w.TTL); err != nil {
		return false, err
	}
	defer ls.c.l.exit()
	c := &ls.c
	if cluster.HashTag(w.Key) != cluster.HashTag(c.names.lock) {
		return false, fmt.Errorf("%w: state key %q does not share the hash tag of lock %q", ErrInvalid, w.Key, c.names.lock)
	}
	if !keep {
		release := w // only this copy escapes to the release's goroutine
		return false, ls.unlock(ctx, &release)
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
	var keys []string
	s := l.scripts.commit
	if l.opts.Fair {
		keys, s = append(c.names.fairKeys(), w.Key), l.scripts.fairCommit
	} else {
		keys = []string{c.names.lock, w.Key, c.names.wanted}
	}
	v, _, short, err := l.runAcked(ctx, c.cmd, s, false, keys, commitArgs(&w, c, true), nil)
	if err != nil {
		if mayHaveRun(err) {
			// It may have extended the lock, as an Extend would.
			ls.mayHaveExtended(start, l.opts.TTL)
		}
		// A caller whose ctx ends leaves the script queued or in flight,
		// with ctx's bare error: it may run yet.
		return false, c.errorf("commit", stillUncertain(ctx, retried{}, err))
	}
	if short != nil {
		// Whatever the script did, the write may not survive a
		// failover; and it did write, or refused on its own account.
		defer func() {
			if err == nil {
				err = c.errorf("commit", &conn.UncertainError{Cause: short})
			}
		}()
	}
	n, err := integerReply(v, -2, 1)
	if err != nil {
		return false, c.errorf("commit", err)
	}
	switch n {
	case -2:
		return true, c.errorf("commit", lockstate.ErrStateMissing)
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

// commitArgs are the commit scripts' ARGV.
func commitArgs(w *lockstate.Write, c *claim, keep bool) []string {
	keepArg, ifExists := "0", "0"
	if keep {
		keepArg = "1"
	}
	if w.IfExists {
		ifExists = "1"
	}
	return []string{c.owner, w.Value, millis(w.TTL), keepArg, c.l.ttlArg, ifExists, c.l.windowArg}
}
