// Package observing delivers a Locker's events to its observers: the
// queue and the goroutine that the observe package's doc describes.
package observing

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/observe"
)

// Queue holds events for its observers and delivers them, in order, from
// a goroutine of its own, started by Start and stopped by Close. Its
// Observe never blocks, so that it may be called from any goroutine, a
// lock's hot paths and the subscriber's reader among them.
//
// A full queue drops events, but never the end of a call or a lease whose
// start it queued (see Observe). So an observer that pairs them (spans,
// calls waiting, leases held) is never left with a start whose end was
// dropped. An end takes no room of QueueSize's: leases held for long, and
// calls that wait for long, must not leave the other events no room. A
// start still open at Close gets its end there (see Close).
type Queue struct {
	observers []observe.Observer // set once by Start
	mode      observe.Mode       // set once by StartFor: the Mode of events that name none
	wake      chan struct{}      // capacity 1: pending has become non-empty
	discard   atomic.Bool        // set by Close once its bound has passed: deliver no more
	closing   chan struct{}      // closed by Close once closed is set
	done      chan struct{}
	closeOnce sync.Once

	// waiting is how many events are queued, or taken by the deliverer
	// and not yet told, that count against QueueSize: all but ends.
	// Observe adds to it, holding mu; the deliverer takes from it, just
	// before it tells each, so that Observe may only see less room than
	// there is, never more.
	waiting atomic.Int64

	// mu orders the events into pending, and guards what says which
	// starts were queued.
	mu      sync.Mutex
	pending []observe.Event     // guarded by mu: queued, oldest first; taken whole by the deliverer
	open    map[pairing]started // guarded by mu: the starts queued whose end has not been
	dropped int                 // guarded by mu: events dropped since the last Dropped queued
	closed  bool                // guarded by mu: set by Close; nothing is queued after it
}

// pairing names a start and its end: a call's (CallBegan, CallEnded) or a
// lease's (LeaseGranted, LeaseEnded), by the call's number.
type pairing struct {
	lease bool
	call  uint64
}

// started is what a start queued says that its end repeats, kept for an
// end that Close makes (see Close): not the caller's context, which the
// queue must not keep.
type started struct {
	at    time.Time
	key   string
	token uint64
	op    observe.Op
	mode  observe.Mode
}

// Start starts a queue for observers, or returns nil if there are none:
// a nil *Queue observes nothing.
func Start(observers []observe.Observer) *Queue { return StartFor(0, observers) }

// StartFor is Start for a Locker of mode: the events that name no mode (a
// Subscriber's, which knows none, and Dropped) are given it.
func StartFor(mode observe.Mode, observers []observe.Observer) *Queue {
	if len(observers) == 0 {
		return nil
	}
	q := &Queue{
		mode:      mode,
		observers: observers,
		wake:      make(chan struct{}, 1),
		open:      map[pairing]started{},
		closing:   make(chan struct{}),
		done:      make(chan struct{}),
	}
	go q.deliver()
	return q
}

// Observe queues e, stamped with the time now if it has none, or drops
// and counts it if QueueSize events wait already. The count goes into the
// queue, as a Dropped event, ahead of the next event that finds room for
// both. The end of a start queued (CallEnded after its CallBegan,
// LeaseEnded after its LeaseGranted) is always queued, and takes no room:
// so the room a start needs is its own alone, and one held for long keeps
// none from the events after it. The end of a start dropped is dropped
// too. Events after Close are dropped.
func (q *Queue) Observe(e observe.Event) {
	if q == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Mode == 0 {
		e.Mode = q.mode
	}
	p, start, end := pairOf(e)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if end {
		if _, ok := q.open[p]; !ok {
			// Its start was dropped (or it ended already): an end
			// told alone would close what no observer opened, a
			// gauge of leases held would go below zero.
			q.dropped++
			return
		}
		delete(q.open, p)
		q.push(e)
		return
	}
	need := int64(1)
	if q.dropped > 0 {
		need++
	}
	if observe.QueueSize-q.waiting.Load() < need {
		q.dropped++
		return
	}
	if q.dropped > 0 {
		q.push(observe.Event{Kind: observe.Dropped, Time: e.Time, Mode: q.mode, Count: q.dropped})
		q.dropped = 0
	}
	if start {
		q.open[p] = started{at: e.Time, key: e.Key, token: e.Token, op: e.Op, mode: e.Mode}
	}
	q.push(e)
}

// push appends e to pending, counting it in waiting unless it is an end,
// and wakes the deliverer if pending was empty. The caller holds mu.
func (q *Queue) push(e observe.Event) {
	if !isEnd(e) {
		q.waiting.Add(1)
	}
	q.pending = append(q.pending, e)
	if len(q.pending) == 1 {
		select {
		case q.wake <- struct{}{}:
		default: // woken already
		}
	}
}

