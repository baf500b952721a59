package manager

import (
	"time"

	"github.com/batonlock/baton/resp"
)

// Option configures a Manager.
type Option func(*settings)

type settings struct {
	prefix    string
	ttl       time.Duration
	codec     any // a Codec[T], checked by New
	hold      time.Duration
	maxState  int
	closeWait time.Duration
}

func defaultSettings() settings {
	return settings{prefix: "baton:", ttl: time.Hour, maxState: resp.DefaultMaxBulkLen, closeWait: time.Second}
}

// WithKeyPrefix sets the prefix of state keys: the state of token t lives
// at <prefix>{t}:state. The state must share the hash tag of the token's
// lock, <lock prefix>{t} (lock.WithKeyPrefix), for every token, since one
// script writes the state back and releases the lock, and on Redis Cluster
// a script may touch only keys of one slot. So either neither prefix has
// braces (the defaults), and the tag is the token; or both name the same
// tag ("svc{a}:" and "svc{a}:state:"), which puts every token's lock and
// state in that tag's slot, on one node. Other combinations (braces in
// one prefix only, different tags) would agree for a token or none, and
// fail after the lock was taken: New refuses them, and every call returns
// an error matching ErrInvalid, with nothing sent. Default: "baton:", the
// lock's default prefix.
func WithKeyPrefix(p string) Option { return func(s *settings) { s.prefix = p } }

// WithStateTTL sets how long state lives after its last write; every write
// refreshes it. It must be from 1ms to 100 years, the most that Redis and
// the lock's scripts take exactly: New refuses others, and every call then
// returns an error matching ErrInvalid. Default: 1 hour.
func WithStateTTL(d time.Duration) Option { return func(s *settings) { s.ttl = d } }

// WithHold keeps a token's lock, and its state, for up to d after each
// Modify, so that a back-to-back Modify on the same instance skips the
// acquire and the read: it costs one round trip, a fenced write that also
// extends the lock. No write waits for a later Modify or for the hold's
// end: a Modify that returns nil has written its result. A Modify whose
// ctx ends by the time of its write-back (fn may cancel it) writes back
// and releases in one, as without hold, in the background, and the hold
// ends; one whose ctx ends with the write-back on its way returns an error
// matching conn.UncertainError, and the hold ends with a release sent
// after the write-back, in the background. Either way nothing is held for
// a caller who left. The holder lets go at once when another instance asks
// for the lock (after the Modify in progress, if any), when d passes with
// no Modify, when the lease ends, when a Modify fails or panics, and on
// Close. A d longer than the lock's TTL holds at most the TTL, unless the
// Locker extends its leases (lock.WithAutoExtend). Default: 0, no hold.
func WithHold(d time.Duration) Option { return func(s *settings) { s.hold = d } }

// WithCloseWait sets the longest Close waits for the write-backs on their
// way when it begins. One on a server that answers takes a round trip or
// so; one still on its way after d is stuck (a server that stopped
// answering, a failover under way), and is left to the Locker's Close,
// which ends it within its own bound, and its Modify returns what became
// of it: such a write may land after Close returned. 0 waits for none.
// Default: 1s. A negative d makes New refuse it, and every call returns
// an error matching ErrInvalid.
func WithCloseWait(d time.Duration) Option { return func(s *settings) { s.closeWait = d } }

// WithCodec sets how state is encoded. c must be a Codec[T] for the
// Manager's T. Default: JSON.
func WithCodec[T any](c Codec[T]) Option { return func(s *settings) { s.codec = c } }

// WithMaxStateSize caps the encoded size of a state that Modify writes, in
// bytes. A state must be readable back: keep it at or under the bulk
// length limit of the Locker's connection (resp.WithMaxBulkLen, passed
// with conn.WithReaderOptions). Default: resp.DefaultMaxBulkLen (64 MiB),
// that limit's default.
func WithMaxStateSize(n int) Option { return func(s *settings) { s.maxState = n } }
