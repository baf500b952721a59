package integration_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// lossBound is how long after a lose-lock fault struck a lease (see
// faulter.loseLock) its Done may still be open: the time for the
// server's invalidation to reach the lease's Subscriber, for its read of
// the lock to come back, and for the watcher to be scheduled, on a
// loaded machine under the race detector. It is measured from the moment
// the fault's command was sent, or, for a lease whose Done was first
// asked for after that, from that first call (whose read of the lock
// finds it lost), or from the moment a subscribe connection that broke
// before the lease heard came back (its new connection reads every held
// lock).
//
// Measured under -race on a 2-vCPU machine shared with other work, about
// 300 leases struck after their Done was asked for, on one server, on a
// cluster and through sentinels, heard in 0.7 to 1.5ms at the median,
// 2 to 10ms at the 99th percentile, 9.9ms at most; about 200 whose Done
// was first asked for after the fault, in 6.5ms at most. 100ms is ten
// times the slowest, and still well below the time a struck lease took
// to end with the watch turned off (Done's call of watchLossLocked taken
// out): its holder's next Extend or Unlock found the lock gone, or its
// deadline came, about 45ms after the fault at the median and up to
// 250ms, and the checker failed in its first or second round.
const lossBound = int64(100 * time.Millisecond)

// movedBound is lossBound for a lease whose lock's slot moved shortly
// before the fault (movedWindow): a reshard, or a failover. The lease's
// watch then follows the lock to its new node in the background, dialing
// a connection there if its Locker had none, and a lock lost before the
// watch has moved is heard of once it has (its first read finds it
// gone). The 28 such leases measured (see lossBound) heard within 3.3ms;
// the bound is loose because the move may wait for a dial, which waits
// out the redial backoff after failed dials.
const movedBound = int64(time.Second)

// movedWindow is how long after a reshard or a failover a lock counts as
// moved (see movedBound).
const movedWindow = int64(2 * time.Second)

// leaseID names a lease by its lock and fencing token, which are all a
// fault that struck it knows of it.
type leaseID struct {
	key   string
	fence uint64
}

// struckAt is, for each lease that a lose-lock fault struck, the moment
// the first such fault was sent.
func struckAt(recs []chaosRecord) map[leaseID]int64 {
	struck := map[leaseID]int64{}
	for _, r := range recs {
		if !isLoseLock(r) {
			continue
		}
		if at, ok := struck[leaseID{r.Key, r.Fence}]; !ok || r.Call < at {
			struck[leaseID{r.Key, r.Fence}] = r.Call
		}
	}
	return struck
}

// lossStats are what the lose-lock faults of one or more rounds did,
// and how long each struck lease took to hear of it.
type lossStats struct {
	struck int // leases struck
	// delays are, for the struck leases whose Done was asked for before
	// the fault, the time from the fault to Done seen closed; asked, for
	// those whose Done was first asked for after it, from that first
	// call; outage, for those whose subscribe connection broke before
	// they heard, from its return; moved, for those whose lock's slot
	// had just moved (see movedBound), from the later of the fault and
	// the first call.
	delays, asked, outage, moved []time.Duration
	away                         int // struck while a subscribe connection was down for good
	endedBefore                  int // struck once Done had closed already (an Unlock on its way)
	unwatched                    int // struck before their Done was ever asked for
	modifies                     int // struck leases that no lease record shows: a Modify's
	// handedOn counts the Modifies' leases that ended "overwritten" as
	// their own write-back handed the lock on (see ownHandOff).
	handedOn int
	causes   map[string]int
	// slowest describes the struck lease that took the longest to hear,
	// of those counted in delays, asked or outage.
	slowest      string
	slowestDelay time.Duration
}

// note counts d, the time a struck lease took to hear, in counts, and
// keeps what describes it if it is the slowest yet.
func (s *lossStats) note(counts *[]time.Duration, d time.Duration, describe func() string) {
	*counts = append(*counts, d)
	if s.slowest == "" || d > s.slowestDelay {
		s.slowest, s.slowestDelay = describe(), d
	}
}

