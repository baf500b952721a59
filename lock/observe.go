package lock

// What a Locker tells its observers (WithObserver, package observe): each
// Lock and TryLock call, its steps and its lease, and what happens in the
// background. Every method here returns at once when nobody observes, so
// that a Locker with no observer does no work for one; the events go to
// the Locker's queue, which never blocks.

import (
	"context"
	"errors"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/observe"
)

// Observe reports e to the Locker's observers, after its own events so
// far: for code built on a Locker whose calls are to be seen with the
// Locker's, as a Manager reports its Modify calls (with call numbers from
// observe.NewCall). e's Mode is set to the Locker's, and its Time to now
// if it has none. It never blocks, and does nothing if the Locker has no
// observer.
func (l *Locker) Observe(e observe.Event) {
	if l.obs == nil {
		return
	}
	e.Mode = l.mode
	l.obs.Observe(e)
}

// began starts observing the claim's call op, made with ctx.
func (c *claim) began(ctx context.Context, op observe.Op) {
	if c.l.obs == nil {
		return
	}
	c.call, c.callStart = observe.NewCall(), time.Now()
	c.l.obs.Observe(observe.Event{Kind: observe.CallBegan, Time: c.callStart, Call: c.call, Op: op, Key: c.key, Mode: c.l.mode, Context: ctx})
}

// ended reports the end of the claim's call op, which returned ls and err.
func (c *claim) ended(op observe.Op, ls *Lease, err error) {
	if c.l.obs == nil {
		return
	}
	e := observe.Event{Kind: observe.CallEnded, Call: c.call, Op: op, Key: c.key, Mode: c.l.mode, Duration: time.Since(c.callStart), Err: err}
	if ls != nil {
		e.How, e.Token = c.how(), ls.token
	}
	c.l.obs.Observe(e)
	c.uncertain(op, err)
}

// step reports a step of the claim's call: Asked (once) or Confirming.
func (c *claim) step(k observe.Kind) {
	if k == observe.Asked {
		if c.waited {
			return
		}
		c.waited = true
	}
	if c.l.obs != nil {
		c.l.obs.Observe(observe.Event{Kind: k, Call: c.call, Key: c.key, Mode: c.l.mode})
	}
}

// tookMessage notes that the claim's waiter read a hand-off's message,
// which came in at at.
func (c *claim) tookMessage(at time.Time) {
	c.handed = true
	if c.l.obs != nil {
		c.l.obs.Observe(observe.Event{Kind: observe.HandedOver, Call: c.call, Key: c.key, Mode: c.l.mode, Duration: time.Since(at)})
	}
}

// how says how the claim obtained its lease: Free only at its first
// attempt, which an uncontended fast Lock, or a fair one on shard
// channels, makes without asking; an attempt after it that finds the lock
// free, asking or not, obtains it AfterWait.
func (c *claim) how() observe.How {
	switch {
	case c.handed:
		return observe.Handed
	case c.waited || c.retried:
		return observe.AfterWait
	}
	return observe.Free
}

// uncertain reports err, the error of op, if it leaves the outcome
// unknown.
func (c *claim) uncertain(op observe.Op, err error) {
	if c.l.obs == nil || err == nil || !errors.As(err, new(*conn.UncertainError)) {
		return
	}
	c.l.obs.Observe(observe.Event{Kind: observe.Uncertain, Op: op, Key: c.key, Mode: c.l.mode, Err: err})
}

// backgroundFailed reports a release in the background that ended with
// err, unless it released or found the lock not the claim's.
func (c *claim) backgroundFailed(err error) {
	if c.l.obs == nil || err == nil || errors.Is(err, ErrNotHeld) {
		return
	}
	c.l.obs.Observe(observe.Event{Kind: observe.ReleaseFailed, Op: observe.Release, Key: c.key, Mode: c.l.mode, Err: err})
}

// skipped reports the waiters that a release of the claim's lock passed
// over, their process gone.
func (c *claim) skipped(n int) {
	if c.l.obs == nil || n == 0 {
		return
	}
	c.l.obs.Observe(observe.Event{Kind: observe.WaitersSkipped, Key: c.key, Mode: c.l.mode, Count: n})
}

// granted reports the lease just granted to the claim's call. The caller
// holds the Locker's mu, so that the event comes before any of the
// lease's end.
func (ls *Lease) granted() {
	c := &ls.c
	if c.l.obs == nil {
		return
	}
	ls.grantedAt = time.Now()
	c.l.obs.Observe(observe.Event{Kind: observe.LeaseGranted, Time: ls.grantedAt, Call: c.call, Key: c.key, Mode: c.l.mode, How: c.how(), Token: ls.token})
}

// ended reports the end of the lease, for why, held until now; or, if
// its deadline has passed, as run out, held until the deadline. A lease
// still held at its deadline ran out there, whatever ends it afterwards:
// nothing notices the deadline pass unless Done was asked for (its timer
// does) or the watchdog looks, so an Unlock, an Extend or a Commit that
// finds the lock gone, or Close, may be the first to end a lease that
// had run out long before. Observers are told what Done's timer would
// have told them. The moment compared with the deadline is the one the
// end is taken at: an Unlock's beginning (an Unlock begun in time let go
// in time, whatever its reply says), an Extend's or a Commit's reply.
// The caller holds ls.mu, and has made why the run-out reason where the
// deadline had passed at now.
func (ls *Lease) ended(why observe.Reason, now time.Time) {
	c := &ls.c
	if c.l.obs == nil {
		return
	}
	held := now.Sub(ls.grantedAt)
	if !now.Before(ls.deadline) {
		held = max(ls.deadline.Sub(ls.grantedAt), 0)
	}
	c.l.obs.Observe(observe.Event{Kind: observe.LeaseEnded, Call: c.call, Key: c.key, Mode: c.l.mode, Token: ls.token, Reason: why, Duration: held})
}

// extendFailed reports a failed extension of the watchdog's.
func (ls *Lease) extendFailed(err error) {
	c := &ls.c
	if c.l.obs == nil {
		return
	}
	c.l.obs.Observe(observe.Event{Kind: observe.ExtendFailed, Op: observe.Extend, Call: c.call, Key: c.key, Mode: c.l.mode, Token: ls.token, Err: err})
}
