package integration_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// errChaosFn is what a Modify's fn returns when its variant fails.
var errChaosFn = errors.New("chaos: fn failed on purpose")

// chaosPanic is what a Modify's fn panics with when its variant panics.
type chaosPanic struct{ id string }

// classify sorts an error by what it says about the call (class*).
func classify(err error) string {
	var uncertain *conn.UncertainError
	switch {
	case err == nil:
		return classOK
	case errors.Is(err, errChaosFn):
		return classFn
	case errors.As(err, &uncertain):
		return classUncertain
	case errors.Is(err, lock.ErrInvalid), errors.Is(err, manager.ErrInvalid):
		return classInvalid
	case errors.Is(err, lock.ErrNotHeld):
		return classNotHeld
	case errors.Is(err, lock.ErrNotAcquired):
		return classNotAcq
	case errors.Is(err, lock.ErrClosed), errors.Is(err, manager.ErrClosed):
		return classClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return classCtx
	}
	return classOther
}

// loop is one goroutine of an actor: random calls on random keys until
// ctx ends.
func (a *actor) loop(ctx context.Context, rng *rand.Rand, gi int) {
	for ctx.Err() == nil {
		g := a.current(ctx)
		if g == nil {
			return
		}
		key := a.p.plan.Keys[rng.IntN(len(a.p.plan.Keys))]
		what := []weighted[string]{{40, "lock"}, {15, "trylock"}, {2, "close"}, {3, "close-burst"}, {5, "pause"}}
		if g.manager != nil {
			what = append(what, weighted[string]{45, "modify"})
		}
		switch pick(rng, what...) {
		case "lock":
			a.acquire(rng, g, key, false)
		case "trylock":
			a.acquire(rng, g, key, true)
		case "modify":
			a.modify(rng, g, key)
		case "close":
			a.replace(ctx, g, rng.IntN(2) == 0)
		case "close-burst":
			a.closeBurst(ctx, rng, g)
		case "pause":
			time.Sleep(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
		}
	}
}

// closeBurst starts a few Locks, cancels them at a random moment, and
// closes the generation at once: a shutdown (cancel, then Close) must
// leave no lock held.
func (a *actor) closeBurst(ctx context.Context, rng *rand.Rand, g *generation) {
	var wg sync.WaitGroup
	for range 1 + rng.IntN(4) {
		r := newRand(rng.Uint64())
		key := a.p.plan.Keys[r.IntN(len(a.p.plan.Keys))]
		wg.Go(func() { a.acquire(r, g, key, r.IntN(4) == 0) })
	}
	// At once, as the acquires land, or once the Locks wait, and some
	// watch the releases of the key (after a hand-off window).
	within := pick(rng, weighted[time.Duration]{1, 2 * time.Millisecond}, weighted[time.Duration]{1, time.Second})
	time.Sleep(time.Duration(rng.Int64N(int64(within))))
	a.replace(ctx, g, true)
	wg.Wait()
}

// guard runs f, turning a panic into a bad-panic record: one that came
// from baton, not from a Modify's fn (which modify recovers itself).
func (a *actor) guard(r *chaosRecord, f func()) {
	defer func() {
		if v := recover(); v != nil {
			r.Ret = now()
			r.Class = classBadPanic
			r.Err = fmt.Sprintf("%v\n%s", v, debug.Stack())
		}
	}()
	f()
}

// acquire calls Lock or TryLock and, on success, holds the lease for a
// random sequence of calls.
func (a *actor) acquire(rng *rand.Rand, g *generation, key string, try bool) {
	o := newOpCtx(rng, acquireCtx, g)
	r := chaosRecord{Kind: recLock, ID: a.p.rec.newID(a.name), Actor: g.id, Key: key}
	if try {
		r.Kind = recTryLock
	}
	var lease *lock.Lease
	a.guard(&r, func() {
		var err error
		r.Call = now()
		if try {
			lease, err = g.locker.TryLock(o.ctx, key)
		} else {
			lease, err = g.locker.Lock(o.ctx, key)
		}
		r.Ret = now()
		r.Class, r.Err = classify(err), a.p.scan.err(r.Kind+" "+r.ID, err)
	})
	o.release()
	r.CtxEnd = o.endedBy(r.Ret)
	if lease == nil {
		a.p.rec.add(r)
		return
	}
	r.Lease, r.Fence = r.ID, lease.Token()
	a.p.rec.add(r)
	lr := a.watch(rng, g, r, lease)
	a.holdLease(rng, g, lr)
}

// leaseRun is a lease being held: the moments its holder saw it held.
type leaseRun struct {
	a     *actor
	g     *generation
	lease *lock.Lease
	rec   chaosRecord // its recLease record, without what the watch adds
	// watching is closed once the watcher has called Done; the holder
	// makes no call on the lease before that, but for the extensions it
	// makes before proceed is closed.
	watching chan struct{}
	// proceed is closed by the holder to let the watcher call Done once
	// its delay has passed.
	proceed chan struct{}
	// finished is closed once the watcher has recorded the lease.
	finished chan struct{}

	// viaContext says that the watcher watches the lease's Context
	// rather than its Done; set before the watcher starts.
	viaContext bool

	mu       sync.Mutex // guards the fields below
	watchAt  int64      // when the watcher first called Done
	lastOpen int64      // the last moment Done was seen open
	// lastOpenLate is the last moment Done was seen open, firstLookGrace
	// or more after the watcher first called it.
	lastOpenLate int64
	closed       int64 // when Done was first seen closed
	preDone      bool  // the holder extended the lease before Done was called
	// done is the channel the watcher watches: Done's, or that of the
	// context Lease.Context made; nil until it asked for it.
	done <-chan struct{}
	// end and endErr are why the lease ended (end*), as Lease.Err said
	// once the watcher saw done closed, and the error's text.
	end, endErr string
}

// firstLookGrace is how long after the first call of Done an open Done
// proves nothing for a lease extended before that call: if the extension
// moved the deadline into the past, the timer the first call starts fires
// at once, but its function may take a moment to run.
const firstLookGrace = 50 * time.Millisecond

// watch starts the lease's watcher: at a random moment within a quarter
// of the TTL (a tenth of a second at most) it calls Done, or, for a
// third of the leases, Context, whose context must end with the lease,
// and from then on looks at it every millisecond or two until it sees it
// closed, or the process's round ends; once it is closed, it records
// why the lease ended (Err, and the context's cause, which must be the
// same). It records the lease when it stops. Either call has the lease's
// lock watched on the server, so that a lock another client deleted or
// overwrote ends the lease at once (see faulter.loseLock).
//
// What the checks take as the lease's holding is the time from its grant
// to the last moment Done was seen open: the time is read before each
// look, so Done was open at that moment, and the holder was entitled to
// act as the owner then. The moment Done was seen closed is not used as
// the end: it comes after the close by however long the watcher took to
// be scheduled, and baton's expiry releases the lock at once, so that
// another owner may acquire it within a fraction of a millisecond of the
// close: a check on that moment would need a slack the size of a
// scheduling delay.
func (a *actor) watch(rng *rand.Rand, g *generation, grant chaosRecord, lease *lock.Lease) *leaseRun {
	lr := &leaseRun{
		a: a, g: g, lease: lease, watching: make(chan struct{}), proceed: make(chan struct{}), finished: make(chan struct{}),
		rec:        chaosRecord{Kind: recLease, ID: grant.ID, Lease: grant.ID, Actor: g.id, Key: grant.Key, Call: grant.Ret, Fence: grant.Fence, TTL: int64(a.spec.TTL)},
		viaContext: rng.IntN(3) == 0,
	}
	delay := time.Duration(rng.Int64N(int64(min(a.spec.TTL/4, 100*time.Millisecond)) + 1))
	poll := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	a.watchers.Go(func() {
		defer close(lr.finished)
		defer lr.record()
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-a.p.stopWatch:
			close(lr.watching)
			return
		}
		select {
		case <-lr.proceed:
		case <-a.p.stopWatch:
			close(lr.watching)
			return
		}
		lr.mu.Lock()
		lr.watchAt = now()
		lr.mu.Unlock()
		var ctx context.Context
		var done <-chan struct{}
		if lr.viaContext {
			ctx = lease.Context(context.Background())
			done = ctx.Done()
		} else {
			done = lease.Done()
		}
		lr.mu.Lock()
		lr.done = done
		lr.mu.Unlock()
		close(lr.watching)
		for {
			lr.look()
			t.Reset(time.Duration(500+poll.IntN(1500)) * time.Microsecond)
			select {
			case <-done:
				lr.look()
				lr.cause(ctx)
				return
			case <-a.p.stopWatch:
				if !lr.look() {
					lr.cause(ctx)
				}
				return
			case <-t.C:
			}
		}
	})
	return lr
}

