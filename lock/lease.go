package lock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Lease is one holding of a lock, from acquire to release or loss.
type Lease struct {
	l     *Locker
	key   string
	names keyNames
	owner string // 128 random bits: the lock's value while this lease holds it
	token uint64
	// queuedAfter is, for a fair lease that waited in the queue, the last
	// fencing token handed out when it queued: leases in between were
	// granted after it asked. Tests read it to count who went first.
	queuedAfter uint64

	mu       sync.Mutex
	state    leaseState    // guarded by mu
	deadline time.Time     // guarded by mu: when the lock expires unless extended, by this clock
	done     chan struct{} // guarded by mu: made by the first Done call
	expiry   *time.Timer   // guarded by mu: ends the lease at deadline once Done was called
	stop     chan struct{} // guarded by mu: closed to stop the watchdog; nil without one
}

type leaseState int

const (
	held leaseState = iota
	released
	lost
)

// newLease registers a lease just acquired, or returns nil if the Locker
// has closed meanwhile.
func (l *Locker) newLease(key string, names keyNames, owner string, token uint64, start time.Time) *Lease {
	ls := &Lease{
		l: l, key: key, names: names, owner: owner, token: token,
		// The lock was set no earlier than start: counting from there
		// errs on the safe side.
		deadline: start.Add(l.opts.ttl),
	}
	if l.opts.autoExtend {
		ls.stop = make(chan struct{})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.leases[ls] = struct{}{}
	if ls.stop != nil {
		l.background.Add(1)
		go ls.watchdog(ls.stop)
	}
	return ls
}

// Key is the lock's key, as given to Lock.
func (ls *Lease) Key() string { return ls.key }

// Token is the lease's fencing token: strictly greater than the token of
// every earlier lease on the same key, from any client. Pass it to the
// resource the lock protects, which refuses writes carrying a token lower
// than one it has seen.
func (ls *Lease) Token() uint64 { return ls.token }

// Done is closed when the lease ends: released, lost to an extension that
// found the lock gone, or run out (its TTL passed without an extension, by
// this process's clock).
func (ls *Lease) Done() <-chan struct{} {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.done == nil {
		ls.done = make(chan struct{})
		if ls.state != held {
			close(ls.done)
		} else {
			ls.expiry = time.AfterFunc(time.Until(ls.deadline), ls.runOut)
		}
	}
	return ls.done
}

// runOut ends the lease at its deadline, unless an extension moved it.
func (ls *Lease) runOut() {
	ls.mu.Lock()
	if ls.state == held {
		if left := time.Until(ls.deadline); left > 0 {
			ls.expiry.Reset(left)
			ls.mu.Unlock()
			return
		}
	}
	ls.mu.Unlock()
	ls.expire()
}

// expire ends a lease whose time ran out by this process's clock. The lock
// may still stand in Redis (the local deadline errs early, and an extension
// may be landing), so it is released too: once Done is closed, Redis must
// not keep the lock for a holder that has stopped.
func (ls *Lease) expire() {
	ls.mu.Lock()
	ended := ls.endLocked(lost)
	ls.mu.Unlock()
	if ended {
		ls.l.releaseInBackground(ls.key, ls.names, ls.owner)
	}
}

// endLocked moves the lease out of held, once, and tells everyone who
// watches it.
func (ls *Lease) endLocked(to leaseState) bool {
	if ls.state != held {
		return false
	}
	ls.state = to
	if ls.done != nil {
		close(ls.done)
		ls.expiry.Stop()
	}
	if ls.stop != nil {
		close(ls.stop)
	}
	ls.l.mu.Lock()
	delete(ls.l.leases, ls)
	ls.l.mu.Unlock()
	return true
}

func (ls *Lease) markLost() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.endLocked(lost)
}

// Extend resets the lock's TTL to ttl if this lease still owns it. It
// returns ErrNotHeld, and the lease ends, if the lock expired or another
// owner has it.
func (ls *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if err := ls.startCall(ctx, "extend", "TTL", ttl); err != nil {
		return err
	}
	defer ls.l.calls.Done()
	if !ls.isHeld() {
		return fmt.Errorf("lock %q: extend: %w", ls.key, ErrNotHeld)
	}
	start := time.Now()
	v, err := run(ctx, ls.l.client, extendScript, false, []string{ls.names.lock}, ls.owner, strconv.FormatInt(ttl.Milliseconds(), 10))
	if err != nil {
		return fmt.Errorf("lock %q: extend: %w", ls.key, err)
	}
	if v.Int != 1 {
		ls.markLost()
		return fmt.Errorf("lock %q: extend: %w", ls.key, ErrNotHeld)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.state != held {
		// The lease ran out while the extension was on its way; the
		// release sent when it ran out follows the extension and undoes
		// it.
		return fmt.Errorf("lock %q: extend: %w", ls.key, ErrNotHeld)
	}
	ls.deadline = start.Add(ttl)
	return nil
}

func (ls *Lease) isHeld() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.state == held
}

// startCall checks the context and the duration (named durationName in
// errors) of a call of op on the lease, and counts the call in (see
// Locker.enter): a nil return must be matched by ls.l.calls.Done().
func (ls *Lease) startCall(ctx context.Context, op, durationName string, d time.Duration) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if err := checkMillis(durationName, d); err != nil {
		return err
	}
	if !ls.l.enter() {
		return fmt.Errorf("lock %q: %s: %w", ls.key, op, ErrClosed)
	}
	return nil
}

// Unlock releases the lock. If ctx ends first, Unlock returns its error but
// the release still completes in the background, bounded by the release
// timeout: a cancelled release never leaves the lock held until its TTL.
// It returns ErrNotHeld if the lease had ended, or if the lock turned out
// to belong to someone else by the time the release ran, and ErrClosed
// once the Locker's Close has begun (Close releases the lease).
func (ls *Lease) Unlock(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if !ls.l.enter() {
		// Close releases every lease it finds held.
		return fmt.Errorf("lock %q: unlock: %w", ls.key, ErrClosed)
	}
	defer ls.l.calls.Done()
	return ls.unlock(ctx, nil)
}

// unlock ends the lease and releases the lock, with a write-back if write
// is set.
func (ls *Lease) unlock(ctx context.Context, write *stateWrite) error {
	ls.mu.Lock()
	ended := !ls.endLocked(released)
	ls.mu.Unlock()
	if ended {
		return fmt.Errorf("lock %q: unlock: %w", ls.key, ErrNotHeld)
	}
	return ls.l.release(ctx, ls.key, ls.names, ls.owner, write)
}
