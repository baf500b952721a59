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
type Queue struct {
	observers []observe.Observer // set once by Start
	events    chan observe.Event
	dropped   atomic.Int64 // events that found events full since the last Dropped
	discard   atomic.Bool  // set by Close once its bound has passed: deliver no more
	closing   chan struct{}
	done      chan struct{}
	closeOnce sync.Once
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
		closing:   make(chan struct{}),
		done:      make(chan struct{}),
	}
	go q.deliver()
	return q
}

// Observe queues e, stamped with the time now if it has none, or drops
// and counts it if the queue is full. The count goes into the queue, as a
// Dropped event, ahead of the next event that finds room. Events after
// Close are dropped.
func (q *Queue) Observe(e observe.Event) {
	if q == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	select {
	case <-q.closing:
		return
	default:
	}
	if n := q.dropped.Swap(0); n > 0 {
		select {
		case q.events <- observe.Event{Kind: observe.Dropped, Time: e.Time, Count: int(n)}:
		default:
			q.dropped.Add(n + 1)
			return
		}
	}
	select {
	case q.events <- e:
	default:
		q.dropped.Add(1)
	}
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
	for {
		select {
		case e := <-q.events:
			if q.discard.Load() {
				return
			}
			q.tell(e)
		case <-q.closing:
			q.drain()
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
			if n := q.dropped.Swap(0); n > 0 {
				q.tell(observe.Event{Kind: observe.Dropped, Time: time.Now(), Count: int(n)})
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
