package manager

import (
	"context"
	"errors"
)

// cut is the context of one Modify's acquire, which ends when the
// caller's does or when Close begins (see untilClose).
type cut struct {
	ctx context.Context
	// cancel ends ctx, where ctx is a context of its own; its slot in
	// Manager.cuts is slot. Nil otherwise.
	cancel context.CancelFunc
	slot   int
}

// untilClose returns the context for an acquire under ctx: ctx, ended
// also when Close begins, so that a wait for a lock held elsewhere ends
// then, and the Locker withdraws the claim (and releases what it may have
// taken) as it does for any Lock whose context ends. It returns false if
// Close has begun. The caller passes the cut to endCut once the acquire
// has returned.
//
// A context that can end costs conn a watch of it on every reply the
// acquire reads (see conn's package doc), where one that cannot end costs
// none; and a context of one's own costs allocations. So the cheapest cut
// is taken: the Manager's own context, which Close cancels, for
// context.Background and context.TODO, which carry nothing; a small
// wrapper of it, for another context that cannot end, which keeps its
// values; and only for a context that can end, one of its own, which
// Close cancels too, from a slot in Manager.cuts: context.AfterFunc on
// closed would cost three allocations more. Measured on an uncontended
// Modify without hold, the cut costs 2 allocations for
// context.Background (conn's watch), 3 for a context with values, and 5
// for a context that can end.
func (m *Manager[T]) untilClose(ctx context.Context) (cut, bool) {
	if ctx.Done() == nil {
		if ctx == context.Background() || ctx == context.TODO() {
			return cut{ctx: m.closed}, true
		}
		if _, ok := ctx.Deadline(); !ok {
			return cut{ctx: &closedWithValues{Context: m.closed, values: ctx}}, true
		}
	}
	c, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		cancel()
		return cut{}, false
	}
	slot := len(m.cuts)
	if n := len(m.free); n > 0 {
		slot = m.free[n-1]
		m.free = m.free[:n-1]
		m.cuts[slot] = cancel
	} else {
		m.cuts = append(m.cuts, cancel)
	}
	return cut{ctx: c, cancel: cancel, slot: slot}, true
}

// endCut frees what untilClose took for c.
func (m *Manager[T]) endCut(c cut) {
	if c.cancel == nil {
		return
	}
	c.cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return // Close took the cuts
	}
	m.cuts[c.slot] = nil
	m.free = append(m.free, c.slot)
}

// cutByClose reports whether the error of an acquire made under
// untilClose(ctx) is Close's doing: the cut ended it, not ctx.
func (m *Manager[T]) cutByClose(ctx context.Context, err error) bool {
	return ctx.Err() == nil && m.closed.Err() != nil && errors.Is(err, context.Canceled)
}

// closedWithValues is the Manager's closed context, which ends when Close
// begins, with the values of a context that cannot end. Its Value looks in
// values first, and then in closed, whose own answers (to package
// context's look-up of the cancelable context beneath) let a context
// derived from it be canceled with closed, with no goroutine to watch it.
type closedWithValues struct {
	context.Context // the Manager's closed: Deadline, Done, Err
	values          context.Context
}

func (c *closedWithValues) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}
