package lock

import (
	"context"
	"slices"

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
	ls.c.l.spawn(func() { ls.holdOnNode(false) })
}

// holdOnLocked has sub watch the lease's lock. A Subscriber that is
// closing refuses; Done then closes at the deadline, as it would without
// the watch. The caller holds mu.
func (ls *Lease) holdOnLocked(sub *subscriber.Subscriber) {
	if h, err := sub.Hold(ls.c.names.lock, ls.c.owner, ls.lostOnServer); err == nil {
		ls.holding = h
	}
}

// holdOnNode finds the Subscriber of the node that serves the lease's
// lock, dialing one if need be, and watches the lock there. After a
// Moved loss it first sends the lock's node a command, whose MOVED reply
// teaches the cluster client where the slot went. It gives up, leaving
// Done to the deadline, if Close begins first or the node cannot be
// reached.
func (ls *Lease) holdOnNode(moved bool) {
	ctx := ls.c.l.closing
	if moved {
		_, _ = ls.c.cmd.Do(ctx, "EXISTS", ls.c.names.lock)
	}
	sub, err := ls.c.l.nodes.subscriber(ctx, ls.c.names.lock)
	if err != nil {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.state == held {
		ls.holdOnLocked(sub)
	}
}

// lostOnServer ends the lease whose lock the server lost. It runs on the
// Subscriber's goroutine, and must not block.
func (ls *Lease) lostOnServer(loss subscriber.Loss) {
	if loss == subscriber.Moved {
		ls.c.l.spawn(func() { ls.holdOnNode(true) })
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
		ls.holding = nil
	}
}