// look looks at Done once: the time, read first, is the last moment the
// lease was seen held if Done is open. It reports whether it was.
func (lr *leaseRun) look() bool {
	t := now()
	lr.mu.Lock()
	done := lr.done
	lr.mu.Unlock()
	if done == nil {
		done = lr.lease.Done()
	}
	select {
	case <-done:
		lr.mu.Lock()
		if lr.closed == 0 {
			lr.closed = now()
		}
		lr.mu.Unlock()
		return false
	default:
		lr.mu.Lock()
		lr.lastOpen = max(lr.lastOpen, t)
		if t >= lr.watchAt+int64(firstLookGrace) {
			lr.lastOpenLate = max(lr.lastOpenLate, t)
		}
		lr.mu.Unlock()
		return true
	}
}

// cause records why the lease ended, as Err says once Done is closed,
// and checks that ctx, the lease's context if the watcher watched one,
// ended with the same cause.
func (lr *leaseRun) cause(ctx context.Context) {
	err := lr.lease.Err()
	end := endClass(err)
	if ctx != nil {
		if c := context.Cause(ctx); c != err {
			end = endMismatch
			err = fmt.Errorf("the context's cause %v, Err %w", c, err)
		}
	}
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.end, lr.endErr = end, lr.a.p.scan.err("Err of lease "+lr.rec.ID, err)
}

