package observing

import (
	"sync"

	"github.com/batonlock/baton/observe"
)

// Recorder is an observer that keeps every event it is told, for tests
// that check what a Locker reported. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []observe.Event // guarded by mu
}

// Observe keeps e.
func (r *Recorder) Observe(e observe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// All is the events kept so far, in order.
func (r *Recorder) All() []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observe.Event(nil), r.events...)
}

// Kinds is the kinds of the events kept so far, of call if it is not
// zero.
func (r *Recorder) Kinds(call uint64) []observe.Kind {
	var ks []observe.Kind
	for _, e := range r.All() {
		if call == 0 || e.Call == call {
			ks = append(ks, e.Kind)
		}
	}
	return ks
}

// Of is the events kept so far of kind k.
func (r *Recorder) Of(k observe.Kind) []observe.Event {
	var es []observe.Event
	for _, e := range r.All() {
		if e.Kind == k {
			es = append(es, e)
		}
	}
	return es
}
