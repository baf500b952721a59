package lock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/replydeadline"
	"github.com/batonlock/baton/resp"
)

// release deletes the lock (or hands it on, in fair mode) if c's owner
// holds it, writing w first if given. It takes at most the release
// timeout, whatever the context: a context that never ends must not make a
// caller wait forever on a server that stopped answering, or on a
// half-open connection. The bound is a reply deadline rather than a
// context deadline, so that the release costs no timer (see conn's package
// doc): a server silent at the bound costs the connection, as the read
// timeout would. A caller whose context ends first returns at once, with
// an error that says the outcome is unknown, and the release goes on, to
// the same bound, in a goroutine the Locker owns.
func (c *claim) release(ctx context.Context, w *Write) error {
	by := time.Now().Add(c.l.opts.ReleaseTimeout)
	if ctx.Err() == nil {
		err := c.releaseNow(boundedBy(ctx, by), by, w, c.l.opts.ReleaseStyle)
		if err == nil || ctx.Err() == nil || decided(err) {
			return err
		}
		// ctx ended before the server decided: whatever ended the
		// attempt (ctx itself, or a redial that ctx's deadline cut short
		// with a timeout of its own), the release goes on.
	}
	// Every release script compares the owner first, so a release that
	// did run before the caller left makes this one a no-op. Close waits
	// for it, rather than cut it short: the lease has ended, and Close
	// releases only the leases still held. Once Close has drained the
	// calls in progress, spawn refuses, and nothing more is sent: only
	// Close's own releases come here then, and a Close releasing many
	// leases on a stalled server, whose one context the first of them
	// used up, must not wait a release timeout for each of the others.
	bg := conn.WithReplyDeadline(context.WithoutCancel(ctx), by)
	after := "the release goes on in the background"
	if !c.l.spawn(func() { c.backgroundFailed(c.releaseNow(bg, by, w, c.l.opts.ReleaseStyle)) }) {
		after = "the Locker is closing: the lock's TTL ends it"
	}
	return c.errorf("unlock", &conn.UncertainError{Cause: fmt.Errorf("%w (%s)", ctx.Err(), after)})
}

// boundedBy is ctx bounded by by, when a release gives up: by a reply
// deadline, which costs no timer, unless ctx ends first. Then ctx must be
// what ends the call: a reply deadline at the same moment could break
// the connection before the context's timer fires.
func boundedBy(ctx context.Context, by time.Time) context.Context {
	if end, ok := ctx.Deadline(); ok && !by.Before(end) {
		return ctx
	}
	return conn.WithReplyDeadline(ctx, by)
}

// decided reports whether err is the server's verdict on a release, which
// sending it again would only repeat: the lock was not the owner's, the
// state to write over was missing, or the server refused the script. A
// cluster's refusal for now (a failover or a reshard under way, see
// cluster.RefusedForNow) is no verdict: the release may run later.
func decided(err error) bool {
	var uncertain *conn.UncertainError
	if errors.As(err, &uncertain) || cluster.RefusedForNow(err) {
		return false
	}
	return errors.Is(err, ErrNotHeld) || errors.Is(err, ErrStateMissing) || isErrorReply(err)
}

// releaseInBackground releases for an owner who is no longer waiting; it
// is best effort, with the lock's TTL as the backstop. It always compares
// the owner, whatever the release style: the owner may never have held
// the lock, which another may hold now.
func (c *claim) releaseInBackground() {
	c.l.inBackground(func(ctx context.Context) { c.backgroundFailed(c.releaseNow(ctx, time.Time{}, nil, releasePingEval)) })
}

// inBackground runs fn, bounded by the release timeout, in a goroutine the
// Locker owns, or at once if the Locker is closing.
func (l *Locker) inBackground(fn func(ctx context.Context)) {
	run := func() {
		ctx, cancel := context.WithTimeout(l.bgCtx, l.opts.ReleaseTimeout)
		defer cancel()
		fn(ctx)
	}
	if !l.spawn(run) {
		run()
	}
}