// pairOf says whether e starts or ends a call or a lease, and which.
func pairOf(e observe.Event) (p pairing, start, end bool) {
	if e.Call == 0 {
		return pairing{}, false, false
	}
	switch e.Kind {
	case observe.CallBegan:
		return pairing{call: e.Call}, true, false
	case observe.CallEnded:
		return pairing{call: e.Call}, false, true
	case observe.LeaseGranted:
		return pairing{lease: true, call: e.Call}, true, false
	case observe.LeaseEnded:
		return pairing{lease: true, call: e.Call}, false, true
	}
	return pairing{}, false, false
}

// isEnd reports whether e ends a call or a lease: an event that takes no
// room in the queue.
func isEnd(e observe.Event) bool {
	_, _, end := pairOf(e)
	return end
}

// Close delivers the events queued so far, stops the goroutine and waits
// for it. Delivery gets bound: the events still queued then are dropped,
// and Close waits only for the observer call in progress, which must
// return. It may be called more than once.
//
// A start queued whose end has not come (a Manager's Modify whose
// function still runs when its Locker closes, say) gets its end now, the
// latest start's first, so that no observer is left with a start that
// has no end: a CallEnded with unended as its error, a LeaseEnded for
// the reason Closed. The end that comes later is dropped, as every event
// after Close is.
func (q *Queue) Close(bound time.Duration, unended error) {
	if q == nil {
		return
	}
	q.closeOnce.Do(func() {
		q.mu.Lock()
		q.closed = true
		now := time.Now()
		if q.dropped > 0 {
			q.push(observe.Event{Kind: observe.Dropped, Time: now, Mode: q.mode, Count: q.dropped})
			q.dropped = 0
		}
		for _, p := range q.latestFirst() {
			s := q.open[p]
			e := observe.Event{Time: now, Call: p.call, Key: s.key, Mode: s.mode, Duration: now.Sub(s.at)}
			if p.lease {
				e.Kind, e.Token, e.Reason = observe.LeaseEnded, s.token, observe.Closed
			} else {
				e.Kind, e.Op, e.Err = observe.CallEnded, s.op, unended
			}
			q.push(e)
		}
		q.open = nil
		q.mu.Unlock()
		close(q.closing)
	})
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-q.done:
	case <-timer.C:
		q.discard.Store(true)
		<-q.done
	}
}

// latestFirst is the starts still open, the latest first, and of a call
// that obtained a lease at the moment it began, the lease first. The
// caller holds mu.
func (q *Queue) latestFirst() []pairing {
	ps := make([]pairing, 0, len(q.open))
	for p := range q.open {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b pairing) int {
		if c := q.open[b].at.Compare(q.open[a].at); c != 0 {
			return c
		}
		switch {
		case a.lease == b.lease:
			return 0
		case a.lease:
			return -1
		}
		return 1
	})
	return ps
}

func (q *Queue) deliver() {
	defer close(q.done)
	rest := time.NewTimer(time.Hour)
	rest.Stop()
	defer rest.Stop()
	var batch []observe.Event
	for {
		closing := false
		select {
		case <-q.wake:
		case <-q.closing:
			// Closed: nothing is queued after what this take gets.
			closing = true
		}
		batch = q.take(batch)
		if !q.tellAll(batch) || closing {
			return
		}
		// Rest a moment, so that the events of the next moment wait
		// in the queue and are taken as a batch: a deliverer woken for
		// each event would cost the process a goroutine wake-up for
		// each, on the cores the lock's callers use.
		rest.Reset(batchPause)
		select {
		case <-rest.C:
		case <-q.closing:
			rest.Stop()
		}
	}
}

// batchPause is how long the deliverer rests after a batch of events:
// how late an observer may hear of an event, at most, beyond the time
// it takes to deliver the ones before.
const batchPause = time.Millisecond

// take returns the events queued, in spare's place: the deliverer's
// buffer, told and cleared, becomes the queue's.
func (q *Queue) take(spare []observe.Event) []observe.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.pending
	q.pending = spare[:0]
	return batch
}

// tellAll tells batch to the observers, unless Close gave up on them, and
// clears it, so that it keeps no caller's context. It reports false once
// Close gave up.
func (q *Queue) tellAll(batch []observe.Event) bool {
	defer clear(batch)
	for _, e := range batch {
		if q.discard.Load() {
			return false
		}
		if !isEnd(e) {
			q.waiting.Add(-1)
		}
		q.tell(e)
	}
	return true
}

func (q *Queue) tell(e observe.Event) {
	for _, o := range q.observers {
		safely(o, e)
	}
}

// safely calls o with e, recovering a panic: an observer that panics
// loses the event, and the Locker goes on.
func safely(o observe.Observer, e observe.Event) {
	defer func() { _ = recover() }()
	o.Observe(e)
}

// Owned is a queue for a Subscriber's observer: the one given, if it is a
// Locker's Queue already (Open passes its own), which the Subscriber must
// not close; else a new one, which it must.
func Owned(o observe.Observer) (q *Queue, owns bool) {
	if given, ok := o.(*Queue); ok {
		return given, false
	}
	if o == nil {
		return nil, false
	}
	return Start([]observe.Observer{o}), true
}
