package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// Lock acquires the lock for key, waiting as long as ctx allows.
//
// In fast mode, on a key with no other waiter in this process and no
// hand-on by this Locker in the last second, it tries at once. Otherwise,
// or if that fails, it registers for hand-offs, tries again asking the
// holder to let go (its request stands from then on, and a release hands
// the lock to the first request), and waits for a hand-off, the holder's
// TTL to run out, or a hand-off window, whichever comes first, before
// each further try. After a window it also watches the key's release
// events; when a release is heard, the next try is sent straight from
// the subscriber's reader, before this goroutine is even scheduled: the
// head start the release order gives a waiter is not spent waiting for a
// CPU. In fair mode it queues; see the package doc.
func (l *Locker) Lock(ctx context.Context, key string) (*Lease, error) {
	ls, _, err := l.lock(ctx, key, nil)
	return ls, err
}

func (l *Locker) lock(ctx context.Context, key string, cmds [][]string) (*Lease, []resp.Value, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, nil, err
	}
	defer l.exit()
	c := l.newClaim(key)
	var ls *Lease
	var replies []resp.Value
	var err error
	if l.opts.Fair {
		ls, replies, err = c.lockFair(ctx, cmds)
	} else {
		ls, replies, err = c.lockFast(ctx, cmds)
	}
	if err != nil || len(cmds) == 0 || len(replies) == len(cmds) {
		return ls, replies, err // the commands rode with the acquire
	}
	replies, err = c.cmd.DoMulti(ctx, cmds...)
	if err != nil {
		// With ctx, so that the caller waits no longer than it asked:
		// a release that ctx cuts short goes on in the background.
		_ = ls.unlock(ctx, nil)
		return nil, nil, c.errorf("after acquiring", err)
	}
	return ls, replies, nil
}

// TryLock makes one attempt to acquire the lock for key and returns
// ErrNotAcquired if another owner holds it. In fair mode a queued waiter
// counts as a holder: TryLock does not jump the queue.
func (l *Locker) TryLock(ctx context.Context, key string) (*Lease, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, err
	}
	defer l.exit()
	c := l.newClaim(key)
	var ls *Lease
	var err error
	if l.opts.Fair {
		ls, _, _, err = c.fairAttempt(ctx, nil, nil, 0)
	} else {
		ls, _, _, err = c.tryFast(ctx, false, nil)
	}
	if ls == nil && err == nil {
		return nil, c.errorf("try", fmt.Errorf("%w: held by another owner", ErrNotAcquired))
	}
	return ls, err
}

// startAcquire checks a Lock or TryLock call and counts it in (see enter).
func (l *Locker) startAcquire(ctx context.Context, key string) error {
	if err := checkCall(ctx, l.opts.Prefix, key); err != nil {
		return err
	}
	if !l.enter() {
		return ErrClosed
	}
	return nil
}

// lockFast is Lock in fast mode. A key this process waits for, or waited
// for lately, or that this Locker's last release of it handed on, is
// contended: there the first attempt already asks, since an attempt that
// does not ask would only fail first.
func (c *claim) lockFast(ctx context.Context, cmds [][]string) (*Lease, []resp.Value, error) {
	if !c.l.nodes.contended(c.names.lock) && !c.l.contention.lately(c.names.lock) {
		ls, _, replies, err := c.tryFast(ctx, false, cmds)
		if ls != nil || err != nil {
			return ls, replies, err
		}
	}
	return c.waitFast(ctx, cmds)
}