func (s *lossStats) add(o lossStats) {
	s.struck += o.struck
	s.delays = append(s.delays, o.delays...)
	s.asked = append(s.asked, o.asked...)
	s.outage = append(s.outage, o.outage...)
	s.moved = append(s.moved, o.moved...)
	s.away += o.away
	s.endedBefore += o.endedBefore
	s.unwatched += o.unwatched
	s.modifies += o.modifies
	s.handedOn += o.handedOn
	if o.slowest != "" && (s.slowest == "" || o.slowestDelay > s.slowestDelay) {
		s.slowest, s.slowestDelay = o.slowest, o.slowestDelay
	}
	for k, n := range o.causes {
		if s.causes == nil {
			s.causes = map[string]int{}
		}
		s.causes[k] += n
	}
}

func (s lossStats) String() string {
	var b strings.Builder
	if s.struck == 0 {
		b.WriteString("no lease struck")
	} else {
		fmt.Fprintf(&b, "%d leases struck: fault to Done closed %s; first Done after the fault to closed %s; "+
			"a subscribe connection's return to closed %s; just moved %s; %d a Modify's, %d ended before, %d never watched, %d with a connection down for good; causes %v",
			s.struck, distribution(s.delays), distribution(s.asked), distribution(s.outage), distribution(s.moved),
			s.modifies, s.endedBefore, s.unwatched, s.away, s.causes)
	}
	if s.slowest != "" {
		fmt.Fprintf(&b, "; the slowest: %s", s.slowest)
	}
	if s.handedOn > 0 {
		fmt.Fprintf(&b, "; %d Modify leases reported overwritten as their own write-back handed the lock on", s.handedOn)
	}
	return b.String()
}

