package lock

import (
	"context"
	"strconv"
	"time"

	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// lockFair queues for the lock and waits to be handed it. A hand-off
// arrives as a directed message, which carries the lease (see
// handedOver); where it cannot, the attempt it prompts confirms the
// hand-off (with cmds in the same write) and gets the fencing token. The
// same attempt, repeated every third of the queue lease and after a
// reconnect, renews the place in the queue and catches a hand-off whose
// message was lost.
//
// Under shard channels, registering for hand-offs is a subscription, a
// round trip of its own, so a free lock with nobody queued is first tried
// for without one; queueing comes after, if needed. The try takes the lock
// only where a queued attempt would have taken it at once, so it changes
// nobody's order.
func (c *claim) lockFair(ctx context.Context, cmds [][]string) (attempt, error) {
	l := c.l
	if l.sharded {
		a, err := c.fairAttempt(ctx, nil, cmds, 0)
		if a.lease != nil || err != nil {
			return a, err
		}
		c.retried = true // an attempt that acquires now is not the first
	}
	fl, err := c.listenFair(ctx)
	if err != nil {
		return attempt{}, err
	}
	defer func() {
		if fl != nil { // nil after a listen that failed, which closed nothing
			fl.w.Close()
		}
	}()
	a, err := c.fairAttempt(ctx, fl, cmds, 0)
	queuedAfter := a.lastToken
	var timer *time.Timer
	for {
		if a.lease != nil || err != nil {
			return a, err
		}
		c.step(observe.Asked)
		if a.late {
			// Acquired, but too late to hold (see acquired), and out of
			// the queue: ask again at once.
			a, err = c.fairAttempt(ctx, fl, cmds, queuedAfter)
			continue
		}
		if l.nodes.stale(fl.sub, c.names.lock) {
			// The key's slot moved, and the attempt that found it out
			// queued with the channel of the old node, where hand-offs
			// are no longer published: a release now would pass this
			// waiter over. Listen on the new node and renew the place
			// with its channel at once, not at the next renewal.
			fl.w.Close()
			if fl, err = c.listenFair(ctx); err != nil {
				c.releaseInBackground()
				return attempt{}, err
			}
			a, err = c.fairAttempt(ctx, fl, cmds, queuedAfter)
			continue
		}
		if timer == nil {
			timer = time.NewTimer(l.opts.QueueLease / 3)
			defer timer.Stop()
		} else {
			timer.Reset(l.opts.QueueLease / 3)
		}
		var withCmds [][]string
		select {
		case <-fl.w.Wake():
			// A hand-off (or a reconnect, or the slot leaving the node,
			// after which one may have been missed): take the lease its
			// message carries, or confirm it, with the commands. The
			// attempt before ran before the hand-off (after it, it
			// would have found the lock the claim's own).
			if message, at := fl.inbox.take(); message != "" {
				c.tookMessage(at)
				if a, ok, err := c.handedOver(message, cmds, queuedAfter); ok {
					return a, err
				}
				c.step(observe.Confirming) // the next attempt
			}
			withCmds = cmds
		case <-timer.C:
		case <-ctx.Done():
			// Leave the queue, and pass on a hand-off that raced the
			// cancel.
			c.releaseInBackground()
			return attempt{}, c.errorf("wait", ctx.Err())
		case <-l.closing.Done():
			c.releaseInBackground()
			return attempt{}, c.errorf("wait", errLockerClosed)
		}
		a, err = c.fairAttempt(ctx, fl, withCmds, queuedAfter)
		if queuedAfter == 0 {
			queuedAfter = a.lastToken
		}
	}
}

// fairListener is a fair waiter's registration for hand-offs, on the
// Subscriber of the key's node.
type fairListener struct {
	sub   *subscriber.Subscriber
	w     *subscriber.Waiter
	inbox handOffInbox // the hand-off's message for the claim
}

// listenFair registers the claim's waiter for hand-offs. On success the
// waiter is never nil, so that it can always be closed.
func (c *claim) listenFair(ctx context.Context) (*fairListener, error) {
	var fl *fairListener
	err := c.listen(ctx, func(sub *subscriber.Subscriber) error {
		// The listener before, if any, is closed: its waiter's
		// messages no longer reach the inbox.
		c.listener.inbox.message.Store(nil)
		c.listener.inbox.owner = c.owner
		w, err := c.directedWaiter(ctx, sub, c.listener.inbox.heard)
		if err == nil {
			c.listener.sub, c.listener.w = sub, w
			fl = &c.listener
		}
		return err
	})
	if err != nil {
		return nil, c.errorf("wait", c.stopReason(err))
	}
	return fl, nil
}

// fairAttempt runs the fair acquire script once, with cmds in the same
// write: it takes the lock if it is free and nobody is queued, confirms a
// hand-off to the caller, and otherwise queues the caller, or renews its
// place, when fl (where hand-offs reach it) is given. When not acquired it
// says the last fencing token handed out; queuedAfter is recorded on a
// lease it grants.
func (c *claim) fairAttempt(ctx context.Context, fl *fairListener, cmds [][]string, queuedAfter uint64) (attempt, error) {
	l := c.l
	args := fairAcquireArgs{owner: c.owner, ttl: l.ttlArg, waiterID: "0", queueLease: l.queueLeaseArg,
		retention: l.retentionArg, queued: c.queued, publish: l.publish}
	if fl != nil {
		var waiterID uint64
		args.channel, waiterID = fl.w.Address()
		args.waiterID, args.join = strconv.FormatUint(waiterID, 10), true
	}
	c.queued = c.queued || fl != nil
	start := time.Now()
	if fl != nil && c.firstAsk.IsZero() {
		c.firstAsk = start
	}
	r, err := l.runAcked(ctx, c.cmd, scriptCall{script: &fairAcquireScript, keys: c.names.fairKeys(), args: args.argv()}, cmds)
	a, err := c.fairAcquired(start, r.reply, err, queuedAfter)
	return c.confirmed(ctx, a, r, err)
}

// fairAcquired reads the fair acquire script's reply, checking its shape:
// token > 0, or {0, PTTL, last token >= 0}.
func (c *claim) fairAcquired(start time.Time, v resp.Value, err error, queuedAfter uint64) (attempt, error) {
	if err != nil {
		// A claim that may have queued leaves the queue, whatever the
		// error: an entry that outlived its claim, in a process that
		// still listens, would be handed the lock, which would then
		// stay held for the releaser's TTL by nobody.
		if c.queued || acquireMayHaveWritten(err) {
			c.releaseInBackground()
		}
		return attempt{}, c.errorf("acquire", err)
	}
	e := v.Elems
	valid := v.Type == resp.Array && len(e) >= 2 && e[0].Type == resp.Integer && e[1].Type == resp.Integer
	switch {
	case v.Type == resp.Integer && v.Int > 0:
		return c.acquired(uint64(v.Int), start, queuedAfter)
	case valid && e[0].Int == 0 && len(e) == 3 && e[2].Type == resp.Integer && e[2].Int >= 0:
		return attempt{lastToken: uint64(e[2].Int)}, nil
	}
	// A reply no script of ours gives: whatever the server did, the
	// claim must not hold or wait on it.
	c.releaseInBackground()
	return attempt{}, c.errorf("acquire", errBadReply)
}

// fairRelease is the release script's call for the claim, behind a PING
// as every release is.
func (c *claim) fairRelease() scriptCall {
	return scriptCall{script: &fairReleaseScript, keys: c.names.fairKeys(), args: fairReleaseArgs{owner: c.owner, ttl: c.l.ttlArg, retention: c.l.retentionArg, publish: c.l.publish}.argv(), lead: pingFirst}
}

// fairCommit is the commit script's call for the claim's write-back w.
func (c *claim) fairCommit(w *Write) scriptCall {
	return scriptCall{script: &fairCommitScript, keys: append(c.names.fairKeys(), w.Key), args: c.commitArgs(w)}
}

// The fair mode's scripts (fair.lua). Its commit takes the fast mode's
// ARGV (commitArgs).
var (
	fairAcquireScript = fairScripts.named("acquire")
	fairReleaseScript = fairScripts.named("release")
	fairCommitScript  = fairScripts.named("commit")
)

// fairAcquireArgs are the ARGV of fair.lua's acquire.
type fairAcquireArgs struct {
	owner, ttl string
	// waiterID and channel say where a hand-off reaches the claim's waiter.
	waiterID, channel string
	queueLease        string
	join              bool   // queue, or renew the claim's place; else only try
	retention         string // the fencing counter's TTL
	queued            bool   // an earlier attempt of the claim may have queued it
	publish           string
}

func (a fairAcquireArgs) argv() []string {
	return []string{a.owner, a.ttl, a.waiterID, a.channel, a.queueLease, flag(a.join), a.retention, flag(a.queued), a.publish}
}

// fairReleaseArgs are the ARGV of fair.lua's release.
type fairReleaseArgs struct {
	owner     string
	ttl       string // a hand-off's
	retention string // the fencing counter's TTL, for a hand-off
	publish   string
}

func (a fairReleaseArgs) argv() []string {
	return []string{a.owner, a.ttl, a.retention, a.publish}
}
