package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/subscriber"
)

// Lease is one holding of a lock, from acquire to release or loss.
type Lease struct {
	c     claim
	token uint64
	// queuedAfter is, for a fair lease that waited in the queue, the last
	// fencing token handed out when it queued: leases in between were
	// granted after it asked. Set before the lease is shared; tests read
	// it to count who went first.
	queuedAfter uint64
	// grantedAt is when the lease was granted, where the Locker has
	// observers (see granted); set before the lease is shared.
	grantedAt time.Time

	mu       sync.Mutex
	state    leaseState    // guarded by mu
	deadline time.Time     // guarded by mu: when the lock expires unless extended, by this clock
	done     chan struct{} // guarded by mu: made by the first Done call
	// expiry ends the lease at deadline once Done was called. Its function
	// runs in a goroutine of the timer's, which counts as the Locker's
	// background work from the timer's start until it stops or finishes.
	expiry *time.Timer   // guarded by mu
	stop   chan struct{} // guarded by mu: closed to stop the watchdog; nil without one
	wanted chan struct{} // guarded by mu: made by the first Wanted call
	// extendFailing says that the watchdog's last extension failed: a
	// lease that runs out then ends for that reason (see
	// runOutReasonLocked). Guarded by mu.
	extendFailing bool
	// holding watches the lock on its server, from the first Done on
	// (see watchLossLocked), and heldOn is the Subscriber it is made on;
	// guarded by mu.
	holding *subscriber.Holding
	heldOn  *subscriber.Subscriber
	// handing is set while a commit that keeps the lock, and so may hand
	// it on, is on its way, and heardLoss is a loss the watch found
	// meanwhile, for the commit's reply to decide (see lostLocked).
	// Guarded by mu.
	handing   bool
	heardLoss observe.Reason
	// contexts are the lease's live contexts (Context), cancelled when it
	// ends; guarded by mu.
	contexts []leaseContext
	// cause is why the lease ended (see Err); nil while held. Guarded by
	// mu.
	cause error
	// turn is held by the one extension of the lease in flight (Extend,
	// the watchdog's, a commit that keeps the lock): a send takes it, a
	// receive gives it back (see takeTurn). Guarded by mu until made, by
	// the first extension; never changed afterwards.
	turn chan struct{}
}

type leaseState int

const (
	held leaseState = iota
	released
	lost
)

