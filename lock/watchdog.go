package lock

import (
	"context"
	"errors"
	"time"
)

// watchdog extends the lease every TTL/3 until stop is closed, the first
// time after first (see firstExtension). A failed extension is retried at
// the same pace while the lease has time left; an extension that finds
// the lock gone ends the lease (Extend does that), and so does running
// out of time.
// firstExtension is how long from now the watchdog of a lease just
// granted first extends it: when two thirds of a TTL are left, TTL/3
// after an acquire, sooner for a lease that a hand-off's message made,
// which counts from its first ask and may start with half its TTL gone.
// It is taken from the deadline the grant set, before the watchdog's
// goroutine starts: read there, it would follow an Extend that the
// caller made before the goroutine first ran, and a shorter TTL asked
// for would have the watchdog extend the lease to a full one at once.
// Only the lease's own goroutine has the lease yet, so mu is not needed.
func (ls *Lease) firstExtension() time.Duration {
	ttl := ls.c.l.opts.TTL
	return time.Until(ls.deadline) - (ttl - ttl/3)
}

func (ls *Lease) watchdog(stop <-chan struct{}, first time.Duration) {
	defer ls.c.l.background.Done()
	ttl := ls.c.l.opts.TTL
	interval := ttl / 3
	timer := time.NewTimer(max(first, 0))
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		err := ls.Extend(ctx, ttl)
		cancel()
		if errors.Is(err, ErrNotHeld) {
			return
		}
		if err != nil && !errors.Is(err, ErrClosed) {
			// Told before the lease can end for it. A Close under way
			// refuses extensions, and releases the lease: no failure.
			ls.extendFailed(err)
		}
		ls.mu.Lock()
		// A Close under way refusing the extension is no failure: a
		// lease that runs out meanwhile ran out, as without a watchdog.
		ls.extendFailing = err != nil && !errors.Is(err, ErrClosed)
		left := time.Until(ls.deadline)
		// Ended in the hold that saw the deadline pass (see
		// runOutLocked), for ExtensionFailed, as extendFailing says.
		ranOut := err != nil && left <= 0 && ls.runOutLocked()
		ls.mu.Unlock()
		if err != nil {
			if left <= 0 {
				if ranOut {
					ls.c.releaseInBackground()
				}
				return
			}
			timer.Reset(min(interval, left))
			continue
		}
		timer.Reset(interval)
	}
}
