package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonlock/baton/internal/replydeadline"
	"github.com/batonlock/baton/resp"
)

// errReplicaAck is in the error of a call whose write fewer replicas
// acknowledged, within the timeout, than WithReplicaAck asks for. Callers
// match what the outcome means instead: ErrNotAcquired for an acquire,
// which was undone, and conn.UncertainError for an extension, a
// write-back or a release, which landed on the primary.
var errReplicaAck = errors.New("lock: too few replicas acknowledged the write")

// WithReplicaAck makes every acquire, extension, write-back and release
// wait until n replicas of the lock's primary have acknowledged it, for at
// most timeout, by sending WAIT n timeout in the same write as the script.
// Redis replicates asynchronously: without this, a primary that fails
// right after granting a lock can be replaced by a replica that never
// heard of it, and a second owner then acquires a lock the first still
// holds. With it, a lock that was granted is on n replicas, and a failover
// to one of them keeps it. Fewer acknowledgements than n fail the call:
// an acquire with an error matching ErrNotAcquired, after undoing it; an
// extension with a conn.UncertainError, the lease's deadline left where
// it was; a write-back (package manager's) with a conn.UncertainError.
// The last two landed on the primary, and a failover may or may not keep
// them.
//
// A release (Unlock, a write-back that lets go, a waiter's withdrawal)
// waits because a release on the primary alone comes undone in a
// failover: the lock is back, held by nobody, until its TTL. One that too
// few replicas acknowledged returns an error matching
// conn.UncertainError, and is sent again in the background, paced, until
// enough do or for the release timeout; meanwhile, and when none do, the
// Locker's Close waits for it up to the release timeout
// (WithReleaseTimeout). Close's own releases, and those in the background
// when it began, are sent again the same way before it returns, so that
// a Locker closed while a replica lags leaves no release that a failover
// could undo, unless the replicas stay away past the release timeout.
// A release that finds the lock not held, on a primary too few replicas
// acknowledge, is no verdict either (a primary failed over that still
// answers says that of a lock that stands on the new one): it too is
// uncertain, and sent again until a verdict is acknowledged. Every
// release compares the owner first, so a resend deletes only the lock
// that a failover brought back, or that stood on the new primary.
//
// What it does not buy: WAIT is not consensus. A failover may promote a
// replica that had not acknowledged: with n below the number of
// replicas, or a replica that lagged beyond the failover's own checks.
// (On redis-server 7.0, a replica under CLIENT PAUSE WRITE acknowledges
// writes it has read but not yet applied, and loses them if its primary
// dies before the pause ends.) An old primary cut off from the others
// keeps answering its clients until it notices, and a holder paused past
// its TTL (a long GC pause, a stopped VM) acts on a lease it no longer
// has, with or without replicas. Where those matter, pass the fencing
// token (Lease.Token) to the resource the lock protects, and have it
// refuse stale tokens.
//
// What it costs: a round trip from the primary to its replicas on every
// acquire, extension, write-back and release, and the connection it
// travels on waits for WAIT's reply before it serves the commands behind
// it, which other goroutines of the process may have queued. With no
// replica reachable, each of those calls takes the whole timeout and
// fails.
//
// Default: off (n = 0). n must be at least 0, and timeout at least a
// millisecond when n is not 0 (WAIT's 0 would wait for ever).
func WithReplicaAck(n int, timeout time.Duration) Option {
	return option(func(o *settings) { o.ReplicaAcks, o.ReplicaAckTimeout = n, timeout })
}

// checkReplicaAck checks WithReplicaAck's values.
func checkReplicaAck(o settings) error {
	switch {
	case o.ReplicaAcks < 0:
		return fmt.Errorf("lock: %w: %d replica acknowledgements, want 0 or more", ErrInvalid, o.ReplicaAcks)
	case o.ReplicaAcks > 0:
		return checkMillis("replica acknowledgement timeout", o.ReplicaAckTimeout)
	}
	return nil
}

