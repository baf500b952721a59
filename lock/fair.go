package lock

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// lockFair queues for the lock and waits to be handed it. The hand-off
// arrives as a directed message carrying the fencing token; the same
// attempt, repeated every third of the queue lease and after a reconnect,
// renews the place in the queue and catches a hand-off whose message was
// lost.
func (l *Locker) lockFair(ctx context.Context, key string) (*Lease, error) {
	ls, _, err := l.lockFairThen(ctx, key, nil)
	return ls, err
}

// lockFairThen is lockFair with commands sent in the same write as the
// first attempt. It returns their replies if that attempt took the lock,
// and nil replies otherwise.
func (l *Locker) lockFairThen(ctx context.Context, key string, after [][]string) (*Lease, []resp.Value, error) {
	names := l.keyNames(key)
	owner := rand.Text()
	w, err := l.sub.Directed()
	if err != nil {
		return nil, nil, fmt.Errorf("lock %q: %w", key, err)
	}
	defer w.Close()
	ls, seen, replies, err := l.fairAttemptThen(ctx, key, names, owner, w.ID(), true, after)
	if ls != nil || err != nil {
		return ls, replies, err
	}
	ls, err = l.waitFair(ctx, key, names, owner, w, seen)
	return ls, nil, err
}

// waitFair waits, queued, for the hand-off, renewing the queue entry.
// queuedAfter is the last fencing token handed out when the caller queued.
func (l *Locker) waitFair(ctx context.Context, key string, names keyNames, owner string, w *subscriber.Waiter, queuedAfter uint64) (*Lease, error) {
	var timer *time.Timer
	for {
		if timer == nil {
			timer = time.NewTimer(l.opts.queueLease / 3)
			defer timer.Stop()
		} else {
			timer.Reset(l.opts.queueLease / 3)
		}
		select {
		case <-w.Wake():
			if fence, ok := handedFence(w.TakeMessage()); ok {
				ls, err := l.handedLease(key, names, owner, fence)
				if ls != nil {
					ls.queuedAfter = queuedAfter
				}
				return ls, err
			}
			// A reconnect: the hand-off may have been missed; look.
		case <-timer.C:
		case <-ctx.Done():
			// Leave the queue, and pass on a hand-off that raced the
			// cancel.
			l.releaseInBackground(key, names, owner)
			return nil, fmt.Errorf("lock %q: %w", key, ctx.Err())
		case <-l.closing:
			l.releaseInBackground(key, names, owner)
			return nil, fmt.Errorf("lock %q: %w", key, ErrClosed)
		}
		ls, seen, err := l.fairAttempt(ctx, key, names, owner, w.ID(), true)
		if ls != nil || err != nil {
			if ls != nil {
				ls.queuedAfter = queuedAfter
			}
			return ls, err
		}
		if queuedAfter == 0 {
			queuedAfter = seen
		}
	}
}

// fairAttempt runs the fair acquire script once: it takes the lock if it is
// free and nobody is queued, and otherwise queues the caller (when queue
// is set) or renews its place.
// It also returns, when not acquired, the last fencing token handed out.
func (l *Locker) fairAttempt(ctx context.Context, key string, names keyNames, owner string, id uint64, queue bool) (*Lease, uint64, error) {
	ls, seen, _, err := l.fairAttemptThen(ctx, key, names, owner, id, queue, nil)
	return ls, seen, err
}

// fairAttemptThen is fairAttempt with commands sent in the same write right
// after the attempt; their replies matter only if the attempt succeeded.
func (l *Locker) fairAttemptThen(ctx context.Context, key string, names keyNames, owner string, id uint64, queue bool, after [][]string) (*Lease, uint64, []resp.Value, error) {
	queueArg := "0"
	if queue {
		queueArg = "1"
	}
	start := time.Now()
	v, rest, err := runWith(ctx, l.client, fairAcquireScript, false, names.fairKeys(),
		[]string{owner, l.ttlArg, strconv.FormatUint(id, 10), l.sub.Channel(), l.queueLeaseArg, queueArg}, after)
	ls, seen, err := l.fairAcquired(key, names, owner, start, v, err)
	return ls, seen, rest, err
}

// fairAcquired reads the fair acquire script's reply.
func (l *Locker) fairAcquired(key string, names keyNames, owner string, start time.Time, v resp.Value, err error) (*Lease, uint64, error) {
	if err != nil {
		if mayHaveRun(err) {
			l.releaseInBackground(key, names, owner)
		}
		return nil, 0, fmt.Errorf("lock %q: acquire: %w", key, err)
	}
	if len(v.Elems) < 2 || v.Elems[0].Type != resp.Integer || v.Elems[1].Type != resp.Integer {
		return nil, 0, fmt.Errorf("lock %q: acquire: unexpected reply %s", key, v)
	}
	if v.Elems[0].Int != 1 {
		var seen uint64
		if len(v.Elems) == 3 {
			seen = uint64(v.Elems[2].Int)
		}
		return nil, seen, nil
	}
	ls := l.newLease(key, names, owner, uint64(v.Elems[1].Int), start)
	if ls == nil {
		l.releaseInBackground(key, names, owner)
		return nil, 0, ErrClosed
	}
	return ls, 0, nil
}

// handedLease is the lease for a hand-off just heard of. The lock's TTL
// started when the releaser's script ran, a moment before the message
// arrived: the lease's deadline, counted from now, is that much late.
func (l *Locker) handedLease(key string, names keyNames, owner string, fence uint64) (*Lease, error) {
	ls := l.newLease(key, names, owner, fence, time.Now())
	if ls == nil {
		l.releaseInBackground(key, names, owner)
		return nil, ErrClosed
	}
	return ls, nil
}

// handedFence reads the fencing token from a hand-off message.
func handedFence(message string) (uint64, bool) {
	if message == "" {
		return 0, false
	}
	fence, err := strconv.ParseUint(message, 10, 64)
	return fence, err == nil && fence > 0
}