// endClass sorts the error Lease.Err gives once Done is closed (end*).
func endClass(err error) string {
	switch {
	case err == nil:
		return endNil
	case errors.Is(err, lock.ErrLost):
		return endLost
	case errors.Is(err, lock.ErrReleased):
		return endReleased
	case errors.Is(err, lock.ErrExpired):
		return endExpired
	case errors.Is(err, lock.ErrClosed):
		return endClosed
	}
	return endOther
}

func (lr *leaseRun) record() {
	lr.mu.Lock()
	r := lr.rec
	r.WatchAt, r.LastOpen, r.LastOpenLate, r.Closed, r.PreDone = lr.watchAt, lr.lastOpen, lr.lastOpenLate, lr.closed, lr.preDone
	r.End, r.Err = lr.end, lr.endErr
	if lr.viaContext {
		r.Via = "context"
	}
	lr.mu.Unlock()
	r.Ret = now()
	lr.a.p.rec.add(r)
}

// The lease calls of holdLease, by weight.
var leaseSteps = []weighted[string]{
	{30, "hold"}, {25, "extend"}, {10, "extend-two"}, {8, "extend-invalid"},
	{6, "unlock-and-extend"}, {6, "unlock-twice"}, {5, "look"},
}

// holdLease makes a random sequence of calls on a lease and, mostly,
// unlocks it at the end; a lease not unlocked is left to its TTL, or to
// its Locker's Close.
func (a *actor) holdLease(rng *rand.Rand, g *generation, lr *leaseRun) {
	ttl := a.spec.TTL
	if rng.IntN(3) == 0 {
		// Extensions before Done is first called: one, or one long and
		// one short at once.
		lr.mu.Lock()
		lr.preDone = true
		lr.mu.Unlock()
		if rng.IntN(3) == 0 {
			a.extend(rng, lr, randomTTL(rng, ttl), "before Done")
		} else {
			a.extendTwo(rng, lr, "before Done")
		}
	}
	close(lr.proceed)
	<-lr.watching
	steps := rng.IntN(6)
	for range steps {
		if !lr.look() {
			break
		}
		switch pick(rng, leaseSteps...) {
		case "hold":
			time.Sleep(time.Duration(rng.Int64N(int64(min(ttl/2, 200*time.Millisecond)))))
		case "look":
			time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
		case "extend":
			a.extend(rng, lr, randomTTL(rng, ttl), "")
		case "extend-two":
			a.extendTwo(rng, lr, "")
		case "extend-invalid":
			bad := pick(rng,
				weighted[time.Duration]{3, time.Duration(math.MaxInt64)}, weighted[time.Duration]{1, time.Duration(math.MaxInt64 - 1)},
				weighted[time.Duration]{1, time.Duration(math.MaxInt64 / 2)},
				weighted[time.Duration]{1, 0}, weighted[time.Duration]{1, -1}, weighted[time.Duration]{1, -time.Second},
				weighted[time.Duration]{1, time.Duration(math.MinInt64)}, weighted[time.Duration]{1, time.Millisecond - 1})
			a.extend(rng, lr, bad, "invalid")
		case "unlock-and-extend":
			r1, r2 := newRand(rng.Uint64()), newRand(rng.Uint64())
			var wg sync.WaitGroup
			wg.Go(func() { a.unlock(r1, lr, "concurrent with extend") })
			wg.Go(func() { a.extend(r2, lr, randomTTL(r2, ttl), "concurrent with unlock") })
			wg.Wait()
			return
		case "unlock-twice":
			r1, r2 := newRand(rng.Uint64()), newRand(rng.Uint64())
			var wg sync.WaitGroup
			wg.Go(func() { a.unlock(r1, lr, "twice, concurrently") })
			wg.Go(func() { a.unlock(r2, lr, "twice, concurrently") })
			wg.Wait()
			return
		}
	}
	abandon := 0.1
	if ttl >= longTTL {
		abandon = 0.02 // it would stop the key for the rest of the round
	}
	if rng.Float64() < abandon {
		return
	}
	a.unlock(rng, lr, "")
	if rng.IntN(8) == 0 {
		a.unlock(rng, lr, "again")
	}
}