// waitFast is Lock's wait in fast mode: register for hand-offs, try again
// asking the holder to let go, and wait between tries.
//
// The request does the work: every release of a lock with a request
// standing hands it on, so a waiter whose request stands needs no release
// event. It first waits without watching the key's releases, so that the
// keyspace events of a busy lock (each SET of it with a TTL is one) do
// not reach every waiting process. It looks again within a hand-off
// window, and then watches the releases: a lock handed to a waiter that
// never confirms, or one released by a client that does not hand on, is
// caught by its keyspace event from then on.
func (c *claim) waitFast(ctx context.Context, cmds [][]string) (*Lease, []resp.Value, error) {
	l := c.l
	// The wait ends when ctx does or Close begins. The attempts keep the
	// caller's ctx: one that cannot end costs conn no watch of it while
	// the attempt reads its reply (see conn), and Close breaks a call
	// stuck on the server.
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.closing, cancel)()

	ln, err := c.listenFast(waitCtx, false)
	if err != nil {
		return nil, nil, err
	}
	defer func() { ln.close() }()
	var timer *time.Timer
	var sent *sentAttempt
	var withCmds [][]string // commands ride along with the confirmation of a hand-off
	for {
		var ls *Lease
		var replies []resp.Value
		var remaining time.Duration
		if sent != nil && sent.pending != nil {
			ls, remaining, err = c.awaitFast(ctx, *sent)
		} else {
			ls, remaining, replies, err = c.tryFast(ctx, true, withCmds)
		}
		if err != nil {
			c.withdrawInBackground()
			return nil, nil, err
		}
		if ls != nil {
			return ls, replies, nil
		}
		if l.nodes.stale(ln.sub, c.names.lock) {
			// The key's slot moved: its releases are heard elsewhere
			// now. Listen there, and try again, since a release may have
			// gone unheard meanwhile.
			watching := ln.release != nil
			ln.close()
			if ln, err = c.listenFast(waitCtx, watching); err != nil {
				c.withdrawInBackground()
				return nil, nil, err
			}
			sent, withCmds = nil, nil
			continue
		}
		// A release we did not hear (a notification lost while the
		// subscriber reconnects, say) is caught when the TTL runs out,
		// or sooner where the backend says (a slot that moved).
		if r := l.nodes.recheck(); r > 0 && remaining > r {
			remaining = r
		}
		if window := min(l.opts.TTL, handoffWindow); ln.release == nil && remaining > window {
			remaining = window
		}
		if timer == nil {
			timer = time.NewTimer(remaining)
			defer timer.Stop()
		} else {
			timer.Reset(remaining)
		}
		sent, withCmds = nil, nil
		ln.arm()
		stopped, timedOut := false, false
		select {
		case s := <-ln.earlySent():
			sent = &s
			// The wake-up that came with the hook is spent: left
			// pending, it would be handed to the next waiter for nothing.
			select {
			case <-ln.releaseWake():
			default:
			}
		case <-ln.releaseWake():
		case <-ln.handoff.Wake():
			withCmds = cmds
		case <-timer.C:
			timedOut = true
		case <-waitCtx.Done():
			stopped = true
		}
		if sent == nil && !ln.disarm() {
			// The release hook fired meanwhile: its attempt is on its way.
			s := <-ln.early.sent
			sent = &s
		}
		if stopped {
			c.withdrawInBackground()
			return nil, nil, c.errorf("wait", c.stopReason(waitCtx.Err()))
		}
		if timedOut && ln.release == nil {
			// A hand-off window went by with none: watch the releases
			// from now on, then look again, since one may have gone
			// unheard meanwhile.
			if err := c.watchReleases(waitCtx, ln); err != nil {
				c.withdrawInBackground()
				return nil, nil, c.errorf("wait", c.stopReason(err))
			}
		}
	}
}

// fastListener is a fast-mode waiter's registrations, on the Subscriber
// that hears the key's releases: for hand-offs, and, once it watches them,
// for the releases, whose hook sends the next attempt early.
type fastListener struct {
	sub     *subscriber.Subscriber
	node    *conn.Client // where the early attempts go
	handoff *subscriber.Waiter
	release *subscriber.Waiter // nil until the waiter watches the releases
	early   *earlyAttempt      // nil until the waiter watches the releases
}

