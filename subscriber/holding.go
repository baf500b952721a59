package subscriber

import (
	"context"
	"errors"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/resp"
)

// Loss says how the server lost a key that a [Holding] watched.
type Loss uint8

const (
	// Removed: the key is gone: DEL, UNLINK, RENAME away, an expiry set
	// in the past, or the server expired or evicted it. The server's
	// invalidation names the key, not the command, so these are one.
	Removed Loss = iota + 1
	// Overwritten: the key holds another value, or a value of another
	// type.
	Overwritten
	// Flushed: the key's database was flushed (FLUSHDB, FLUSHALL), and
	// the key is gone.
	Flushed
	// Vanished: the key was found gone on a new connection, after the
	// old one broke: a failover to a replica that lacked it, or a server
	// restarted without persistence.
	Vanished
	// Moved: the node no longer serves the key's slot (Redis Cluster),
	// so it cannot tell: the key may be held on the slot's new node,
	// where the caller must look, and watch it anew.
	Moved
	// Unheard is not a loss, and the Holding stays: the connection
	// broke, and changes to the key go unheard until the Subscriber is
	// back, when it reads the key again and reports what it finds. A
	// caller whose key may be served elsewhere meanwhile (a Redis
	// Cluster fails its node over) can look there.
	Unheard
)

// Holding watches a key whose value this process set, for the moment
// the server loses it. Made by [Subscriber.Hold]; Close it when done.
type Holding struct {
	s      *Subscriber
	key    string
	value  string
	onLoss func(Loss)
	get    []string // the command that reads key
	ended  bool     // guarded by s.mu: its loss was reported, or it was closed
}

// Hold watches key, to which this process set value, and calls onLoss,
// once, when the server shows the key gone or holding another value. It
// returns at once; the Subscriber reads the key on its own connection
// right away, so that a loss before Hold is reported too.
//
// The Subscriber asks the server for client-side caching invalidations
// (CLIENT TRACKING ON, Redis 6 and later, no CONFIG needed): the server
// tells it of every change of a key it read, and it reads the key again,
// which both tells a change of the value from one that kept it (an
// extension of the key's TTL, say) and asks for the next invalidation.
// A FLUSHDB or FLUSHALL invalidates every key, and a new connection
// reads every held key, since changes made while it was away went
// unheard. A SWAPDB is not reported by the server. Where the server
// refuses tracking, nothing is reported.
//
// onLoss runs on the Subscriber's own goroutine, without its locks
// held; it must not block, nor call Subscriber.Close. Close on a
// Holding, from anywhere, is safe. It is called once with a loss, and
// before that with Unheard each time the connection breaks.
func (s *Subscriber) Hold(key, value string, onLoss func(Loss)) (*Holding, error) {
	if key == "" || onLoss == nil {
		return nil, errors.New("subscriber: Hold needs a key and onLoss")
	}
	h := &Holding{s: s, key: key, value: value, onLoss: onLoss, get: []string{"GET", key}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	s.holds[key] = append(s.holds[key], h)
	s.dueLocked(key, Removed)
	return h, nil
}

// Close stops watching. Nothing is sent: the server's next invalidation
// of the key, if it comes, is dropped.
func (h *Holding) Close() {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	h.endLocked()
}

// endLocked takes h out of its key's holdings, once, and reports whether
// it was still in.
func (h *Holding) endLocked() bool {
	if h.ended {
		return false
	}
	h.ended = true
	s := h.s
	holds := s.holds[h.key]
	for i, o := range holds {
		if o == h {
			holds = append(holds[:i], holds[i+1:]...)
			break
		}
	}
	if len(holds) == 0 {
		delete(s.holds, h.key)
		delete(s.due, h.key)
	} else {
		s.holds[h.key] = holds
	}
	return true
}

// dueLocked marks key's holdings for a read, which, should it find the
// key gone, reports it lost as missing says. A key marked twice keeps the
// most telling reason: Vanished over Flushed over Removed.
func (s *Subscriber) dueLocked(key string, missing Loss) {
	if s.markDueLocked(key, missing) {
		s.kickLocked()
	}
}

// markDueLocked is dueLocked without the kick, for a read the retry
// timer is to make; it reports whether key has holdings to read for.
func (s *Subscriber) markDueLocked(key string, missing Loss) bool {
	if len(s.holds[key]) == 0 {
		return false
	}
	if s.due[key] < missing {
		s.due[key] = missing
	}
	return true
}

// onInvalidate handles an invalidation push: the keys named, or with a
// null, every key (a flush).
func (s *Subscriber) onInvalidate(keys resp.Value) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if keys.IsNull() {
		for key := range s.holds {
			s.dueLocked(key, Flushed)
		}
		return
	}
	for _, k := range keys.Elems {
		s.dueLocked(k.Str, Removed)
	}
}

// holdRetry is how long the supervisor waits before it reads again the
// keys whose read the server refused for a while (LOADING, BUSY).
const holdRetry = 100 * time.Millisecond

