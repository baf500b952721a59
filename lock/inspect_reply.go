package lock

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/batonlock/baton/resp"
)

// maxMillis is the longest span in ms that a time.Duration holds: the
// bound on every span Inspect reads, so that no reply overflows one.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// badInfo is the error of a reply that inspectScript does not give, or of
// keys holding what baton never writes: nothing in it is trusted.
func badInfo(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadReply, fmt.Sprintf(format, args...))
}

// readInfo reads inspectScript's reply, checking every part of it.
func readInfo(v resp.Value, fair bool) (Info, error) {
	e := v.Elems
	if v.Type != resp.Array || len(e) != 6 {
		return Info{}, badInfo("reply of type %s with %d elements, want an array of 6", v.Type, len(e))
	}
	now, pttl, queue := e[0], e[1], e[5]
	if now.Type != resp.Integer || now.Int <= 0 {
		return Info{}, badInfo("server clock %s", now)
	}
	if pttl.Type != resp.Integer || pttl.Int < -2 || pttl.Int > maxMillis {
		return Info{}, badInfo("PTTL %s", pttl)
	}
	for _, s := range e[2:5] {
		if s.Type != resp.Bulk {
			return Info{}, badInfo("%s where a string belongs", s)
		}
	}
	holder, fence, request := e[2].Str, e[3].Str, e[4].Str
	if queue.Type != resp.Array || len(queue.Elems)%2 != 0 {
		return Info{}, badInfo("queue of type %s with %d elements, want an array of owner, entry pairs", queue.Type, len(queue.Elems))
	}

	var info Info
	switch pttl.Int {
	case -2: // no such key
		if holder != "" {
			return Info{}, badInfo("a lock with no TTL and no key, holding %q", holder)
		}
	case -1:
		info.Held, info.TTL = true, -1
	default:
		info.Held, info.TTL = true, time.Duration(pttl.Int)*time.Millisecond
	}
	if info.Held {
		info.Holder = shownOwner(holder)
	}
	var token uint64
	if fence != "" {
		t, err := strconv.ParseUint(fence, 10, 64)
		if err != nil || t == 0 {
			return Info{}, badInfo("fencing counter %q", fence)
		}
		token = t
	}

	if fair {
		if request != "" {
			return Info{}, badInfo("a fast-mode request %q read in fair mode", request)
		}
		q, err := readQueue(queue.Elems, now.Int)
		if err != nil {
			return Info{}, err
		}
		info.Queue, info.Wanted = q, len(q) > 0
	} else {
		if len(queue.Elems) > 0 {
			return Info{}, badInfo("a queue read in fast mode")
		}
		if request != "" {
			asker, _, _, ok := splitEntry(request)
			if !ok {
				return Info{}, badInfo("request %q, want \"<owner> <waiter-id> <channel>\"", request)
			}
			// A holder's own request is left from its wait: it asks
			// nobody to let go.
			info.Wanted = !info.Held || asker != holder
		}
	}
	if info.Held {
		info.Token = token
	}
	return info, nil
}

// queued is the type of Info.Queue's elements, named here only. Info
// spells it out: it is no name for users to learn, and the package's
// exported names stay those a user calls.
type queued = struct {
	Owner     string
	LeaseLeft time.Duration
}

// readQueue reads the queue's owner, entry pairs, in order, counting each
// entry's lease left from the server's clock now (ms).
func readQueue(pairs []resp.Value, now int64) ([]queued, error) {
	q := make([]queued, len(pairs)/2)
	for i := range q {
		owner, entry := pairs[2*i], pairs[2*i+1]
		if owner.Type != resp.Bulk || entry.Type != resp.Bulk {
			return nil, badInfo("queue entry %s: %s, want two strings", owner, entry)
		}
		deadline, _, _, ok := splitEntry(entry.Str)
		var ms int64
		var err error
		if ok {
			ms, err = strconv.ParseInt(deadline, 10, 64)
		}
		// now > 0, so now-ms cannot overflow; ms-now can, where it
		// leaves a Duration's range.
		if !ok || !isDigits(deadline) || err != nil || ms-now > maxMillis || ms < now-maxMillis {
			return nil, badInfo("queue entry of %q: %q, want \"<deadline-ms> <waiter-id> <channel>\"", shownOwner(owner.Str), entry.Str)
		}
		q[i].Owner = shownOwner(owner.Str)
		q[i].LeaseLeft = time.Duration(ms-now) * time.Millisecond
	}
	return q, nil
}

// splitEntry splits a request ("<owner> <waiter-id> <channel>") or a
// queue entry ("<deadline-ms> <waiter-id> <channel>") as the scripts do
// (the Lua pattern '^(%S+) (%d+) (.+)$'): ok is false where they would
// find no match.
func splitEntry(s string) (first, id, channel string, ok bool) {
	first, rest, found := strings.Cut(s, " ")
	if !found || first == "" || strings.ContainsAny(first, "\t\n\v\f\r") {
		return "", "", "", false
	}
	id, channel, found = strings.Cut(rest, " ")
	if !found || !isDigits(id) || channel == "" {
		return "", "", "", false
	}
	return first, id, channel, true
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