// newLease registers a lease just acquired by c, whose lock was set no
// earlier than start with the Locker's TTL. It returns nil if the Locker
// has closed meanwhile.
func (c *claim) newLease(token uint64, start time.Time, queuedAfter uint64) *Lease {
	l := c.l
	ls := c.lease
	ls.token, ls.queuedAfter, ls.deadline = token, queuedAfter, leaseEnd(start, l.opts.TTL)
	if l.opts.AutoExtend {
		ls.stop = make(chan struct{})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.leases[ls] = struct{}{}
	ls.granted()
	if ls.stop != nil {
		l.background.Add(1)
		go ls.watchdog(ls.stop, ls.firstExtension())
	}
	return ls
}

// Token is the lease's fencing token: strictly greater than the token of
// every earlier lease on the same key, from any client. Pass it to the
// resource the lock protects, which refuses writes carrying a token lower
// than one it has seen. See the package doc for what this rests on.
func (ls *Lease) Token() uint64 { return ls.token }

// Done is closed when the lease ends: released; lost, as the server told
// (see "A lost lock" in the package doc: within milliseconds of another
// client's DEL, SET, FLUSHDB and the like), or as an extension or a
// write found the lock gone; or run out (its TTL passed without an
// extension, by this process's clock, which errs early). Err says which.
// The first call has the lease's lock watched on the server from then on.
// Running out is
// noticed by a timer of this process: a process starved of CPU may see
// Done open a few milliseconds past the deadline, by which time another
// owner may hold the lock. Guard writes that must not overlap with the
// fencing token (Token). A first call after the deadline has passed (a
// caller slow to ask) finds Done closed already. Lock and TryLock do not
// return a lease whose deadline passed before its acquire's reply came.
func (ls *Lease) Done() <-chan struct{} {
	ls.mu.Lock()
	if ls.done != nil {
		defer ls.mu.Unlock()
		return ls.done
	}
	ls.done = make(chan struct{})
	if ls.state != held {
		close(ls.done)
		ls.mu.Unlock()
		return ls.done
	}
	if !time.Now().Before(ls.deadline) {
		// Run out before anyone asked: a timer would close done a
		// moment after this returns, while the caller takes an open
		// Done for a held lock.
		ls.runOutLocked()
		ls.mu.Unlock()
		ls.c.releaseInBackground()
		return ls.done
	}
	defer ls.mu.Unlock()
	ls.watchLossLocked()
	// Armed even once Close has begun: Close releases the lease only
	// after the calls in progress have returned, which may take up to the
	// release timeout, and Done must not stay open past the deadline
	// meanwhile. Close waits for the timer's goroutine only after it has
	// ended every lease, which stops the timer, so this Add comes before
	// that Wait.
	ls.c.l.background.Add(1)
	ls.expiry = time.AfterFunc(time.Until(ls.deadline), ls.runOut)
	return ls.done
}

// runOut ends the lease at its deadline, unless an extension moved it.
func (ls *Lease) runOut() {
	ls.mu.Lock()
	if ls.state == held {
		if left := time.Until(ls.deadline); left > 0 {
			ls.expiry.Reset(left)
			ls.mu.Unlock()
			return // still counted: the timer runs again
		}
	}
	ended := ls.runOutLocked()
	ls.mu.Unlock()
	if ended {
		ls.c.releaseInBackground()
	}
	ls.c.l.background.Done()
}

// runOutReasonLocked is why a lease that ran out ended: ExtensionFailed
// where the watchdog's last extension failed, and Expired otherwise,
// with a watchdog too: one that had not failed may not have extended in
// time (an Extend to a TTL shorter than its pace, a process paused past
// the deadline). It is the reason observers are told for every lease
// that ends past its deadline, whatever ends it (see ended). The caller
// holds mu.
func (ls *Lease) runOutReasonLocked() observe.Reason {
	if ls.extendFailing {
		return observe.ExtensionFailed
	}
	return observe.Expired
}

// runOutLocked ends a lease whose time ran out by this process's clock,
// and reports whether it was held until now. The caller holds mu, and
// saw the deadline pass in the same hold of mu: an extension whose
// reply came between a look and the end would have moved the deadline
// and returned nil, for a lease ended and its lock released all the
// same. Where it reports true, the caller, once it has unlocked mu,
// releases the lock with the claim's releaseInBackground: the lock may
// still stand in Redis (the local deadline errs early, and an extension
// may be landing), and once Done is closed, Redis must not keep the lock
// for a holder that has stopped.
func (ls *Lease) runOutLocked() bool {
	return ls.endLocked(lost, ls.runOutReasonLocked())
}

// endLocked moves the lease out of held, once, for why, and tells
// everyone who watches it: observers, Err and the lease's contexts are
// told why, or that it ran out if its deadline has passed (see ended).
func (ls *Lease) endLocked(to leaseState, why observe.Reason) bool {
	if ls.state != held {
		return false
	}
	ls.state = to
	now := time.Now()
	if !now.Before(ls.deadline) {
		why = ls.runOutReasonLocked()
	}
	ls.cause = causes[why]
	ls.ended(why, now)
	ls.endWatchersLocked()
	if ls.done != nil {
		close(ls.done)
		if ls.expiry != nil && ls.expiry.Stop() {
			ls.c.l.background.Done() // the timer will not run
		}
	}
	if ls.stop != nil {
		close(ls.stop)
	}
	l := ls.c.l
	l.mu.Lock()
	delete(l.leases, ls)
	l.mu.Unlock()
	return true
}

// markLost ends the lease whose extension or write found the lock gone:
// for the reason the watch heard, if it heard one meanwhile, which says
// more.
func (ls *Lease) markLost() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	why := observe.Lost
	if ls.heardLoss != 0 {
		why, ls.heardLoss = ls.heardLoss, 0
	}
	ls.endLocked(lost, why)
}

// extendTo moves the deadline to start+ttl after the server confirmed an
// extension sent at start. It reports false if the lease ended meanwhile.
// The caller holds the lease's turn (takeTurn), so that no other
// extension is in flight: Redis keeps the TTL of the extension it ran
// last, and with one at a time that is the one whose reply came last.
func (ls *Lease) extendTo(start time.Time, ttl time.Duration) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.state != held {
		return false
	}
	ls.setDeadlineLocked(leaseEnd(start, ttl))
	return true
}