// checkHolds reads every key due a read, on cn, turning tracking on first
// where cn has not, and reports the holdings it finds lost. It returns
// when a read must be tried again later (see holdRetry).
func (s *Subscriber) checkHolds(cn *conn.Conn) (retry bool) {
	s.mu.Lock()
	if len(s.due) == 0 || s.trackingRefused {
		clear(s.due)
		s.mu.Unlock()
		return false
	}
	// The supervisor alone calls checkHolds: its buffers serve every
	// pass, so that a watched lease costs the fewest allocations.
	checks, cmds, held := s.checkBuf[:0], s.cmdBuf[:0], s.heldBuf[:0]
	if !s.tracking {
		cmds = append(cmds, trackingOn)
	}
	for key, missing := range s.due {
		from := len(held)
		held = append(held, s.holds[key]...)
		checks = append(checks, check{key: key, missing: missing, from: from, to: len(held)})
		cmds = append(cmds, s.holds[key][0].get)
	}
	clear(s.due)
	s.mu.Unlock()
	defer func() {
		clear(held) // drop the holdings, for the collector
		s.checkBuf, s.cmdBuf, s.heldBuf = checks, cmds, held
	}()

	var replies []resp.Value
	err := s.within(s.ctx, cn, func(ctx context.Context) (err error) {
		replies, err = cn.DoMulti(ctx, cmds...)
		return err
	})
	if err != nil {
		// The connection broke, or the Subscriber is closing: a new
		// connection reads every held key anyway.
		return false
	}
	if !s.tracking {
		if terr := replies[0].Err(); terr != nil {
			if notNow(terr) {
				s.putOff(checks)
				return true
			}
			s.refuseTracking()
			return false
		}
		s.tracking = true
		replies = replies[1:]
	}
	var lost []func()
	s.mu.Lock()
	for i, c := range checks {
		r := replies[i]
		// An invalidation that came while the read was on its way may
		// say more of how the key went: a flush, say, that the read found
		// done. (One that came after the reply, before this goroutine
		// looked, may be taken for it: the cause is the best reading of
		// what the server said, the loss itself is not in doubt.)
		loss, err := lossIn(r, max(c.missing, s.due[c.key]))
		switch {
		case notNow(err):
			retry = true
			s.markDueLocked(c.key, c.missing)
			continue
		case err != nil:
			continue // refused for good (an ACL, say): the key goes unwatched
		}
		for _, h := range held[c.from:c.to] {
			if (loss != 0 || r.Str != h.value) && h.endLocked() {
				how := loss
				if how == 0 {
					how = Overwritten
				}
				lost = append(lost, func() { h.onLoss(how) })
			}
		}
	}
	s.mu.Unlock()
	for _, report := range lost {
		report()
	}
	return retry
}

// check is one held key's read in a pass of checkHolds: how a key found
// gone was lost, and its holdings, held[from:to] of the pass.
type check struct {
	key      string
	missing  Loss
	from, to int
}

// trackingOn turns client-side caching on for a connection.
var trackingOn = []string{"CLIENT", "TRACKING", "ON"}

// lossIn reads the reply to a held key's GET: how the key was lost, or 0
// when it holds a string (to compare with each holding's value); or the
// server's error where it did not answer.
func lossIn(r resp.Value, missing Loss) (Loss, error) {
	err := r.Err()
	switch {
	case r.IsNull():
		return missing, nil
	case err == nil && (r.Type == resp.Bulk || r.Type == resp.SimpleString || r.Type == resp.Verbatim):
		return 0, nil
	case errors.Is(err, resp.Moved), errors.Is(err, resp.Ask):
		return Moved, nil
	case errors.Is(err, resp.WrongType), err == nil:
		return Overwritten, nil
	}
	return 0, err
}

// notNow reports whether err is a server's refusal for now, after which
// the same command may succeed: a cluster's in change (see
// cluster.RefusedForNow), or a script running past its time limit.
func notNow(err error) bool {
	return cluster.RefusedForNow(err) || errors.Is(err, resp.Busy)
}

// putOff marks the keys of checks due again, for the retry timer to read
// (see holdRetry), not at once: a server that refuses for now would be
// asked again as fast as it answers.
func (s *Subscriber) putOff(checks []check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range checks {
		s.markDueLocked(c.key, c.missing)
	}
}

// unheard tells every holding that its key's changes go unheard until
// the Subscriber has a new connection.
func (s *Subscriber) unheard() {
	s.mu.Lock()
	var tell []func(Loss)
	for _, holds := range s.holds {
		for _, h := range holds {
			tell = append(tell, h.onLoss)
		}
	}
	s.mu.Unlock()
	for _, onLoss := range tell {
		onLoss(Unheard)
	}
}

// refuseTracking records that the server refused client-side caching
// for good (before Redis 6, or an ACL that forbids it): the holdings are
// kept, unreported, and tracking is not asked for again until a new
// connection.
func (s *Subscriber) refuseTracking() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trackingRefused = true
	clear(s.due)
}