// releaseNow runs the release, or the write-back and release, retrying on
// a new connection when the connection broke under it, until giveUp if it
// is not zero: every release script compares the owner first, so running
// it twice is harmless.
func (c *claim) releaseNow(ctx context.Context, giveUp time.Time, w *Write, style releaseStyle) error {
	v := retried{giveUp: giveUp}
	var err error
	for v.result, err = c.sendRelease(ctx, w, style); c.l.retrying(ctx, &v, err); {
		v.result, err = c.sendRelease(ctx, w, style)
	}
	err = stillUncertain(ctx, v, err)
	short := v.result.short
	if w != nil && err != nil && isErrorReply(err) {
		// Refused: at its only attempt, which then wrote nothing, or when
		// sent again after an uncertain first attempt, which may have
		// (and the error stays uncertain). Either way the lock may still
		// be this owner's.
		return c.refusedWriteBack(ctx, err, style)
	}
	if err != nil {
		return c.errorf("unlock", err)
	}
	var done bool
	if w != nil {
		n, err := integerReply(v.result.reply, -2, 0)
		if err != nil {
			return c.errorf("unlock", err)
		}
		done = n == 0
		if n == -2 {
			// The state's absence is no verdict on the lock, which
			// this owner may hold still: not sent again.
			return c.errorf("unlock", ErrStateMissing)
		}
	} else {
		outcome, skipped, err := plainReleaseReply(v.result.reply)
		if err != nil {
			return c.errorf("unlock", err)
		}
		done = outcome != releaseNotHeld
		if outcome == releaseHandedOn {
			c.l.contention.handedOn(c.names.lock)
		}
		c.skipped(int(skipped))
	}
	switch {
	case short != nil:
		// Released on the primary, which a failover may or may not keep,
		// or not held there, which a primary failed over that still
		// answers would say: either way not settled until a verdict is
		// acknowledged.
		switch err := c.unacknowledgedRelease(ctx, short, done); {
		case err == nil:
			return nil
		case errors.Is(err, ErrNotHeld):
			return c.errorf("unlock", err)
		default:
			return c.errorf("unlock", &conn.UncertainError{Cause: err})
		}
	case done:
		return nil
	case v.firstUncertain != nil:
		// The first attempt may have run, and then the retry would find
		// the lock gone because of it.
		return c.errorf("unlock", fmt.Errorf("the lock was gone when the release was retried: %w", v.firstUncertain))
	}
	return c.errorf("unlock", ErrNotHeld)
}

// isErrorReply reports whether err is the server's error reply to the
// command. An error reply to a dial's handshake (a refused password, a
// server at its maxclients, LOADING) is none: nothing of the caller's was
// sent, and a release that meets one is sent again, within the release
// timeout, rather than taken for refused. Apart from releaseNow, so that
// a release without an error allocates no target for errors.As.
func isErrorReply(err error) bool {
	var reply *resp.Error
	if !errors.As(err, &reply) {
		return false
	}
	var dial *conn.DialError
	return !errors.As(err, &dial)
}

// refusedWriteBack releases the lock after the server refused a
// write-back and release with an error reply (out of memory, say): the
// commit scripts write the state before anything else, so a script that
// failed wrote nothing and left the lock as it was, held by this owner.
// Left so, the lock would stay held for its TTL by a lease that has
// ended. The error says that nothing was written, unless refused is
// uncertain: the refusal came when the write-back was sent again, after
// a first attempt whose outcome is unknown, which may have written (and
// released, in which case the release here finds the lock not held).
func (c *claim) refusedWriteBack(ctx context.Context, refused error, style releaseStyle) error {
	what := "write-back refused, nothing written"
	if errors.As(refused, new(*conn.UncertainError)) {
		what = "write-back refused when sent again, after a first attempt that may have written"
	}
	err := c.releaseNow(ctx, time.Time{}, nil, style)
	switch {
	case err == nil:
		return c.errorf("unlock", fmt.Errorf("%s, lock released: %w", what, refused))
	case errors.Is(err, ErrNotHeld):
		return c.errorf("unlock", fmt.Errorf("%s; the lock was not held by then: %w", what, refused))
	}
	return c.errorf("unlock", fmt.Errorf("%s: %w; then releasing: %w", what, refused, err))
}

// sendRelease sends the release once, in the style asked for, or the
// write-back and release if w is set. It waits for the replicas
// WithReplicaAck asks for, and the result's short says if too few
// acknowledged it.
func (c *claim) sendRelease(ctx context.Context, w *Write, style releaseStyle) (scriptResult, error) {
	if w == nil {
		return c.sendPlainRelease(ctx, style)
	}
	var sc scriptCall // see Commit
	if c.l.opts.Fair {
		sc = c.fairCommit(w)
	} else {
		sc = c.fastCommit(w)
	}
	sc.lead = pingFirst
	return c.l.runAcked(ctx, c.cmd, sc, nil)
}

// sendPlainRelease sends a release without a write, in the style asked
// for. The styles that reproduce the problem baton fixes, which serve
// benchmarks, wait for no replica.
func (c *claim) sendPlainRelease(ctx context.Context, style releaseStyle) (scriptResult, error) {
	switch {
	case c.l.opts.Fair:
		return c.l.runAcked(ctx, c.cmd, c.fairRelease(), nil)
	case style == releaseEval:
		return runScript(ctx, c.cmd, scriptCall{script: &plainReleaseScript, keys: []string{c.names.lock}, args: plainReleaseArgs{owner: c.owner}.argv()}, nil)
	case style == releaseGetDel:
		v, err := c.cmd.Do(ctx, "GETDEL", c.names.lock)
		if err != nil {
			return scriptResult{reply: v}, err
		}
		released := int64(0)
		if v.Str == c.owner {
			released = 1
		}
		return scriptResult{reply: resp.Value{Type: resp.Integer, Int: released}}, nil
	}
	return c.l.runAcked(ctx, c.cmd, c.fastRelease(), nil)
}

