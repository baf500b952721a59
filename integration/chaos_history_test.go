package integration_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// A chaosRecord is one finished thing of a chaos run: a call with its
// start and end, a lease from its grant to its end, a fault, a finding of
// a check made while the run went on. Every process (the test's own, and
// each worker) appends its records to a file of its own, dir/<proc>.chaos,
// one line each, once the thing is over. Times are CLOCK_MONOTONIC
// nanoseconds (now), one clock for every process of the machine.
type chaosRecord struct {
	Kind  string `json:"k"`             // one of the rec* constants
	ID    string `json:"id"`            // unique in the run: <proc>.<actor>.<n>
	Actor string `json:"a,omitempty"`   // the actor and Locker generation: <proc>.<actor>#<gen>
	Key   string `json:"key,omitempty"` // the lock (and state) it is about
	Lease string `json:"l,omitempty"`   // the lease it is about, or the lease it granted
	Call  int64  `json:"call"`          // when it was called (or struck, for a fault)
	Ret   int64  `json:"ret,omitempty"` // when it returned; 0 if it never did
	// CtxEnd is when the call's context ended (its deadline, or when it
	// was cancelled), 0 when it did not end before the call returned.
	CtxEnd int64  `json:"ctx,omitempty"`
	Class  string `json:"c,omitempty"` // what the error says (class*), for the checks
	Err    string `json:"err,omitempty"`
	Note   string `json:"n,omitempty"` // what was asked: a TTL, fn's variant, a fault's target

	// A lease (recLease): its fencing token, its TTL, when the watcher
	// first called Done, the last moment Done was seen open (and the last
	// such moment firstLookGrace or more after the first call), and when
	// it was seen closed (0 if never). PreDone marks a lease extended
	// before Done was first called. A lease-losing fault (recFault, Key
	// set) records the fencing token of the lease it struck, and a lease
	// lost on the server as its observer heard (recLost) its own.
	Fence        uint64 `json:"f,omitempty"`
	TTL          int64  `json:"ttl,omitempty"`
	WatchAt      int64  `json:"w,omitempty"`
	LastOpen     int64  `json:"open,omitempty"`
	LastOpenLate int64  `json:"openl,omitempty"`
	Closed       int64  `json:"closed,omitempty"`
	PreDone      bool   `json:"pre,omitempty"`
	// A lease (recLease): whether its watcher watched the context that
	// Lease.Context made rather than Done (Via "context"), and why it
	// ended, as Lease.Err said once Done was seen closed (End: one of the
	// end* constants; Err holds the error's text).
	Via string `json:"via,omitempty"`
	End string `json:"end,omitempty"`

	// A Modify (recModify): when fn last started and returned, the count
	// it saw, and the first characters of the owner of the lock as fn
	// saw it (Info.Holder), for the check that the lock is not kept.
	FnStart int64  `json:"fs,omitempty"`
	FnEnd   int64  `json:"fe,omitempty"`
	Old     int    `json:"old,omitempty"`
	Holder  string `json:"h,omitempty"`
	Hold    bool   `json:"hold,omitempty"` // the Manager holds locks between calls
}

const (
	recLock    = "lock"    // Lock; Lease names the lease it granted
	recTryLock = "trylock" // TryLock; Lease names the lease it granted
	recLease   = "lease"   // a lease, from its grant to the end of its watch
	recExtend  = "extend"  // Extend; Note is the TTL asked for
	recUnlock  = "unlock"  // Unlock
	recModify  = "modify"  // Modify; Note is fn's variant
	recClose   = "close"   // Close of a Manager and its Locker
	recOpen    = "open"    // Open of a new Locker generation
	recFault   = "fault"   // a fault; Note says which and on what
	recFinding = "finding" // a violation a process saw as it happened; Note says what
	recRead    = "read"    // the final read of a key's count (Old)
	recEvent   = "event"   // an observer's event worth the history: a release that failed in the background
	recLeak    = "leak"    // a text that said a password, as a process's leakScan found it; Note says where, and the text redacted
	recScanned = "scanned" // how many texts a process's leakScan read; Note counts them
	// A lease that a Locker's observer was told ended lost on the server
	// (observe.Lost, Removed, Overwritten, Flushed, Vanished): Call is when
	// it ended, Fence its token, Note the reason. Every lease's, a
	// Modify's too, which no other record shows.
	recLost = "lost"
	// A subscribe connection of a Locker generation (Actor) down: Call is
	// when it broke, Ret when it was back, 0 if it never was.
	recOutage = "outage"
)

