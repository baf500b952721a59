package lock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// Lock acquires the lock for key, waiting as long as ctx allows.
//
// With no other waiter for key in this process, it tries at once. Otherwise,
// or if that fails, it registers for the key's release events, tries again
// (a release between the failed try and the registration is not missed),
// and then waits for a release or for the holder's TTL to run out,
// whichever comes first, before each further try. When a release is heard,
// the next try is sent straight from the subscriber's reader, before this
// goroutine is even scheduled: the head start the release order gives a
// waiter is not spent waiting for a CPU.
func (l *Locker) Lock(ctx context.Context, key string) (*Lease, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, err
	}
	defer l.calls.Done()
	if l.opts.fair {
		return l.lockFair(ctx, key)
	}
	names := l.keyNames(key)
	a := attempt{owner: rand.Text(), ask: true, manner: mannerPlain}
	if !l.sub.Waiting(names.lock) {
		if ls, _, err := l.tryAcquire(ctx, key, names, a); ls != nil || err != nil {
			return ls, err
		}
	}
	return l.lockFast(ctx, key, names, a)
}

// attempt is how one owner tries for a fast lock.
type attempt struct {
	owner  string
	ask    bool   // a Lock, whose failed attempts ask the holder to let go; not a TryLock
	manner string // mannerPlain, mannerPolite or mannerPastGrace
}

func (a attempt) args(ttlArg string) []string {
	ask := "0"
	if a.ask {
		ask = "1"
	}
	return []string{a.owner, ttlArg, ask, a.manner}
}

// lockFast is Lock's wait in fast mode: register for the key's releases,
// try again, and wait between tries. A polite attempt stays polite until a
// release is heard or its grace (WithPoliteGrace) has passed.
func (l *Locker) lockFast(ctx context.Context, key string, names keyNames, a attempt) (*Lease, error) {
	var graceEnd time.Time
	afterRelease := a // a release was heard: the asker had its turn
	if a.manner == mannerPolite {
		graceEnd = time.Now().Add(min(l.opts.politeGrace, l.opts.ttl))
		afterRelease.manner = mannerPastGrace
	}
	early := &earlyAttempt{l: l, cmd: acquireScript.command(false, names.fastKeys(), afterRelease.args(l.ttlArg)), sent: make(chan sentAttempt, 1)}
	w, err := l.sub.Watch(ctx, names.lock, subscriber.OnRelease(early.send))
	if err != nil {
		l.withdrawInBackground(key, names, a.owner, false)
		return nil, fmt.Errorf("lock %q: %w", key, err)
	}
	defer w.Close()
	var timer *time.Timer
	var sent *sentAttempt
	for {
		if a.manner == mannerPolite && !time.Now().Before(graceEnd) {
			a = afterRelease
		}
		var ls *Lease
		var remaining time.Duration
		if sent != nil && sent.pending != nil {
			ls, remaining, err = l.awaitAcquire(ctx, key, names, a, *sent)
		} else {
			ls, remaining, err = l.tryAcquire(ctx, key, names, a)
		}
		if err != nil && !mayHaveRun(err) {
			// acquired withdraws after an attempt that may have run.
			l.withdrawInBackground(key, names, a.owner, false)
		}
		if ls != nil || err != nil {
			return ls, err
		}
		if a.manner == mannerPolite {
			remaining = min(remaining, time.Until(graceEnd))
		}
		// A release we did not hear (a notification lost while the
		// subscriber reconnects, say) is caught when the TTL runs out.
		if timer == nil {
			timer = time.NewTimer(remaining)
			defer timer.Stop()
		} else {
			timer.Reset(remaining)
		}
		sent = nil
		early.armed.Store(true)
		var stop error
		select {
		case s := <-early.sent:
			sent = &s
			a = afterRelease
			// The wake-up that came with the hook is spent: left
			// pending, it would be handed to the next waiter for nothing.
			select {
			case <-w.Wake():
			default:
			}
		case <-w.Wake():
			a = afterRelease
		case <-timer.C:
		case <-ctx.Done():
			stop = ctx.Err()
		case <-l.closing:
			stop = ErrClosed
		}
		if sent == nil && !early.armed.CompareAndSwap(true, false) {
			// The release hook fired meanwhile: its attempt is on its way.
			s := <-early.sent
			sent = &s
			a = afterRelease
		}
		if stop != nil {
			l.withdrawInBackground(key, names, a.owner, sent != nil && sent.pending != nil)
			return nil, fmt.Errorf("lock %q: %w", key, stop)
		}
	}
}

