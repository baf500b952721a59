package lock

import (
	"context"
	"errors"
	"time"
)

// watchdog extends the lease every TTL/3 until stop is closed, the first
// time when two thirds of a TTL are left: TTL/3 after an acquire, sooner
// for a lease that a hand-off's message made, which counts from its first
// ask and may start with half its TTL gone. A failed extension is retried
// at the same pace while the lease has time left; an extension that finds
// the lock gone ends the lease (Extend does that), and so does running
// out of time.
func (ls *Lease) watchdog(stop <-chan struct{}) {
	defer ls.c.l.background.Done()
	ttl := ls.c.l.opts.TTL
	interval := ttl / 3
	ls.mu.Lock()
	first := time.Until(ls.deadline) - (ttl - interval)
	ls.mu.Unlock()
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
		if err != nil {
			ls.mu.Lock()
			left := time.Until(ls.deadline)
			ls.mu.Unlock()
			if left <= 0 {
				ls.expire()
				return
			}
			timer.Reset(min(interval, left))
			continue
		}
		timer.Reset(interval)
	}
}