// listenFast registers the claim's waiter for hand-offs, and for the
// releases if watch is set, and sets where a hand-off reaches it
// (c.asker).
func (c *claim) listenFast(ctx context.Context, watch bool) (*fastListener, error) {
	node, err := c.l.nodes.node(ctx, c.names.lock)
	if err != nil {
		return nil, c.errorf("wait", c.stopReason(err))
	}
	var ln *fastListener
	err = c.listen(ctx, func(sub *subscriber.Subscriber) error {
		handoff, err := c.directedWaiter(ctx, sub)
		if err != nil {
			return err
		}
		c.asker = formatAsker(handoff.Address())
		ln = &fastListener{sub: sub, node: node, handoff: handoff}
		if !watch {
			return nil
		}
		if err := c.watchReleases(ctx, ln); err != nil {
			handoff.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, c.errorf("wait", c.stopReason(err))
	}
	return ln, nil
}

// watchReleases adds the key's releases to what ln hears, with the hook
// that sends the next attempt early.
func (c *claim) watchReleases(ctx context.Context, ln *fastListener) error {
	l := c.l
	// Armed only after the claim's first ask: it asks again.
	early := &earlyAttempt{node: ln.node, cmds: [][]string{fastAcquireScript.command(false, c.names.fastKeys(), c.fastArgs(askAgain))}, sent: make(chan sentAttempt, 1)}
	if l.waitCmd != nil {
		early.cmds = append(early.cmds, l.waitCmd)
	}
	release, err := ln.sub.Watch(ctx, subscriber.Topic{Key: c.names.lock, OnRelease: early.send})
	if err != nil {
		return err
	}
	ln.release, ln.early = release, early
	return nil
}

func (ln *fastListener) close() {
	if ln == nil {
		return // a listen that failed
	}
	if ln.release != nil {
		ln.release.Close()
	}
	ln.handoff.Close()
}

// releaseWake is the release waiter's wake-ups, or nil (never ready) while
// the waiter does not watch the releases.
func (ln *fastListener) releaseWake() <-chan struct{} {
	if ln.release == nil {
		return nil
	}
	return ln.release.Wake()
}

// earlySent is where the release hook reports an attempt, or nil.
func (ln *fastListener) earlySent() <-chan sentAttempt {
	if ln.early == nil {
		return nil
	}
	return ln.early.sent
}

// arm lets the release hook send the next attempt, while the waiter sleeps.
func (ln *fastListener) arm() {
	if ln.early != nil {
		ln.early.armed.Store(true)
	}
}

// disarm takes the next attempt back from the release hook; false if the
// hook has sent it already.
func (ln *fastListener) disarm() bool {
	return ln.early == nil || ln.early.armed.CompareAndSwap(true, false)
}

// formatAsker is where a hand-off reaches a waiter (see
// subscriber.Waiter.Address), as a request names it.
func formatAsker(channel string, waiterID uint64) string {
	return strconv.FormatUint(waiterID, 10) + " " + channel
}

// stopReason is ErrClosed when a wait ended because the Locker is closing,
// and err otherwise.
func (c *claim) stopReason(err error) error {
	if c.l.closing.Err() != nil {
		return ErrClosed
	}
	return err
}

// fastArgs are the acquire script's ARGV for this claim.
func (c *claim) fastArgs(ask askMode) []string {
	l := c.l
	return fastAcquireArgs{owner: c.owner, ttl: l.ttlArg, ask: ask, asker: c.asker, retention: l.retentionArg, publish: l.publish}.argv()
}

// askArg is how an attempt asks, and notes that the claim has asked.
func (c *claim) askArg(ask bool) askMode {
	switch {
	case !ask:
		return askNot
	case c.asked:
		return askAgain
	}
	c.asked = true
	return askFirst
}

// tryFast runs the acquire script once, with cmds in the same write. It
// returns the lease and the commands' replies, or how long to wait before
// trying again: the current holder's remaining TTL.
func (c *claim) tryFast(ctx context.Context, ask bool, cmds [][]string) (*Lease, time.Duration, []resp.Value, error) {
	start := time.Now()
	v, rest, short, err := c.l.runAcked(ctx, c.cmd, fastAcquireScript, false, c.names.fastKeys(), c.fastArgs(c.askArg(ask)), cmds)
	ls, remaining, err := c.acquiredFast(start, v, err)
	if ls == nil {
		rest = nil
	}
	if ls != nil && short != nil {
		return nil, 0, nil, c.unacknowledged(ctx, ls, short)
	}
	return ls, remaining, rest, err
}

// awaitFast collects the reply of an attempt the release hook sent.
func (c *claim) awaitFast(ctx context.Context, s sentAttempt) (*Lease, time.Duration, error) {
	replies, err := s.pending.Wait(ctx)
	var v resp.Value
	var short error
	if err == nil {
		v = replies[0]
		err = v.Err()
		if len(replies) > 1 {
			short = c.l.acknowledged(replies[1])
		}
		if notRun(err) {
			// The cluster client follows a redirect and waits out a
			// TRYAGAIN; the script is loaded where it was not.
			ls, remaining, _, err := c.tryFast(ctx, true, nil)
			return ls, remaining, err
		}
	}
	ls, remaining, err := c.acquiredFast(s.at, v, err)
	if ls != nil && short != nil {
		return nil, 0, c.unacknowledged(ctx, ls, short)
	}
	return ls, remaining, err
}

// unacknowledged undoes an acquire whose WAIT counted too few replicas
// (WithReplicaAck): the lock is the lease's on the primary, but a
// failover could lose it. It returns the acquire's error, which matches
// ErrNotAcquired.
func (c *claim) unacknowledged(ctx context.Context, ls *Lease, short error) error {
	_ = ls.unlock(ctx, nil)
	return c.errorf("acquire", fmt.Errorf("%w: %w", ErrNotAcquired, short))
}

// acquiredFast reads the acquire script's reply to an attempt sent at
// start.
func (c *claim) acquiredFast(start time.Time, v resp.Value, err error) (*Lease, time.Duration, error) {
	if err != nil {
		if mayHaveRun(err) {
			// The script may have taken the lock for an owner who has
			// gone: undo it, after it on the same connection.
			c.withdrawInBackground()
		}
		return nil, 0, c.errorf("acquire", err)
	}
	if v.Type != resp.Integer {
		c.withdrawInBackground()
		return nil, 0, c.errorf("acquire", errBadReply)
	}
	switch {
	case v.Int > 0:
		ls := c.newLease(uint64(v.Int), start, 0)
		if ls == nil {
			c.releaseInBackground()
			return nil, 0, ErrClosed
		}
		return ls, 0, nil
	case v.Int == 0: // held with no TTL: look again a TTL from now
		return nil, c.l.opts.TTL, nil
	default:
		return nil, time.Duration(-1-v.Int)*time.Millisecond + time.Millisecond, nil
	}
}

// notRun reports whether an error reply to the early attempt, which goes
// straight to a connection, says the script did not run and can be sent
// again: it is not loaded there, or, on a cluster, its slot has moved
// (MOVED), is moving (ASK), or the cluster cannot serve it now (see
// cluster.RefusedForNow), which the cluster client waits out.
func notRun(err error) bool {
	return errors.Is(err, resp.NoScript) || errors.Is(err, resp.Moved) || errors.Is(err, resp.Ask) || cluster.RefusedForNow(err)
}

// mayHaveRun reports whether a failed call may still have run on the
// server: it was abandoned by its context after being queued, or its
// connection broke with it in flight.
func mayHaveRun(err error) bool {
	var uncertain *conn.UncertainError
	return errors.As(err, &uncertain) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
