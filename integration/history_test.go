package integration_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// An event is one line of a history log. Every process (the test's own,
// and each worker) appends its events to a file of its own as they
// happen, one write each, so that a process killed mid-operation leaves
// every event it got to. Times are CLOCK_MONOTONIC nanoseconds (now),
// shared by all the processes of one machine.
type event struct {
	Kind  string `json:"k"`           // one of the kind* constants
	Op    string `json:"op"`          // the operation's ID, unique in the run
	Token string `json:"t,omitempty"` // the lock and state the operation is about
	Time  int64  `json:"at"`
	// Old is the count fn saw (kindSeen), or the count read (kindRead).
	Old int `json:"old,omitempty"`
	// Outcome ends a modify (kindDone): one of the outcome* constants.
	Outcome string `json:"out,omitempty"`
	// Fence is the fencing token of a lease (kindLeased).
	Fence uint64 `json:"fence,omitempty"`
	// Err is the error a call returned (kindDone), for the log.
	Err string `json:"err,omitempty"`
	// Ack marks a call whose acquire was refused (kindDone): its error
	// matched lock.ErrNotAcquired, which a Lock or a Modify returns only
	// when WithReplicaAck's replicas did not acknowledge the acquire.
	Ack bool `json:"ack,omitempty"`
	// Lock marks the end of a Lock with its Unlock, not of a Modify
	// (kindDone).
	Lock bool `json:"lock,omitempty"`
	// Panic is what a call that panicked panicked with, and where
	// (kindDone).
	Panic string `json:"panic,omitempty"`
	// Fault names a fault (kindFault).
	Fault string `json:"fault,omitempty"`
}

const (
	kindCall       = "call"        // a Modify or Lock is called
	kindSeen       = "seen"        // Modify's fn got Old (the last one counts)
	kindDone       = "done"        // a Modify returned
	kindLeased     = "leased"      // a Lock returned a lease with Fence
	kindReleased   = "released"    // its Unlock, called at Time, succeeded
	kindRead       = "read"        // a final read returned Old
	kindResetStart = "reset-start" // the server is about to lose its data
	kindResetEnd   = "reset-end"   // the server answers again, empty
	kindFault      = "fault"       // a fault of kind Fault was injected

	outcomeOK        = "ok"        // the write-back landed
	outcomeUncertain = "uncertain" // conn.UncertainError: it may have landed
	outcomeFailed    = "failed"    // any other error: nothing was written
)

// recorder appends events to one log file.
type recorder struct {
	mu   sync.Mutex // serializes writes, so that lines do not interleave
	f    *os.File
	err  error // the first write error; guarded by mu
	name string
	seq  int // guarded by mu
}

// newRecorder creates dir/name.log; name also prefixes its operation IDs.
func newRecorder(dir, name string) (*recorder, error) {
	f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &recorder{f: f, name: name}, nil
}

// newOp returns a fresh operation ID.
func (r *recorder) newOp() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	return fmt.Sprintf("%s/%d", r.name, r.seq)
}

// add stamps e with the time, unless it has one, and appends it.
func (r *recorder) add(e event) {
	if e.Time == 0 {
		e.Time = now()
	}
	line, err := json.Marshal(e)
	if err != nil {
		panic(err) // an event always marshals
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(line, '\n')); err != nil && r.err == nil {
		r.err = err
	}
}

// close closes the file and returns the first error of any write.
func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.f.Close(); err != nil && r.err == nil {
		r.err = err
	}
	if r.err != nil {
		return fmt.Errorf("history %s: %w", r.name, r.err)
	}
	return nil
}

// readHistory reads every *.log of dir. A last line cut short by a kill
// is dropped: its event did not finish being recorded.
func readHistory(dir string) ([]event, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	var events []event
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				continue
			}
			events = append(events, e)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time < events[j].Time })
	return events, nil
}

// modifyOp is one Modify, as its events tell it.
type modifyOp struct {
	id, token string
	call, ret int64 // ret is math.MaxInt64 while the outcome is unknown
	old       int
	seen      bool
	outcome   string
	err       string // the error Modify returned, for the log
}

