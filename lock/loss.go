package lock

import (
	"context"
	"slices"
	"time"

	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/subscriber"
)

// How a lease learns at once that the server lost its lock: its first
// Done (or Context, or Err) has the Subscriber of the lock's server hold
// the lock's key with the lease's owner token (subscriber.Hold). The
// server then invalidates the key to that connection at every change
// (client-side caching), and the Subscriber reads it again: a key gone or
// another owner's ends the lease. See docs/PROTOCOL.md, "A lost lock".

// watchLossLocked starts the watch, for the lease's first Done. Where the
// Subscriber of the lock's server is not made yet (a Redis Cluster node
// nobody waited on), it is made in the background, since Done must not
// wait for a dial. The caller holds mu.
func (ls *Lease) watchLossLocked() {
	if sub, ok := ls.c.l.nodes.subscriberMade(ls.c.names.lock); ok {
		ls.holdOnLocked(sub)
		return
	}
	ls.c.l.spawn(func() { ls.follow(observe.Removed, false) })
}

// holdOnLocked has sub watch the lease's lock, in place of the Subscriber
// that watched it, if another. A Subscriber that is closing refuses; Done
// then closes at the deadline, as it would without the watch. The caller
// holds mu.
func (ls *Lease) holdOnLocked(sub *subscriber.Subscriber) {
	if ls.holding != nil && ls.heldOn == sub {
		return
	}
	if ls.holding != nil {
		ls.holding.Close()
		ls.holding, ls.heldOn = nil, nil
	}
	if h, err := sub.Hold(ls.c.names.lock, ls.c.owner, ls.lostOnServer); err == nil {
		ls.holding, ls.heldOn = h, sub
	}
}

// followPause is how long follow waits between its looks for the node
// that serves the lease's lock, while a Redis Cluster changes.
const followPause = 100 * time.Millisecond

// follow finds the node that serves the lease's lock now, through the
// command client, which follows MOVED and ASK and refreshes its view of
// the cluster after failures, and watches the lock there: for a first
// watch whose node had no Subscriber yet, after the watching node said
// it no longer serves the slot (Moved, paced: a slot in migration says
// so until it has moved), or after its Subscriber's connection broke (a
// failover may have promoted another node). A lock found gone ends the
// lease, for missing. It looks again, paced, while the cluster cannot
// answer, until the lease ends or Close begins.
func (ls *Lease) follow(missing observe.Reason, paced bool) {
	l, name := ls.c.l, ls.c.names.lock
	for attempt := 0; ; attempt++ {
		if (paced || attempt > 0) && !ls.pauseWhileHeld(followPause) {
			return
		}
		ctx, cancel := context.WithTimeout(l.closing, time.Second)
		v, err := ls.c.cmd.Do(ctx, "GET", name)
		var sub *subscriber.Subscriber
		if err == nil {
			sub, err = l.nodes.subscriber(ctx, name)
		}
		cancel()
		if l.closing.Err() != nil {
			return
		}
		if err != nil {
			continue // the cluster is changing, or the node is away
		}
		ls.mu.Lock()
		if v.IsNull() || v.Str != ls.c.owner {
			ls.endLocked(lost, missing)
		} else if ls.state == held {
			ls.holdOnLocked(sub)
		}
		ls.mu.Unlock()
		return
	}
}

// pauseWhileHeld waits d, and reports whether the lease is still held
// and Close has not begun.
func (ls *Lease) pauseWhileHeld(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ls.c.l.closing.Done():
		return false
	}
	return ls.isHeld()
}

// lostOnServer hears what the Subscriber that watches the lease's lock
// tells: a loss ends the lease; on a Redis Cluster, a slot that moved or
// a connection that broke has the lease look for the lock's node. It
// runs on the Subscriber's goroutine, and must not block.
func (ls *Lease) lostOnServer(loss subscriber.Loss) {
	switch loss {
	case subscriber.Moved:
		ls.mu.Lock()
		ls.holding, ls.heldOn = nil, nil // the Subscriber ended it
		ls.mu.Unlock()
		ls.c.l.spawn(func() { ls.follow(observe.Removed, true) })
		return
	case subscriber.Unheard:
		if _, cluster := ls.c.l.nodes.(*clustered); cluster && ls.isHeld() {
			ls.c.l.spawn(func() { ls.follow(observe.Vanished, false) })
		}
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.endLocked(lost, lossReasons[loss])
}

// lossReasons are the reasons observers are told for each loss the
// Subscriber reports.
var lossReasons = [...]observe.Reason{
	subscriber.Removed:     observe.Removed,
	subscriber.Overwritten: observe.Overwritten,
	subscriber.Flushed:     observe.Flushed,
	subscriber.Vanished:    observe.Vanished,
}

// leaseContext is a context that Lease.Context made, with its cancel.
type leaseContext struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Context returns a context derived from parent that is cancelled when
// the lease ends, with the lease's cause (see Err) as its
// context.Cause: work under the lock that takes it stops by itself once
// the lock is lost, released or run out. It asks for Done, so that the
// lease is watched from then on. A nil parent is taken as
// context.Background(). The context ends with parent too, with parent's
// cause; it holds nothing once either has ended.
func (ls *Lease) Context(parent context.Context) context.Context {
	if parent == nil {
		parent = context.Background()
	}
	done := ls.Done()
	ctx, cancel := context.WithCancelCause(parent)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	select {
	case <-done:
		cancel(ls.cause)
		return ctx
	default:
	}
	// Contexts whose parent ended are dropped here, so that a lease
	// asked for many over its life keeps only the live ones.
	ls.contexts = slices.DeleteFunc(ls.contexts, func(c leaseContext) bool { return c.ctx.Err() != nil })
	ls.contexts = append(ls.contexts, leaseContext{ctx, cancel})
	return ctx
}

// Err returns nil while the lease is held, and once Done is closed, why
// the lease ended: an error matching ErrReleased, ErrExpired, ErrLost (and ErrRemoved, ErrOverwritten, ErrFlushed or ErrVanished,
// where the server told how), or ErrClosed. Like Done, whose state it
// reports, it has the lease watched from its first call.
func (ls *Lease) Err() error {
	done := ls.Done()
	select {
	case <-done:
	default:
		return nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.cause
}

// endWatchersLocked tells the lease's contexts that it ended, and stops
// the watch of its lock. The caller holds mu, and has set the cause.
func (ls *Lease) endWatchersLocked() {
	for _, c := range ls.contexts {
		c.cancel(ls.cause)
	}
	ls.contexts = nil
	if ls.holding != nil {
		ls.holding.Close()
		ls.holding, ls.heldOn = nil, nil
	}
}