// waitCommand is the WAIT that follows a write under WithReplicaAck, or
// nil without it.
func waitCommand(o settings) []string {
	if o.ReplicaAcks == 0 {
		return nil
	}
	return []string{"WAIT", strconv.Itoa(o.ReplicaAcks), millis(o.ReplicaAckTimeout)}
}

// acknowledged reads WAIT's reply: nil if it counted enough replicas, else
// an error matching errReplicaAck that says how many did.
func (l *Locker) acknowledged(v resp.Value) error {
	if err := v.Err(); err != nil {
		return fmt.Errorf("%w: WAIT: %w", errReplicaAck, err)
	}
	if v.Type != resp.Integer {
		return fmt.Errorf("%w: WAIT: %w", errReplicaAck, errBadReply)
	}
	if v.Int < int64(l.opts.ReplicaAcks) {
		return fmt.Errorf("%w: %d of %d within %v", errReplicaAck, v.Int, l.opts.ReplicaAcks, l.opts.ReplicaAckTimeout)
	}
	return nil
}

// unacknowledgedRelease sends again a release whose verdict too few
// replicas acknowledged (see WithReplicaAck): it released the lock on the
// primary (released), or found it not held there, which a primary failed
// over that still answers would say of a lock that stands on the new one.
// It sends it in the background until a verdict is acknowledged, and
// returns what its caller is told. Once the Locker closes it starts
// nothing more: it sends the release again itself, within ctx's bound,
// which Close waits for (Close's own releases, and those it waits for in
// the background), and returns nil if enough replicas acknowledged a
// release then, or ErrNotHeld if they acknowledged that the lock is not
// held. Left to a failover, the lock would come back, held by nobody,
// until its TTL.
func (c *claim) unacknowledgedRelease(ctx context.Context, short error, released bool) error {
	send := func(ctx context.Context) (scriptResult, error) { return c.sendPlainRelease(ctx, releasePingEval) }
	resend := func() {
		ctx, cancel := context.WithTimeout(c.l.bgCtx, c.l.opts.ReleaseTimeout)
		defer cancel()
		c.l.untilAcknowledged(ctx, send)
	}
	verdict := "released on the primary"
	if !released {
		verdict = "not held on a primary too few replicas follow, perhaps one failed over"
	}
	if c.l.spawn(resend) {
		return fmt.Errorf("%w (%s, and sent again in the background until acknowledged)", short, verdict)
	}
	// ctx may end by a reply deadline alone, which untilAcknowledged's
	// pauses would not see.
	bounded, cancel := replydeadline.Bound(ctx)
	defer cancel()
	if _, ok := bounded.Deadline(); ok {
		if r, ok := c.l.untilAcknowledged(bounded, send); ok {
			if outcome, _, err := plainReleaseReply(r.reply); released || err == nil && outcome != releaseNotHeld {
				return nil
			}
			return ErrNotHeld
		}
	}
	return fmt.Errorf("%w (%s; the Locker is closing, and too few replicas acknowledged it again within the release timeout: if a failover brings the lock back, its TTL ends it)", short, verdict)
}

// ackedSend sends a script under WithReplicaAck: the result's short says
// if too few replicas acknowledged it.
type ackedSend func(ctx context.Context) (scriptResult, error)

// untilAcknowledged sends a release again, paced, until it runs and
// enough replicas acknowledge it, or ctx ends, and reports which, with
// the acknowledged run's result. WAIT's timeout paces the resends too
// while the replicas are away.
func (l *Locker) untilAcknowledged(ctx context.Context, send ackedSend) (scriptResult, bool) {
	pause := time.NewTimer(0)
	defer pause.Stop()
	for wait := resendPause; ; wait = min(2*wait, maxResendPause) {
		pause.Reset(wait)
		select {
		case <-ctx.Done():
			return scriptResult{}, false
		case <-pause.C:
		}
		if r, err := send(ctx); err == nil && r.short == nil {
			return r, true
		}
	}
}

// resendPause is the pause before the first resend of an unacknowledged
// release, doubling to maxResendPause.
const (
	resendPause    = 10 * time.Millisecond
	maxResendPause = 100 * time.Millisecond
)
