package lock

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/resp"
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

// leaseWatch is one holding of a lease's lock on a Subscriber, and hears
// what the Subscriber tells of it: a lease watched anew, after a move,
// hears nothing more from its earlier holdings.
type leaseWatch struct {
	ls *Lease
	h  *subscriber.Holding // guarded by ls.mu; set once Hold returned, under the same hold of ls.mu
}

// holdOnLocked has sub watch the lease's lock, in place of the Subscriber
// that watched it, if another. A Subscriber that is closing refuses; Done
// then closes at the deadline, as it would without the watch. The caller
// holds mu.
func (ls *Lease) holdOnLocked(sub *subscriber.Subscriber) {
	if ls.holding != nil && ls.heldOn == sub {
		return
	}
	ls.unholdLocked()
	// The Subscriber may tell w before Hold returns, on its own
	// goroutine: w.told waits for mu, which this caller holds until h
	// is set.
	w := &leaseWatch{ls: ls}
	if h, err := sub.Hold(ls.c.names.lock, ls.c.owner, w.told); err == nil {
		w.h = h
		ls.holding, ls.heldOn = h, sub
	}
}

// followPause is how long follow waits between its looks for the node
// that serves the lease's lock, while a Redis Cluster changes, and
// before it watches again a lock that its Subscriber took for lost but
// the lock's server holds (a Subscriber still on a primary that Sentinel
// replaced, say).
const followPause = 100 * time.Millisecond

// follow reads the lease's lock through the command client, which
// reaches the server the lease's own commands reach (following MOVED and
// ASK, and the cluster or the sentinels after a failover), and watches
// it there: for a first watch whose node had no Subscriber yet; after
// the watching node said it no longer serves the slot (paced: a slot in
// migration says so until it has moved); after a connection broke on a
// cluster (a failover may have promoted another node); and to confirm a
// loss that the Subscriber read, before the lease ends for it. A lock
// found gone, or another owner's, ends the lease for missing. It looks
// again, paced, while the server cannot answer, until the lease ends or
// Close begins.
func (ls *Lease) follow(missing observe.Reason, paced bool) {
	l, name := ls.c.l, ls.c.names.lock
	for attempt := 0; ; attempt++ {
		if (paced || attempt > 0) && !ls.pauseWhileHeld(followPause) {
			return
		}
		ctx, cancel := context.WithTimeout(l.closing, time.Second)
		v, err := ls.c.cmd.Do(ctx, "GET", name)
		overwritten := errors.Is(err, resp.WrongType)
		var sub *subscriber.Subscriber
		if err == nil {
			sub, err = l.nodes.subscriber(ctx, name)
		}
		cancel()
		if l.closing.Err() != nil {
			return
		}
		if err != nil && !overwritten {
			continue // the cluster is changing, or the server is away
		}
		ls.mu.Lock()
		switch {
		case ls.state != held:
		case overwritten || (!v.IsNull() && v.Str != ls.c.owner):
			ls.lostLocked(observe.Overwritten)
		case v.IsNull():
			ls.lostLocked(missing)
		case sub == ls.heldOn && ls.holding == nil && !paced:
			// The Subscriber read the lock gone, and the lock's
			// server holds it: watch again once the Subscriber may
			// have caught up, never at its pace.
			ls.mu.Unlock()
			paced = true
			continue
		default:
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

// told hears what the Subscriber tells of the holding w: a loss has the
// lease confirm it through the command client before it ends (see
// follow); on a Redis Cluster, a slot that moved or a connection that
// broke has the lease look for the lock's node. A holding that no longer
// watches the lease is not heard. It runs on the Subscriber's goroutine,
// and must not block.
func (w *leaseWatch) told(loss subscriber.Loss) {
	ls := w.ls
	ls.mu.Lock()
	if ls.state != held || ls.holding != w.h {
		ls.mu.Unlock()
		return
	}
	if loss != subscriber.Unheard {
		ls.holding = nil // the Subscriber ended it; heldOn says where it was
	}
	ls.mu.Unlock()
	switch loss {
	case subscriber.Moved:
		ls.c.l.spawn(func() { ls.follow(observe.Removed, true) })
	case subscriber.Unheard:
		if _, cluster := ls.c.l.nodes.(*clustered); cluster {
			ls.c.l.spawn(func() { ls.follow(observe.Vanished, false) })
		}
	default:
		ls.c.l.spawn(func() { ls.follow(lossReasons[loss], false) })
	}
}

// lostLocked ends the lease for why, the lock found lost on the server;
// or, while a commit that may hand the lock on is on its way (handing),
// keeps why for the commit's reply to decide: a hand-off changes the
// lock too, and is no loss. The caller holds mu.
func (ls *Lease) lostLocked(why observe.Reason) {
	if ls.handing {
		if ls.heardLoss == 0 {
			ls.heardLoss = why
		}
		return
	}
	ls.endLocked(lost, why)
}

// lossReasons are the reasons observers are told for each loss the
// Subscriber reports.
var lossReasons = [...]observe.Reason{
	subscriber.Removed:     observe.Removed,
	subscriber.Overwritten: observe.Overwritten,
	subscriber.Flushed:     observe.Flushed,
	subscriber.Vanished:    observe.Vanished,
}

// leaseContext is a context that Lease.Context made from parent, with
// its cancel.
type leaseContext struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Context returns a context derived from parent that is cancelled when
// the lease ends, with the lease's cause (see Err) as its
// context.Cause: work under the lock that takes it stops by itself once
// the lock is lost, released or run out. It asks for Done, so that the
// lease is watched from then on. A nil parent is taken as
// context.Background(). The context ends with parent too, with parent's
// cause. The lease keeps each context until either has ended; calls
// with the same parent get the same context, so that a holder that asks
// for one per piece of work, from one long-lived parent, keeps one.
func (ls *Lease) Context(parent context.Context) context.Context {
	if parent == nil {
		parent = context.Background()
	}
	done := ls.Done()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	// Contexts whose parent ended are dropped here, so that a lease
	// asked for many over its life keeps only the live ones.
	ls.contexts = slices.DeleteFunc(ls.contexts, func(c leaseContext) bool { return c.ctx.Err() != nil })
	for _, c := range ls.contexts {
		if c.parent == parent {
			return c.ctx
		}
	}
	ctx, cancel := context.WithCancelCause(parent)
	select {
	case <-done:
		cancel(ls.cause)
		return ctx
	default:
	}
	ls.contexts = append(ls.contexts, leaseContext{parent, ctx, cancel})
	return ctx
}

// Err returns nil while the lease is held, and once Done is closed, why
// the lease ended: an error matching ErrReleased, ErrExpired, ErrLost
// (and ErrRemoved, ErrOverwritten, ErrFlushed or ErrVanished, where the
// server told how), or ErrClosed. Like Done, whose state it
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
	ls.unholdLocked()
}

// unholdLocked stops the watch of the lease's lock, if any. The caller
// holds mu.
func (ls *Lease) unholdLocked() {
	if ls.holding != nil {
		ls.holding.Close()
		ls.holding, ls.heldOn = nil, nil
	}
}