// mayHaveExtended takes into account an extension to ttl, sent at start,
// whose outcome is unknown: if it ran, the lock expires at start+ttl or
// later; if not, at the deadline. The earlier of the two is safe either
// way, whichever way the extension went.
func (ls *Lease) mayHaveExtended(start time.Time, ttl time.Duration) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if end := leaseEnd(start, ttl); ls.state == held && end.Before(ls.deadline) {
		ls.setDeadlineLocked(end)
	}
}

// setDeadlineLocked moves the deadline, and the timer that closes Done at
// it: a deadline moved earlier must close Done earlier, while a later one
// only costs the timer a look when it fires (see runOut).
func (ls *Lease) setDeadlineLocked(deadline time.Time) {
	earlier := deadline.Before(ls.deadline)
	ls.deadline = deadline
	// A timer that has fired already runs runOut, which reads the new
	// deadline; Stop tells which.
	if earlier && ls.expiry != nil && ls.expiry.Stop() {
		ls.expiry.Reset(time.Until(deadline))
	}
}

// takeTurn waits until no other extension of the lease is in flight, and
// returns ctx's error if ctx ends first or has ended already (nothing is
// sent then), or ErrClosed once the Locker's Close has begun: an
// extension that waited behind one stuck on the server must not send its
// own on the connection Close redials, nor hold Close up. A nil return
// must be matched by giveTurn. Extensions of one lease take turns because
// each moves the deadline by its own reply, and two in flight at once
// could have their replies read in another order than Redis ran them: the
// deadline would follow the TTL that Redis replaced.
func (ls *Lease) takeTurn(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	closing := ls.c.l.closing.Done()
	ls.mu.Lock()
	if ls.turn == nil {
		ls.turn = make(chan struct{}, 1)
	}
	turn := ls.turn
	ls.mu.Unlock()
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-closing:
		return errLockerClosed
	}
	select {
	case <-closing:
		<-turn
		return errLockerClosed
	default:
		return nil
	}
}

// giveTurn ends the turn that takeTurn gave. It reads turn without mu: the
// same goroutine's takeTurn set it, or saw it set, under mu.
func (ls *Lease) giveTurn() { <-ls.turn }

// expiryGrain is how finely the server keeps a key's expiry: whole
// milliseconds, taken from a clock it does not read afresh for every
// command (a script's time is its start's), so that a lock may expire up
// to about a millisecond before its TTL has run from the moment it was
// set. It was seen once under load: another owner acquired 0.65 ms before
// a fair lease's deadline (TestAFairHandOffLearntAtARenewalEndsBeforeTheLock).
const expiryGrain = time.Millisecond

// leaseEnd is the local deadline of a lease whose lock was set with ttl
// by a command sent at start: a grain short of start+ttl (or half the TTL
// short, for a TTL under two grains), so that it is never later than the
// lock's expiry in Redis.
func leaseEnd(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl - min(expiryGrain, ttl/2))
}