// extendTwo extends the lease with one long and one short TTL, from two
// goroutines at once.
func (a *actor) extendTwo(rng *rand.Rand, lr *leaseRun, note string) {
	ttl := a.spec.TTL
	long, short := pick(rng, weighted[time.Duration]{1, ttl}, weighted[time.Duration]{1, 2 * ttl}),
		pick(rng, weighted[time.Duration]{1, 2 * time.Millisecond}, weighted[time.Duration]{1, 10 * time.Millisecond}, weighted[time.Duration]{1, ttl / 10})
	r1, r2 := newRand(rng.Uint64()), newRand(rng.Uint64())
	var wg sync.WaitGroup
	wg.Go(func() { a.extend(r1, lr, long, strings.TrimSpace("concurrent "+note)) })
	wg.Go(func() { a.extend(r2, lr, short, strings.TrimSpace("concurrent "+note)) })
	wg.Wait()
}

// randomTTL is an extension's TTL: shorter or longer than the lock's.
func randomTTL(rng *rand.Rand, ttl time.Duration) time.Duration {
	return pick(rng,
		weighted[time.Duration]{2, time.Millisecond}, weighted[time.Duration]{3, 5 * time.Millisecond},
		weighted[time.Duration]{3, 30 * time.Millisecond}, weighted[time.Duration]{4, ttl / 10},
		weighted[time.Duration]{6, ttl}, weighted[time.Duration]{4, 2 * ttl})
}

// extendRange says whether Extend must take an extension's TTL (at least
// a millisecond, and far from the end of the range), and whether it must
// refuse it with lock.ErrInvalid: under a millisecond, or so close to the
// largest Duration that it has no whole number of milliseconds, rounded
// up, in an int64. Between the two, Extend may do either.
func extendRange(d time.Duration) (mustTake, mustRefuse bool) {
	return d >= time.Millisecond && d <= 24*time.Hour, d < time.Millisecond || d > math.MaxInt64-time.Millisecond+1
}

func (a *actor) extend(rng *rand.Rand, lr *leaseRun, ttl time.Duration, note string) {
	o := newOpCtx(rng, leaseCallCtx, lr.g)
	r := chaosRecord{Kind: recExtend, ID: a.p.rec.newID(a.name), Actor: lr.g.id, Key: lr.rec.Key, Lease: lr.rec.ID, Note: fmt.Sprintf("ttl=%d", int64(ttl))}
	if note != "" {
		r.Note += " " + note
	}
	a.guard(&r, func() {
		r.Call = now()
		err := lr.lease.Extend(o.ctx, ttl)
		r.Ret = now()
		r.Class, r.Err = classify(err), a.p.scan.err("Extend "+r.ID, err)
	})
	o.release()
	r.CtxEnd = o.endedBy(r.Ret)
	a.p.rec.add(r)
}

func (a *actor) unlock(rng *rand.Rand, lr *leaseRun, note string) {
	o := newOpCtx(rng, leaseCallCtx, lr.g)
	r := chaosRecord{Kind: recUnlock, ID: a.p.rec.newID(a.name), Actor: lr.g.id, Key: lr.rec.Key, Lease: lr.rec.ID, Note: note}
	a.guard(&r, func() {
		r.Call = now()
		err := lr.lease.Unlock(o.ctx)
		r.Ret = now()
		r.Class, r.Err = classify(err), a.p.scan.err("Unlock "+r.ID, err)
	})
	o.release()
	r.CtxEnd = o.endedBy(r.Ret)
	a.p.rec.add(r)
}

