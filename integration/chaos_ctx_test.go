package integration_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// opCtx is the context of one call of a chaos run, with the moment it
// ended on the shared clock: its deadline, or when it was cancelled (at
// random during the call, or by a Close of its Locker's generation that
// cancels the calls in flight first).
type opCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
	// deadline is when the timeout ends the context, on the shared
	// clock; 0 without one. It is read just before the context is made,
	// so it errs early, never late.
	deadline  int64
	cancelled atomic.Int64 // when cancelNow first ran; 0 before
	// stopped and canceller belong to the goroutine that cancels at a
	// random moment, nil without one.
	stopped   chan struct{}
	canceller sync.WaitGroup
	unlist    func() // takes the context off its generation's list of calls in flight
}

// A ctxShape is a distribution of contexts: weights for an already
// cancelled context, for each timeout, and for none.
type ctxShape struct {
	cancelled int
	timeouts  []weighted[time.Duration]
	none      int
	// cancelShare of the contexts with a timeout are also cancelled at a
	// random moment within it (within cancelWithin at most).
	cancelShare  float64
	cancelWithin time.Duration
}

type weighted[T any] struct {
	w int
	v T
}

// pick chooses one v by weight.
func pick[T any](rng *rand.Rand, choices ...weighted[T]) T {
	total := 0
	for _, c := range choices {
		total += c.w
	}
	n := rng.IntN(total)
	for _, c := range choices {
		if n < c.w {
			return c.v
		}
		n -= c.w
	}
	panic("unreachable")
}

// The contexts of each kind of call: acquires get very short and
// cancelled ones often; releases mostly enough time, sometimes not.
var (
	acquireCtx = ctxShape{
		cancelled: 4,
		timeouts: []weighted[time.Duration]{
			{8, time.Microsecond}, {8, 100 * time.Microsecond}, {8, time.Millisecond}, {12, 10 * time.Millisecond},
			{20, 100 * time.Millisecond}, {25, time.Second}, {15, 3 * time.Second},
		},
		cancelShare: 0.2, cancelWithin: time.Second,
	}
	leaseCallCtx = ctxShape{
		cancelled: 3,
		timeouts: []weighted[time.Duration]{
			{5, time.Microsecond}, {5, time.Millisecond}, {10, 20 * time.Millisecond}, {40, time.Second}, {30, 3 * time.Second},
		},
		none:        7,
		cancelShare: 0.1, cancelWithin: 20 * time.Millisecond,
	}
	modifyCtx = ctxShape{
		cancelled: 3,
		timeouts: []weighted[time.Duration]{
			{5, time.Microsecond}, {5, time.Millisecond}, {5, 2 * time.Millisecond}, {5, 5 * time.Millisecond},
			{10, 10 * time.Millisecond}, {20, 100 * time.Millisecond},
			{30, time.Second}, {25, 3 * time.Second},
		},
		cancelShare: 0.1, cancelWithin: 50 * time.Millisecond,
	}
)

// newOpCtx makes a context of shape s for a call on generation g, listed
// there so that a Close may cancel it first. release must be called once
// the call returned.
func newOpCtx(rng *rand.Rand, s ctxShape, g *generation) *opCtx {
	choices := []weighted[int]{{s.cancelled, -1}, {s.none, -2}}
	for i, t := range s.timeouts {
		choices = append(choices, weighted[int]{t.w, i})
	}
	o := &opCtx{}
	switch c := pick(rng, choices...); c {
	case -1:
		o.ctx, o.cancel = context.WithCancel(context.Background())
		o.cancelNow()
	case -2:
		o.ctx, o.cancel = context.WithCancel(context.Background())
	default:
		d := s.timeouts[c].v
		o.deadline = now() + int64(d)
		o.ctx, o.cancel = context.WithTimeout(context.Background(), d)
		if rng.Float64() < s.cancelShare {
			at := time.Duration(rng.Int64N(int64(min(d, s.cancelWithin)) + 1))
			o.stopped = make(chan struct{})
			o.canceller.Go(func() {
				t := time.NewTimer(at)
				defer t.Stop()
				select {
				case <-t.C:
					o.cancelNow()
				case <-o.stopped:
				}
			})
		}
	}
	if g != nil {
		o.unlist = g.list(o)
	}
	return o
}

// cancelNow cancels the context, noting when.
func (o *opCtx) cancelNow() {
	o.cancelled.CompareAndSwap(0, now())
	o.cancel()
}

// endedBy is when the context ended, if it did by ret; 0 if not.
func (o *opCtx) endedBy(ret int64) int64 {
	end := int64(0)
	if o.deadline != 0 && o.deadline <= ret {
		end = o.deadline
	}
	if c := o.cancelled.Load(); c != 0 && c <= ret && (end == 0 || c < end) {
		end = c
	}
	return end
}

// release stops the random cancel, if any, and waits for it, then
// cancels the context and takes it off its generation's list.
func (o *opCtx) release() {
	if o.stopped != nil {
		close(o.stopped)
		o.canceller.Wait()
	}
	o.cancel()
	if o.unlist != nil {
		o.unlist()
	}
}