// distribution describes ds: how many, their median, 99th percentile and
// most.
func distribution(ds []time.Duration) string {
	if len(ds) == 0 {
		return "(none)"
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	q := func(p float64) time.Duration {
		return ds[max(int(math.Ceil(p*float64(len(ds))))-1, 0)].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("(n=%d p50 %v p99 %v max %v)", len(ds), q(0.5), q(0.99), ds[len(ds)-1].Round(10*time.Microsecond))
}

// checkLosses checks what became of the leases that lose-lock faults
// struck, and of the others:
//
//   - a struck lease's Done closes within lossBound of the fault (see
//     lossBound for where it is counted from). Not before the next
//     owner's grant: the lock is free, or the overwrite's expires, the
//     moment the fault runs, and another owner may take it within
//     microseconds, before the server's invalidation has reached the
//     struck lease's process. The holdings check (checkHoldings) ends a
//     struck lease's holding at the fault for that reason;
//   - a struck lease ends for a loss (Err matches lock.ErrLost), unless
//     something else ended it first: an Unlock of it or its Locker's
//     Close called before Done closed, or its deadline (ErrExpired,
//     which the lease says only once the deadline has passed);
//   - no lease ends for a loss that no fault explains: neither a lease
//     the history shows, nor any lease a Locker's observer saw end so
//     (recLost), a Modify's among them. One explanation is the lease's
//     own: an Extend to a TTL that ran out before the loss, whose reply
//     had not come by then (see ownExpiry).
func checkLosses(v *chaosVerdict, recs []chaosRecord) {
	h := readLosses(recs)
	h.checkFalseLosses(v, recs)
	for _, f := range h.faults {
		v.loss.struck++
		l, ok := h.leases[leaseID{f.Key, f.Fence}]
		switch {
		case !ok:
			v.loss.modifies++
		case l.WatchAt == 0:
			v.loss.unwatched++
		case l.Closed != 0 && l.Closed <= f.Call:
			v.loss.endedBefore++
		default:
			h.checkStruck(v, f, l)
		}
	}
}

// lossHistory is what checkLosses reads of a round's history.
type lossHistory struct {
	struck  map[leaseID]int64       // see struckAt
	faults  []chaosRecord           // the first lose-lock fault that struck each lease
	moves   []chaosRecord           // the reshards and failovers
	leases  map[leaseID]chaosRecord // the leases the history shows
	unlocks map[string]int64        // lease -> when its first Unlock was called
	closing map[string]int64        // generation -> when its first Close was called
	outages map[string][]chaosRecord
	extends map[string][]chaosRecord // lease -> its Extends
	// writeBacks are, by "<generation> <key>", the Modifies of a
	// Manager that holds, whose fn ran.
	writeBacks map[string][]chaosRecord
}

func readLosses(recs []chaosRecord) lossHistory {
	h := lossHistory{struck: struckAt(recs), leases: map[leaseID]chaosRecord{}, unlocks: map[string]int64{}, closing: map[string]int64{},
		outages: map[string][]chaosRecord{}, extends: map[string][]chaosRecord{}, writeBacks: map[string][]chaosRecord{}}
	for _, r := range recs { // in the order of Call
		switch r.Kind {
		case recFault:
			if isLoseLock(r) && h.struck[leaseID{r.Key, r.Fence}] == r.Call {
				h.faults = append(h.faults, r)
			}
			if strings.HasPrefix(r.Note, "reshard ") || strings.HasPrefix(r.Note, "failover ") {
				h.moves = append(h.moves, r)
			}
		case recLease:
			h.leases[leaseID{r.Key, r.Fence}] = r
		case recUnlock:
			if _, ok := h.unlocks[r.Lease]; !ok {
				h.unlocks[r.Lease] = r.Call
			}
		case recClose:
			if _, ok := h.closing[r.Actor]; !ok {
				h.closing[r.Actor] = r.Call
			}
		case recOutage:
			h.outages[r.Actor] = append(h.outages[r.Actor], r)
		case recExtend:
			h.extends[r.Lease] = append(h.extends[r.Lease], r)
		case recModify:
			if r.Hold && r.FnEnd != 0 {
				h.writeBacks[r.Actor+" "+r.Key] = append(h.writeBacks[r.Actor+" "+r.Key], r)
			}
		}
	}
	return h
}

// checkFalseLosses flags every lease that ended lost with no fault to
// explain it (see checkLosses).
func (h lossHistory) checkFalseLosses(v *chaosVerdict, recs []chaosRecord) {
	// When each lease that ended lost did, as its Locker's observer was
	// told (exactly), or else as its watcher saw (a moment later), in
	// the order the history first shows them.
	lost := map[leaseID]chaosRecord{}
	var order []leaseID
	for _, r := range recs {
		id := leaseID{r.Key, r.Fence}
		l, ok := lost[id]
		switch {
		case r.Kind == recLost && (!ok || l.Kind != recLost):
			lost[id] = r
		case r.Kind == recLease && r.End == endLost && !ok:
			lost[id] = chaosRecord{Kind: recLease, ID: r.ID, Key: r.Key, Fence: r.Fence, Call: r.Closed, Note: r.Err}
		default:
			continue
		}
		if !ok {
			order = append(order, id)
		}
	}
	for _, id := range order {
		l := lost[id]
		lease, ok := h.leases[id]
		if at, hit := h.struck[id]; hit && at <= l.Call || ok && ownExpiry(h.extends[lease.ID], l.Call) {
			continue
		}
		if !ok && ownHandOff(l, h.writeBacks[l.Actor+" "+l.Key]) {
			v.loss.handedOn++
			continue
		}
		what := "a lease of " + l.Actor + ", a Modify's"
		if ok {
			what = "lease " + lease.ID
		}
		v.flag(findFalseLoss, l.Key, l.Call, []string{l.ID, lease.ID}, "%s (fence %d) ended lost on the server (%s), which no fault had deleted or overwritten",
			what, l.Fence, firstLine(l.Note, 100))
	}
}

// ownExpiry reports whether one of a lease's extensions, whose reply had
// not come by end, set a TTL that had run out by then: the lock expired
// on the server, and the server told the lease so (lock.ErrRemoved says
// "the server expired it"), before the lease could learn its new
// deadline. An Extend to 1ms does that.
func ownExpiry(extends []chaosRecord, end int64) bool {
	for _, e := range extends {
		var ttl int64
		fmt.Sscanf(e.Note, "ttl=%d", &ttl)
		if ttl > 0 && e.Call+ttl <= end && (e.Ret == 0 || e.Ret >= end) {
			return true
		}
	}
	return false
}

// ownHandOff reports whether l, a Modify's lease that ended overwritten,
// may have been handed on by a write-back of its own: a Manager that
// holds writes back with Lease.Commit, which keeps the lock, or hands it
// to the owner that asked for it, in the same script. The lease's watch
// may read the new owner's token before the Commit's reply comes; the
// lock's package leaves such a read for the reply to decide, and a
// hand-off is a release. But where the reply never comes (the
// connection broke, the write-back is uncertain), it cannot tell its
// own hand-off from a loss, and reports the loss: checkLosses counts
// these apart (handedOn) rather than fail on them.
func ownHandOff(l chaosRecord, writeBacks []chaosRecord) bool {
	if l.Note != "overwritten" {
		return false
	}
	for _, m := range writeBacks {
		if m.FnEnd <= l.Call && (m.Ret == 0 || m.Ret >= l.Call) {
			return true
		}
	}
	return false
}

// movedBefore reports whether the slot of the lock that f struck moved
// within movedWindow before f: a reshard of it, or a failover of any
// primary (which serves the slots of other keys as well).
func movedBefore(f chaosRecord, moves []chaosRecord) bool {
	for _, m := range moves {
		if m.Call <= f.Call && f.Call <= m.Ret+movedWindow &&
			(strings.HasPrefix(m.Note, "failover ") || strings.HasPrefix(m.Note, "reshard "+f.Key+" ")) {
			return true
		}
	}
	return false
}

// checkStruck checks one lease, l, that fault f struck while it was
// held, as checkLosses says.
func (h lossHistory) checkStruck(v *chaosVerdict, f, l chaosRecord) {
	moved := movedBefore(f, h.moves)
	from, since, counts, bound := f.Call, "the fault", &v.loss.delays, lossBound
	if l.WatchAt > f.Call {
		from, since, counts = l.WatchAt, "its first Done", &v.loss.asked
	}
	if moved {
		counts, bound = &v.loss.moved, movedBound
	}
	for _, o := range h.outages[l.Actor] {
		// A connection down at from, or that broke after it, before the
		// lease heard: the loss is heard of once it is back, when the
		// new connection reads every held lock; or the lease hears some
		// other way meanwhile (an Extend that finds the lock gone).
		if l.Closed != 0 && o.Call >= l.Closed || o.Ret != 0 && o.Ret < from {
			continue
		}
		if o.Ret == 0 {
			v.loss.away++
			return
		}
		back := o.Ret
		if l.Closed != 0 {
			back = min(back, l.Closed)
		}
		if back > from {
			from, since = back, "its subscribe connection's return"
		}
		if !moved {
			counts = &v.loss.outage
		}
	}
	if v.loss.causes == nil {
		v.loss.causes = map[string]int{}
	}
	v.loss.causes[l.End]++
	ids := []string{f.ID, l.ID}
	flag := func(kind string, at int64, format string, args ...any) {
		v.flag(kind, f.Key, at, ids, format, args...)
		// And the calls and outages of its Locker.
		v.findings[len(v.findings)-1].actor = l.Actor
	}
	if l.Closed == 0 {
		flag(findLateLoss, from, "lease %s (fence %d), whose lock %s deleted or overwrote, never saw its Done closed", l.ID, l.Fence, f.ID)
		return
	}
	d := l.Closed - from
	v.loss.note(counts, time.Duration(d), func() string {
		just := ""
		if moved {
			just = ", its slot just moved"
		}
		return fmt.Sprintf("lease %s (via %s, ended %s%s), struck by %s (%s) at %s into its round, Done first asked at %s: closed %v after %s",
			l.ID, orDone(l.Via), l.End, just, f.ID, f.Note, v.ms(f.Call), v.ms(l.WatchAt), time.Duration(d).Round(10*time.Microsecond), since)
	})
	if d > bound {
		flag(findLateLoss, from, "lease %s (fence %d): Done closed %v after %s (at %s), over the bound of %v; %s (%s) deleted or overwrote its lock at %s, its Done was first asked for at %s",
			l.ID, l.Fence, time.Duration(d).Round(time.Microsecond), since, v.ms(from), time.Duration(bound), f.ID, f.Note, v.ms(f.Call), v.ms(l.WatchAt))
	}
	explained := true
	switch l.End {
	case endLost, endExpired:
	case endReleased:
		u, ok := h.unlocks[l.ID]
		explained = ok && u <= l.Closed
	case endClosed:
		c, ok := h.closing[l.Actor]
		explained = ok && c <= l.Closed
	default:
		explained = false
	}
	if !explained {
		flag(findCause, l.Closed, "lease %s (fence %d), whose lock %s deleted or overwrote, ended %s (%s), and no call of its own explains it",
			l.ID, l.Fence, f.ID, l.End, l.Err)
	}
}

func orDone(via string) string {
	if via == "" {
		return "Done"
	}
	return via
}
