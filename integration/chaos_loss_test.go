package integration_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonlock/baton/observe"
)

// overwriteValue is what the lose-lock fault overwrites a lock with: a
// value no owner token has.
const overwriteValue = "chaos-overwritten"

// loseLock is the lose-lock fault: it deletes (DEL) or overwrites (SET,
// to overwriteValue for 20 to 300ms) the lock of one of the round's keys
// that a lease holds, from a plain connection to the key's node, as a
// client that ignores the lock would. The lease must hear of it: its
// Done must close within lossBound, with a cause that matches
// lock.ErrLost (see checkLosses).
//
// The lock's value and its fencing counter are read in the same
// transaction (MULTI) as the DEL or SET, so that the record names the
// lease struck: the holder's token is the last one issued, since every
// grant sets the lock and issues its token in one script. r.Call is set
// just before the transaction is sent: the delays the checks measure
// run from then, which errs long by the time the command takes to reach
// the server. Where the Lockers wait for replicas (WithReplicaAck), a
// WAIT follows, so that a failover cannot bring back a lock whose lease
// has ended lost, and leave it held past the round.
func (f *faulter) loseLock(r *chaosRecord) error {
	// A paused server would hold the DEL until the pause ends, and the
	// delay measured from the fault would count the pause.
	time.Sleep(time.Until(f.pausedUntil))
	how := pick(f.rng, weighted[string]{1, "del"}, weighted[string]{1, "overwrite"})
	for _, i := range f.rng.Perm(len(f.keys)) {
		key := f.keys[i]
		lockKey := "baton:{" + key + "}"
		addr := f.target.at(key)
		if v, err := f.target.do(addr, "GET", lockKey); err != nil || v.IsNull() || v.Str == overwriteValue {
			continue
		}
		r.Note = fmt.Sprintf("lose-lock %s %s", how, key)
		if len(f.target.nodes()) > 1 {
			r.Note += " on " + addr
		}
		strike := []string{"DEL", lockKey}
		if how == "overwrite" {
			ms := 20 + f.rng.IntN(280)
			r.Note += fmt.Sprintf(" for %dms", ms)
			strike = []string{"SET", lockKey, overwriteValue, "XX", "PX", strconv.Itoa(ms)}
		}
		cmds := [][]string{{"MULTI"}, {"GET", lockKey}, {"GET", lockKey + ":fence"}, strike, {"EXEC"}}
		if f.target.acks > 0 {
			cmds = append(cmds, []string{"WAIT", strconv.Itoa(f.target.acks), "1000"})
		}
		s, err := dialAdmin(addr, f.target.pass)
		if err != nil {
			return err
		}
		defer s.close()
		r.Call = now()
		replies, err := s.do(cmds...)
		if err != nil {
			return err
		}
		exec := replies[4].Elems
		if len(exec) != 3 {
			return fmt.Errorf("EXEC: %v", replies[4])
		}
		if exec[0].IsNull() || exec[0].Str == overwriteValue {
			r.Note += ": no lock held by then"
			return nil
		}
		r.Key = key
		r.Fence, err = strconv.ParseUint(exec[1].Str, 10, 64)
		return err
	}
	r.Note = "lose-lock: no lock held"
	return nil
}

// genObserver is the observer of one Locker generation: it passes every
// event on to its process's (chaosProc.Observe), and records what the
// checks of lost locks need (checkLosses): each lease that ended lost on
// the server (recLost), a Modify's too, and each time a subscribe
// connection was down (recOutage), since a loss is heard of only once
// the connection is back.
type genObserver struct {
	p  *chaosProc
	id string // the generation's

	mu sync.Mutex // guards the fields below
	// granted is when each lease held now was granted, by its call.
	granted map[uint64]time.Time
	// down is when each subscribe connection down now broke, on the
	// shared clock, oldest first.
	down   []int64
	closed bool
}

func newGenObserver(p *chaosProc, id string) *genObserver {
	return &genObserver{p: p, id: id, granted: map[uint64]time.Time{}}
}

// lossReasons are the reasons a lease ends for when its lock was lost
// on the server before its deadline.
var lossReasons = map[observe.Reason]bool{
	observe.Lost: true, observe.Removed: true, observe.Overwritten: true, observe.Flushed: true, observe.Vanished: true,
}

// sharedClock is t, a time.Time this process read, on the shared clock
// (now), by the monotonic clock both read.
func sharedClock(t time.Time) int64 { return now() - int64(time.Since(t)) }

func (o *genObserver) Observe(e observe.Event) {
	o.p.Observe(e)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	switch e.Kind {
	case observe.LeaseGranted:
		o.granted[e.Call] = e.Time
	case observe.LeaseEnded:
		at, ok := o.granted[e.Call]
		delete(o.granted, e.Call)
		if !lossReasons[e.Reason] {
			return
		}
		// A lease's Duration runs from its grant to its end, but for one
		// that ran out, which is no loss. Without the grant's event
		// (dropped with it, see observe's package doc), when it was
		// heard of, a moment later.
		end := now()
		if ok {
			end = sharedClock(at.Add(e.Duration))
		}
		o.p.rec.add(chaosRecord{Kind: recLost, ID: o.p.rec.newID(o.id + ".lost"), Actor: o.id, Key: e.Key, Fence: e.Token,
			Call: end, Ret: end, Note: e.Reason.String()})
	case observe.ConnectionLost:
		o.down = append(o.down, sharedClock(e.Time))
	case observe.Reconnected:
		if len(o.down) == 0 {
			return
		}
		// Reconnected comes with how long the connection was down, and
		// without a time: with one connection down that is all it takes;
		// with several (a cluster's Subscribers), which one is back is
		// not said, and the moment it is heard of, a little late, stands
		// for it.
		back := now()
		if len(o.down) == 1 {
			back = min(back, o.down[0]+int64(e.Duration))
		}
		o.outageLocked(o.down[0], back)
		o.down = o.down[1:]
	}
}

func (o *genObserver) outageLocked(from, to int64) {
	o.p.rec.add(chaosRecord{Kind: recOutage, ID: o.p.rec.newID(o.id + ".outage"), Actor: o.id, Call: from, Ret: to,
		Note: "a subscribe connection down"})
}

// close records the connections still down as never back; it is called
// once the generation's Locker has closed (or failed to open), and its
// events have all come.
func (o *genObserver) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, from := range o.down {
		o.outageLocked(from, 0)
	}
	o.down, o.closed = nil, true
}

// isLoseLock reports whether r is a lose-lock fault that struck a lease.
func isLoseLock(r chaosRecord) bool {
	return r.Kind == recFault && r.Fence != 0 && strings.HasPrefix(r.Note, "lose-lock ")
}