// leaseOp is one Lock that returned a lease.
type leaseOp struct {
	token     string
	call, ret int64
	fence     uint64
	// unlock is when the Unlock that succeeded was called; 0 when it
	// failed or never came. The lock was this lease's from ret to unlock.
	unlock int64
}

// reset is a window in which the server lost its data.
type reset struct{ start, end int64 }

// callEnd is one call, a Modify or a Lock with its Unlock, that returned.
type callEnd struct {
	id, token string
	call, ret int64
	outcome   string
	err       string // the error it returned, for the log
	ack       bool   // its acquire was refused for want of replicas (lock.ErrNotAcquired)
	lock      bool   // a Lock with its Unlock, not a Modify
}

// parsed is a history sorted out into operations.
type parsed struct {
	modifies []*modifyOp
	leases   []leaseOp
	reads    []modifyOp // final reads: old is the count read
	resets   []reset
	faults   map[string]int
	// longestCall is the longest any Modify, or Lock with its Unlock,
	// took from call to return; longest is that call's end.
	longestCall time.Duration
	longest     event
	// faultTimes are the faults in the order they struck.
	faultTimes []event
	// ends are the calls that returned, in the order they returned.
	ends []callEnd
	// panics are the ends of the calls that panicked.
	panics []event
}

// parse sorts events into operations. A Modify whose process died before
// it returned (no kindDone) is uncertain if its fn ran, and dropped if not:
// without fn nothing could be written.
func parse(events []event) parsed {
	p := parsed{faults: map[string]int{}}
	byID := map[string]*modifyOp{}
	calls := map[string]int64{}
	leases := map[string]int{} // operation ID -> index in p.leases
	var resetStart int64
	for _, e := range events {
		switch e.Kind {
		case kindCall:
			calls[e.Op] = e.Time
		case kindSeen:
			op := byID[e.Op]
			if op == nil {
				op = &modifyOp{id: e.Op, token: e.Token, call: calls[e.Op], ret: math.MaxInt64, outcome: outcomeUncertain}
				byID[e.Op] = op
				p.modifies = append(p.modifies, op)
			}
			op.old, op.seen = e.Old, true
		case kindDone:
			if call, ok := calls[e.Op]; ok && time.Duration(e.Time-call) > p.longestCall {
				p.longestCall, p.longest = time.Duration(e.Time-call), e
			}
			if e.Panic != "" {
				p.panics = append(p.panics, e)
			}
			p.ends = append(p.ends, callEnd{id: e.Op, token: e.Token, call: calls[e.Op], ret: e.Time, outcome: e.Outcome, err: e.Err, ack: e.Ack, lock: e.Lock})
			if op := byID[e.Op]; op != nil {
				op.outcome, op.err = e.Outcome, e.Err
				if e.Outcome != outcomeUncertain {
					op.ret = e.Time
				}
			}
		case kindLeased:
			leases[e.Op] = len(p.leases)
			p.leases = append(p.leases, leaseOp{token: e.Token, call: calls[e.Op], ret: e.Time, fence: e.Fence})
		case kindReleased:
			if i, ok := leases[e.Op]; ok {
				p.leases[i].unlock = e.Time
			}
		case kindRead:
			p.reads = append(p.reads, modifyOp{id: e.Op, token: e.Token, call: calls[e.Op], ret: e.Time, old: e.Old})
		case kindResetStart:
			resetStart = e.Time
		case kindResetEnd:
			p.resets = append(p.resets, reset{resetStart, e.Time})
		case kindFault:
			p.faults[e.Fault]++
			p.faultTimes = append(p.faultTimes, e)
		}
	}
	return p
}

// aboutLongest tells of the longest call: how it ended, and the faults
// that struck from a few seconds before it began to its end.
func (p parsed) aboutLongest() string {
	e := p.longest
	began := e.Time - int64(p.longestCall)
	s := fmt.Sprintf("longest call %s on %s: %v, %s %s", e.Op, e.Token, p.longestCall.Round(time.Millisecond), e.Outcome, e.Err)
	for _, f := range p.faultTimes {
		if f.Time >= began-int64(3*time.Second) && f.Time <= e.Time {
			s += fmt.Sprintf("; %s at %+v", f.Fault, time.Duration(f.Time-began).Round(time.Millisecond))
		}
	}
	return s
}