// How a lease ended, by the error Lease.Err gave once Done was closed.
const (
	endLost     = "lost"     // matches lock.ErrLost
	endReleased = "released" // lock.ErrReleased
	endExpired  = "expired"  // lock.ErrExpired
	endClosed   = "closed"   // lock.ErrClosed
	endNil      = "nil"      // nil, though Done was closed
	endOther    = "other"    // anything else
	// endMismatch: the cause of the lease's context (context.Cause) was
	// not Lease.Err's.
	endMismatch = "mismatch"
)

// The classes of what a call returned.
const (
	classOK        = "ok"
	classNotHeld   = "not-held"     // lock.ErrNotHeld
	classNotAcq    = "not-acquired" // lock.ErrNotAcquired
	classClosed    = "closed"       // lock.ErrClosed or manager.ErrClosed
	classInvalid   = "invalid"      // lock.ErrInvalid
	classUncertain = "uncertain"    // conn.UncertainError
	classCtx       = "ctx"          // the context's error, nothing else
	classFn        = "fn"           // the error fn returned
	classPanic     = "panic"        // fn's panic, passed on
	classBadPanic  = "bad-panic"    // a panic that is not fn's: baton's own
	classOther     = "other"        // any other error
)

// chaosRecorder appends records to one file.
type chaosRecorder struct {
	proc string
	mu   sync.Mutex // serializes writes and guards the fields below
	f    *os.File
	err  error
	seq  int
}

func newChaosRecorder(dir, proc string) (*chaosRecorder, error) {
	f, err := os.OpenFile(filepath.Join(dir, proc+".chaos"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos history: %w", err)
	}
	return &chaosRecorder{proc: proc, f: f}, nil
}

// newID returns an ID unique in the run, under prefix.
func (r *chaosRecorder) newID(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	return fmt.Sprintf("%s.%d", prefix, r.seq)
}

func (r *chaosRecorder) add(rec chaosRecord) {
	line, err := json.Marshal(rec)
	if err != nil {
		panic(err) // a record always marshals
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return
	}
	if _, err := r.f.Write(append(line, '\n')); err != nil && r.err == nil {
		r.err = err
	}
}

func (r *chaosRecorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return r.err
	}
	if err := r.f.Close(); err != nil && r.err == nil {
		r.err = err
	}
	r.f = nil
	return r.err
}

// readChaosHistory reads every *.chaos file of dir, sorted by Call.
func readChaosHistory(dir string) ([]chaosRecord, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.chaos"))
	if err != nil {
		return nil, err
	}
	var recs []chaosRecord
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			var r chaosRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			recs = append(recs, r)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Call < recs[j].Call })
	return recs, nil
}

// describe is one line of the printed history: times in milliseconds
// from origin.
func (r chaosRecord) describe(origin int64) string {
	ms := func(t int64) string {
		if t == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", float64(t-origin)/1e6)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%10s", ms(r.Call))
	if r.Kind != recFault && r.Kind != recFinding {
		fmt.Fprintf(&b, " ..%10s", ms(r.Ret))
	}
	fmt.Fprintf(&b, " %-8s %-26s", r.Kind, r.ID)
	if r.Key != "" {
		fmt.Fprintf(&b, " key=%s", r.Key)
	}
	if r.Lease != "" && r.Lease != r.ID {
		fmt.Fprintf(&b, " lease=%s", r.Lease)
	}
	if r.Note != "" {
		fmt.Fprintf(&b, " %s", r.Note)
	}
	switch r.Kind {
	case recLease:
		fmt.Fprintf(&b, " fence=%d ttl=%v watch=%s open-until=%s closed-seen=%s", r.Fence, time.Duration(r.TTL), ms(r.WatchAt), ms(r.LastOpen), ms(r.Closed))
		if r.PreDone {
			b.WriteString(" extended-before-Done")
		}
		if r.Via != "" {
			fmt.Fprintf(&b, " via=%s", r.Via)
		}
		if r.End != "" {
			fmt.Fprintf(&b, " end=%s", r.End)
		}
	case recLost, recFault:
		if r.Fence != 0 {
			fmt.Fprintf(&b, " fence=%d", r.Fence)
		}
	case recModify:
		fmt.Fprintf(&b, " fn=%s..%s old=%d hold=%v", ms(r.FnStart), ms(r.FnEnd), r.Old, r.Hold)
	case recLock, recTryLock:
		if r.Fence != 0 {
			fmt.Fprintf(&b, " fence=%d", r.Fence)
		}
	}
	if r.CtxEnd != 0 {
		fmt.Fprintf(&b, " ctx-end=%s", ms(r.CtxEnd))
	}
	if r.Class != "" {
		fmt.Fprintf(&b, " -> %s", r.Class)
	}
	if r.Err != "" {
		fmt.Fprintf(&b, " (%s)", firstLine(r.Err, 160))
	}
	if r.Actor != "" {
		fmt.Fprintf(&b, " [%s]", r.Actor)
	}
	return b.String()
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