// The variants of a Modify's fn, by weight: it increments and succeeds;
// fails; panics; cancels its Modify's context, then increments; sleeps a
// little, so that a fault may strike between the acquire and the
// write-back, then increments; or sleeps past the lock's TTL, then
// increments; or puts the server out of memory (maxmemory 1, restored
// once the Modify has returned), then increments, so that the
// write-back is refused.
var fnVariants = []weighted[string]{{42, "ok"}, {10, "error"}, {10, "panic"}, {10, "cancel"}, {10, "slow"}, {3, "oom"}, {5, "past-ttl"}}

// modify calls Modify with fn of a random variant.
func (a *actor) modify(rng *rand.Rand, g *generation, key string) {
	variant := pick(rng, fnVariants...)
	if variant == "past-ttl" && a.spec.TTL >= longTTL {
		variant = "ok"
	}
	o := newOpCtx(rng, modifyCtx, g)
	r := chaosRecord{Kind: recModify, ID: a.p.rec.newID(a.name), Actor: g.id, Key: key, Note: variant, Hold: a.spec.Hold > 0}
	fn := func(c *counter) error {
		r.FnStart, r.FnEnd, r.Holder = now(), 0, ""
		// Who holds the lock as fn runs: this Modify's lease, unless
		// that is already lost; the check below needs it.
		ictx, cancel := context.WithTimeout(context.Background(), time.Second)
		if info, err := g.locker.Inspect(ictx, key); err == nil && info.Held {
			r.Holder = info.Holder
		} else {
			a.p.scan.err("Inspect in "+r.ID, err)
		}
		cancel()
		r.Old = c.N
		switch variant {
		case "error":
			r.FnEnd = now()
			return errChaosFn
		case "panic":
			r.FnEnd = now()
			panic(chaosPanic{r.ID})
		case "cancel":
			o.cancelNow()
		case "slow":
			time.Sleep(time.Duration(5+rng.IntN(55)) * time.Millisecond)
		case "oom":
			a.p.admin("CONFIG", "SET", "maxmemory", "1")
		case "past-ttl":
			time.Sleep(a.spec.TTL + 30*time.Millisecond)
		}
		c.N++
		r.FnEnd = now()
		return nil
	}
	func() {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			r.Ret = now()
			if p, ok := v.(chaosPanic); ok && p.id == r.ID {
				r.Class = classPanic
				return
			}
			r.Class, r.Err = classBadPanic, fmt.Sprintf("%v\n%s", v, debug.Stack())
		}()
		r.Call = now()
		err := g.manager.Modify(o.ctx, key, fn)
		r.Ret = now()
		if variant == "oom" {
			a.p.admin("CONFIG", "SET", "maxmemory", "0")
		}
		r.Class, r.Err = classify(err), a.p.scan.err("Modify "+r.ID, err)
	}()
	o.release()
	r.CtxEnd = o.endedBy(r.Ret)
	a.p.rec.add(r)
	a.checkLetGo(r)
}

// checkLetGo checks, a while after a Modify returned, that the lease it
// ran under no longer holds the lock, unless it keeps it on purpose (a
// Manager with hold that succeeded): fn saw the lock's holder, and the
// same holder must be gone. It checks on locks with a long TTL only, since
// a short one frees a lock kept by mistake before the check can see it,
// and only where fn saw the holder at its start, within a moment of the
// acquire, so that the holder was this Modify's lease.
func (a *actor) checkLetGo(r chaosRecord) {
	if r.Holder == "" || a.spec.TTL < longTTL || (r.Hold && r.Class == classOK) {
		return
	}
	wait := 2 * time.Second
	if r.Class == classUncertain {
		wait += a.p.plan.releaseBound() // the release may go on in the background
	}
	a.p.checks.Go(func() {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-a.p.stopWatch:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		at := now()
		info, err := a.p.inspector.Inspect(ctx, r.Key)
		a.p.scan.err("Inspect after "+r.ID, err)
		if err != nil || !info.Held || info.Holder != r.Holder {
			return
		}
		a.p.rec.add(chaosRecord{
			Kind: recFinding, ID: a.p.rec.newID(a.name), Key: r.Key, Lease: r.ID, Call: at,
			Note: fmt.Sprintf("the lock is still held by the lease of Modify %s (%s, fn %s) %v after it returned, with %v left of its TTL",
				r.ID, r.Class, r.Note, wait, info.TTL.Round(time.Millisecond)),
		})
	})
}
