// Package observing delivers a Locker's events to its observers: the
// queue and the goroutine that the observe package's doc describes.
package observing

import (
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
// start it queued: each start queued keeps room for its end (see
// Observe). So an observer that pairs them (spans, calls waiting, leases
// held) is never left with a start whose end was dropped.
type Queue struct {
	observers []observe.Observer // set once by Start
	events    chan observe.Event
	discard   atomic.Bool // set by Close once its bound has passed: deliver no more
	closing   chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// mu orders the events into the channel, and guards the room kept
	// for ends. Observe holds it only to send without blocking.
	mu       sync.Mutex
	open     map[pairing]struct{} // guarded by mu: the starts queued whose end has not been
	reserved int                  // guarded by mu: len(open), the room kept in events for their ends
	dropped  int                  // guarded by mu: events dropped since the last Dropped queued
}

// pairing names a start and its end: a call's (CallBegan, CallEnded) or a
// lease's (LeaseGranted, LeaseEnded), by the call's number.
type pairing struct {
	lease bool
	call  uint64
}

// Start starts a queue for observers, or returns nil if there are none:
// a nil *Queue observes nothing.
func Start(observers []observe.Observer) *Queue {
	if len(observers) == 0 {
		return nil
	}
	q := &Queue{
		observers: observers,
		events:    make(chan observe.Event, observe.QueueSize),
		open:      map[pairing]struct{}{},
		closing:   make(chan struct{}),
		done:      make(chan struct{}),
	}
	go q.deliver()
	return q
}

// Observe queues e, stamped with the time now if it has none, or drops
// and counts it if the queue is full. The count goes into the queue, as a
// Dropped event, ahead of the next event that finds room for both. A
// start (CallBegan, LeaseGranted) is queued only if there is room for it
// and its end, the end of a start queued always finds room, and the end
// of a start dropped is dropped too. Events after Close are dropped.
func (q *Queue) Observe(e observe.Event) {
	if q == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	p, start, end := pairOf(e)
	q.mu.Lock()
	defer q.mu.Unlock()
	select {
	case <-q.closing:
		return
	default:
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
		q.reserved--
		q.send(e) // into the room its start kept
		return
	}
	need := 1
	if start {
		need = 2
	}
	if q.dropped > 0 {
		need++
	}
	if cap(q.events)-len(q.events)-q.reserved < need {
		q.dropped++
		return
	}
	if q.dropped > 0 {
		q.send(observe.Event{Kind: observe.Dropped, Time: e.Time, Count: q.dropped})
		q.dropped = 0
	}
	if start {
		q.open[p] = struct{}{}
		q.reserved++
	}
	q.send(e)
}

// send puts e in the channel, which has room for it (see Observe): only
// the deliverer takes from it meanwhile. The caller holds mu.
func (q *Queue) send(e observe.Event) {
	select {
	case q.events <- e:
	default:
		q.dropped++ // never, while the room is counted right
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

// Close delivers the events queued so far, stops the goroutine and waits
// for it. Delivery gets bound: the events still queued then are dropped,
// and Close waits only for the observer call in progress, which must
// return. It may be called more than once.
func (q *Queue) Close(bound time.Duration) {
	if q == nil {
		return
	}
	q.closeOnce.Do(func() { close(q.closing) })
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-q.done:
	case <-timer.C:
		q.discard.Store(true)
		<-q.done
	}
}

func (q *Queue) deliver() {
	defer close(q.done)
	rest := time.NewTimer(time.Hour)
	rest.Stop()
	defer rest.Stop()
	for {
		select {
		case e := <-q.events:
			if q.discard.Load() {
				return
			}
			q.tell(e)
			q.catchUp()
			// Rest a moment, so that the events of the next moment wait
			// in the channel and are taken as a batch: a deliverer woken
			// for each event would cost the process a goroutine wake-up
			// for each, on the cores the lock's callers use.
			rest.Reset(batchPause)
			select {
			case <-rest.C:
			case <-q.closing:
				rest.Stop()
			}
		case <-q.closing:
			q.drain()
			return
		}
	}
}

// batchPause is how long the deliverer rests after a batch of events:
// how late an observer may hear of an event, at most, beyond the time
// it takes to deliver the ones before.
const batchPause = time.Millisecond

// catchUp delivers what is queued, without waiting for more.
func (q *Queue) catchUp() {
	for {
		select {
		case e := <-q.events:
			if q.discard.Load() {
				return
			}
			q.tell(e)
		default:
			return
		}
	}
}

// drain delivers what is queued once Close has begun, and the count of
// the events dropped since the last Dropped.
func (q *Queue) drain() {
	for {
		select {
		case e := <-q.events:
			if q.discard.Load() {
				return
			}
			q.tell(e)
		default:
			q.mu.Lock()
			n := q.dropped
			q.dropped = 0
			q.mu.Unlock()
			if n > 0 {
				q.tell(observe.Event{Kind: observe.Dropped, Time: time.Now(), Count: n})
			}
			return
		}
	}
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