// retried is a reply after retryUncertain, with the uncertain error of the
// first attempt, if the reply is a retry's.
type retried struct {
	result         scriptResult
	firstUncertain error
	giveUp         time.Time // when retrying stops: the caller's bound, if any, moved up to the release timeout after the first failure
	failed         bool      // an attempt failed, and giveUp accounts for it
	retries        int       // how many times it was sent again
}

// retryUncertain runs op until it ends with something other than an
// uncertain outcome, as retrying decides.
func (l *Locker) retryUncertain(ctx context.Context, op func(context.Context) (scriptResult, error)) (scriptResult, error) {
	var v retried
	var err error
	for v.result, err = op(ctx); l.retrying(ctx, &v, err); {
		v.result, err = op(ctx)
	}
	return v.result, stillUncertain(ctx, v, err)
}

// stillUncertain is the error of a command that ended with err after
// retries: uncertain if any attempt was, even when the last one failed
// plainly (a retry that could not dial says nothing of the attempt before
// it), and uncertain if ctx cut it short, since it may have been sent. An
// uncertain outcome left unretried because ctx had ended wraps ctx's
// error, so that the caller knows ctx, not the server, ended it (a
// release then goes on in the background).
func stillUncertain(ctx context.Context, v retried, err error) error {
	if err == nil {
		return nil // before uncertain, whose address escapes: no allocation
	}
	var uncertain *conn.UncertainError
	switch {
	case errors.As(err, &uncertain):
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			return &conn.UncertainError{Cause: fmt.Errorf("%w; not sent again, as the context ended: %w", err, ctx.Err())}
		}
		return err
	case v.firstUncertain != nil:
		return &conn.UncertainError{Cause: fmt.Errorf("%w; then, sent again: %w", v.firstUncertain, err)}
	case ctx.Err() != nil:
		return &conn.UncertainError{Cause: err}
	}
	return err
}

// retrying reports whether to send again a release that ended with err:
// unless the server gave its verdict (an error reply, other than a
// cluster's refusal for now), while ctx lasts, and within the release
// timeout of the first failure (or v's own giveUp, if earlier). So a
// release whose connection broke with it in flight (an uncertain outcome,
// which v records), or that could not reach its node (a primary that
// died, whose replica is not serving yet), is sent again: every release
// compares the owner first. Before each retry it pauses (see retryPause),
// so that a server that takes every connection and breaks it at once (a
// proxy with nothing behind it) is not sent the release thousands of
// times a second; the client's redial backoff paces its dials besides.
func (l *Locker) retrying(ctx context.Context, v *retried, err error) bool {
	if err == nil || ctx.Err() != nil || (isErrorReply(err) && !cluster.RefusedForNow(err)) {
		return false
	}
	var uncertain *conn.UncertainError
	if v.firstUncertain == nil && errors.As(err, &uncertain) {
		v.firstUncertain = err
	}
	if !v.failed {
		v.failed = true
		if limit := time.Now().Add(l.opts.ReleaseTimeout); v.giveUp.IsZero() || limit.Before(v.giveUp) {
			v.giveUp = limit
		}
		// A reply deadline on ctx (a release's own bound) fails every
		// attempt after it unsent: no use retrying past it.
		if by := replydeadline.Of(ctx); !by.IsZero() && by.Before(v.giveUp) {
			v.giveUp = by
		}
	}
	pause := retryPause(v.retries)
	if !time.Now().Add(pause).Before(v.giveUp) {
		return false
	}
	v.retries++
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// The pauses before a release is sent again: from the first to the
// longest, doubling.
const (
	firstRetryPause = 8 * time.Millisecond
	maxRetryPause   = 512 * time.Millisecond
)

// retryPause is the pause before the retry that follows n earlier ones:
// firstRetryPause doubling up to maxRetryPause, with up to half of it
// taken off at random so that the releases of many processes that lost
// the same server do not arrive in step.
func retryPause(n int) time.Duration {
	d := min(firstRetryPause<<min(n, 8), maxRetryPause)
	return d - rand.N(d/2+1)
}

// What a plain release script (the release of fast.lua and fair.lua)
// did, the remainder of its reply by 4; 1 is a lock deleted.
const (
	releaseNotHeld  = 0 // the lock was not the owner's
	releaseHandedOn = 2 // to the waiter that asked, or the queue's head
)

// plainReleaseReply reads a plain release script's reply: what it did,
// and how many waiters it skipped on the way (the quotient by 4), whose
// processes were gone.
func plainReleaseReply(v resp.Value) (outcome, skipped int64, err error) {
	n, err := integerReply(v, 0, math.MaxInt32)
	return n % 4, n / 4, err
}