// Extend resets the lock's TTL to ttl if this lease still owns it. It
// returns ErrNotHeld, and the lease ends, if the lock expired or another
// owner has it. An extension whose reply comes after Done's timer ended
// the lease (it ran out by this process's clock) also returns ErrNotHeld:
// the release sent when it ran out follows the extension on the same
// connection and undoes it. Where nobody asked for Done, nothing ends the
// lease at its deadline, and an extension that finds the lock still the
// lease's (the local deadline errs early) moves the deadline on.
//
// ttl may be shorter than the time the lease has left: the lease's
// deadline, and Done, move earlier with it. Extensions of one lease from
// several goroutines (the watchdog's and a held write-back's among them)
// run one at a time, so that the deadline always follows the extension
// Redis ran last. An extension whose outcome is unknown (an error matching
// conn.UncertainError, or ctx ending while it was on its way) is taken to
// have run where that makes the lease shorter: the deadline becomes the
// earlier of the two it could be. ttl must be at least a millisecond and
// at most 100 years; outside that, the error matches ErrInvalid and
// nothing is sent.
func (ls *Lease) Extend(ctx context.Context, ttl time.Duration) (err error) {
	if err := ls.startCall(ctx, "extend", "TTL", ttl); err != nil {
		return err
	}
	defer ls.c.l.exit()
	c := &ls.c
	defer func() { c.uncertain(observe.Extend, err) }()
	if !ls.isHeld() {
		return c.errorf("extend", ErrNotHeld)
	}
	if err := ls.takeTurn(ctx); err != nil {
		return c.errorf("extend", err) // nothing sent
	}
	defer ls.giveTurn()
	start := time.Now()
	r, err := c.l.runAcked(ctx, c.cmd, scriptCall{script: &extendScript, keys: []string{c.names.lock}, args: extendArgs{owner: c.owner, ttl: millis(ttl)}.argv()}, nil)
	if err != nil {
		if mayHaveRun(err) {
			ls.mayHaveExtended(start, ttl)
			if !errors.As(err, new(*conn.UncertainError)) {
				err = &conn.UncertainError{Cause: err}
			}
		}
		return c.errorf("extend", err)
	}
	n, err := integerReply(r.reply, 0, 1)
	if err != nil {
		return c.errorf("extend", err)
	}
	if n != 1 {
		ls.markLost()
		return c.errorf("extend", ErrNotHeld)
	}
	if r.short != nil {
		// A failover could bring back the lock as it was before the
		// extension, or keep it as extended: the deadline is the
		// earlier of the two.
		ls.mayHaveExtended(start, ttl)
		return c.errorf("extend", &conn.UncertainError{Cause: r.short})
	}
	if !ls.extendTo(start, ttl) {
		return c.errorf("extend", ErrNotHeld)
	}
	return nil
}

func (ls *Lease) isHeld() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.state == held
}

// startCall checks the context and the duration (named durationName in
// errors) of a call of op on the lease, and counts the call in (see
// Locker.enter): a nil return must be matched by ls.c.l.exit().
func (ls *Lease) startCall(ctx context.Context, op, durationName string, d time.Duration) error {
	if ctx == nil {
		return fmt.Errorf("lock: %w: nil context", ErrInvalid)
	}
	if err := checkMillis(durationName, d); err != nil {
		return err
	}
	if !ls.c.l.enter() {
		return ls.c.errorf(op, errLockerClosed)
	}
	return nil
}

// Unlock releases the lock. If ctx ends first, Unlock returns an error
// matching both conn.UncertainError and ctx's error, but the release still
// completes in the background, bounded by the release timeout (5s): a
// cancelled release never leaves the lock held until its TTL, and a Close
// that begins meanwhile waits for it (see Close). Whatever
// ctx, Unlock returns within the release timeout: one that finds no reply
// by then (a server that stopped answering, a half-open connection) is an
// error matching conn.UncertainError, since the release may yet run; the
// connection it waited on is broken then, as the read timeout would break
// it, and the Locker's next call dials a new one.
// A release whose connection broke under it is sent again on a new
// connection within the release timeout.
//
// It returns ErrNotHeld if the lease had ended, or if the lock turned out
// to belong to someone else by the time the release ran; an error matching
// conn.UncertainError when a retried release found the lock gone and the
// first attempt may have been the one that released it; and ErrClosed once
// the Locker's Close has begun (Close releases the lease).
//
// A lease whose deadline had passed before Unlock began, with nobody
// asking for Done, still goes through the release, which the reply
// decides (ErrNotHeld where the lock had expired; nil where it still
// stood, the deadline erring early); observers are told that it ran out
// (observe.Reason says how that is decided).
func (ls *Lease) Unlock(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("lock: %w: nil context", ErrInvalid)
	}
	if !ls.c.l.enter() {
		return ls.c.errorf("unlock", errLockerClosed)
	}
	defer ls.c.l.exit()
	err := ls.unlock(ctx, nil, observe.Released)
	ls.c.uncertain(observe.Unlock, err)
	return err
}

// unlock ends the lease, for why, and releases the lock, with a write-back
// if w is set.
func (ls *Lease) unlock(ctx context.Context, w *Write, why observe.Reason) error {
	ls.mu.Lock()
	ended := !ls.endLocked(released, why)
	ls.mu.Unlock()
	if ended {
		return ls.c.errorf("unlock", ErrNotHeld)
	}
	return ls.c.release(ctx, w)
}