// TryLock makes one attempt to acquire the lock for key and returns
// ErrNotAcquired if another owner holds it.
func (l *Locker) TryLock(ctx context.Context, key string) (*Lease, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, err
	}
	defer l.calls.Done()
	var ls *Lease
	var err error
	if l.opts.fair {
		ls, _, err = l.fairAttempt(ctx, key, l.keyNames(key), rand.Text(), 0, false)
	} else {
		ls, _, err = l.tryAcquire(ctx, key, l.keyNames(key), attempt{owner: rand.Text(), manner: mannerPlain})
	}
	if ls == nil && err == nil {
		return nil, fmt.Errorf("lock %q: %w", key, ErrNotAcquired)
	}
	return ls, err
}

// startAcquire checks a Lock or TryLock call and counts it in (see enter).
func (l *Locker) startAcquire(ctx context.Context, key string) error {
	if err := checkCall(ctx, key); err != nil {
		return err
	}
	if !l.enter() {
		return ErrClosed
	}
	return nil
}

// tryAcquire runs the acquire script once. It returns the lease, or how
// long to wait before trying again: the current holder's remaining TTL.
func (l *Locker) tryAcquire(ctx context.Context, key string, names keyNames, a attempt) (*Lease, time.Duration, error) {
	ls, remaining, _, err := l.tryAcquireThen(ctx, key, names, a, nil)
	return ls, remaining, err
}

// tryAcquireThen is tryAcquire with commands sent in the same write right
// after the attempt; their replies matter only if the attempt succeeded.
func (l *Locker) tryAcquireThen(ctx context.Context, key string, names keyNames, a attempt, after [][]string) (*Lease, time.Duration, []resp.Value, error) {
	start := time.Now()
	v, rest, err := runWith(ctx, l.client, acquireScript, false, names.fastKeys(), a.args(l.ttlArg), after)
	ls, remaining, err := l.acquired(key, names, a.owner, start, v, err)
	return ls, remaining, rest, err
}

// awaitAcquire collects the reply of an attempt the release hook sent.
func (l *Locker) awaitAcquire(ctx context.Context, key string, names keyNames, a attempt, s sentAttempt) (*Lease, time.Duration, error) {
	replies, err := s.pending.Wait(ctx)
	var v resp.Value
	if err == nil {
		v = replies[0]
		err = v.Err()
		if errors.Is(err, resp.NoScript) {
			return l.tryAcquire(ctx, key, names, a) // loads the script
		}
	}
	return l.acquired(key, names, a.owner, s.at, v, err)
}

// acquired reads the acquire script's reply.
func (l *Locker) acquired(key string, names keyNames, owner string, start time.Time, v resp.Value, err error) (*Lease, time.Duration, error) {
	if err != nil {
		if mayHaveRun(err) {
			// The script may have taken the lock for an owner who has
			// gone: undo it, after it on the same connection.
			l.withdrawInBackground(key, names, owner, true)
		}
		return nil, 0, fmt.Errorf("lock %q: acquire: %w", key, err)
	}
	if v.Type != resp.Integer {
		return nil, 0, fmt.Errorf("lock %q: acquire: unexpected reply %s", key, v)
	}
	switch {
	case v.Int > 0:
		ls := l.newLease(key, names, owner, uint64(v.Int), start)
		if ls == nil {
			l.releaseInBackground(key, names, owner)
			return nil, 0, ErrClosed
		}
		return ls, 0, nil
	case v.Int == 0: // held with no TTL: look again a TTL from now
		return nil, l.opts.ttl, nil
	default:
		return nil, time.Duration(-1-v.Int)*time.Millisecond + time.Millisecond, nil
	}
}

// mayHaveRun reports whether a failed call may still have run on the
// server: it was abandoned by its context after being queued, or its
// connection broke with it in flight.
func mayHaveRun(err error) bool {
	var uncertain *conn.UncertainError
	return errors.As(err, &uncertain) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
