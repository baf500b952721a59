package lock

import (
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/subscriber"
)

// Option configures Open and New.
type Option func(*options)

type options struct {
	ttl               time.Duration
	fair              bool
	queueLease        time.Duration
	autoExtend        bool
	prefix            string
	releaseStyle      ReleaseStyle
	releaseTimeout    time.Duration
	politeGrace       time.Duration
	connOptions       []conn.Option
	subscriberOptions []subscriber.Option
}

func defaultOptions() options {
	return options{
		ttl:            10 * time.Second,
		queueLease:     3 * time.Second,
		prefix:         "baton:",
		releaseStyle:   ReleasePingEval,
		releaseTimeout: 5 * time.Second,
		politeGrace:    100 * time.Millisecond,
	}
}

// WithTTL sets how long a lock is held when its holder neither extends nor
// releases it: the bound on how long a crashed holder blocks everyone else.
// Default: 10s. It must be at least a millisecond.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithFair makes the lock fair: waiters from every process queue in Redis
// in the order their requests reached the server, and a release hands the
// lock straight to the head of the queue, so that no releaser can take it
// back and no server's write order matters. Every Locker of a key must use
// the same mode. Fair mode needs no keyspace notifications; Open does not
// touch notify-keyspace-events. Default: fast mode.
func WithFair() Option { return func(o *options) { o.fair = true } }

// WithQueueLease sets how long a fair waiter's place in the queue lasts
// unless renewed; live waiters renew it every third of it, and re-check
// whether a hand-off reached them at the same pace. A waiter that vanished
// is skipped once its lease has run out. Default: 3s.
func WithQueueLease(d time.Duration) Option { return func(o *options) { o.queueLease = d } }

// WithAutoExtend starts a watchdog for every lease, which extends it to the
// full TTL every TTL/3 until it is released. If an extension finds the lock
// gone, or none succeeds before the lease runs out, the lease is lost and
// its Done channel closes. Default: off; a lease lasts one TTL unless
// extended with Extend.
func WithAutoExtend() Option { return func(o *options) { o.autoExtend = true } }

// WithKeyPrefix sets the prefix of the Redis keys of every lock: the lock
// for key k lives at <prefix>{k}, its fencing counter at <prefix>{k}:fence.
// Default: "baton:".
func WithKeyPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithReleaseTimeout bounds a release that goes on after the caller of
// Unlock gave up (its context ended), and the releases done by Close.
// Default: 5s.
func WithReleaseTimeout(d time.Duration) Option { return func(o *options) { o.releaseTimeout = d } }

// WithPoliteGrace sets how long a polite owner (LockThenPolitely, used by
// a manager that holds locks between modifications) leaves a free lock to
// the waiter that asked for it before taking it anyway. The waiter was
// told of the release, so it normally comes within a round trip or two; a
// waiter that has gone or given up in the meantime costs the polite owner
// the grace once. It is capped at the TTL; 0 makes LockThenPolitely plain
// LockThen. Default: 100ms.
func WithPoliteGrace(d time.Duration) Option { return func(o *options) { o.politeGrace = d } }

// WithReleaseStyle picks how Unlock releases. It exists for the demo and
// the benchmarks, which compare the styles; services should keep the
// default, ReleasePingEval.
func WithReleaseStyle(s ReleaseStyle) Option { return func(o *options) { o.releaseStyle = s } }

// WithConnOptions passes options to the connections Open makes: the command
// connection and the subscriber's. Default: none. New ignores it.
func WithConnOptions(opts ...conn.Option) Option {
	return func(o *options) { o.connOptions = append(o.connOptions, opts...) }
}

// WithSubscriberOptions passes options to the subscriber Open makes.
// Default: none. New ignores it.
func WithSubscriberOptions(opts ...subscriber.Option) Option {
	return func(o *options) { o.subscriberOptions = append(o.subscriberOptions, opts...) }
}

// ReleaseStyle is how a release is sent; see WithReleaseStyle.
type ReleaseStyle int

const (
	// ReleasePingEval sends PING and the compare-and-delete script in one
	// write. Redis then writes the keyspace notification to waiters before
	// the releaser's reply, so a remote waiter gets a head start on the
	// next acquire. The default.
	ReleasePingEval ReleaseStyle = iota
	// ReleaseEval sends the compare-and-delete script alone. Redis writes
	// the releaser's reply first, so a releaser that locks again at once
	// usually wins: the behaviour baton exists to fix.
	ReleaseEval
	// ReleaseGetDel sends GETDEL and compares the owner afterwards. It is
	// NOT safe: a lease that expired deletes its successor's lock. For
	// comparing reply order only.
	ReleaseGetDel
)

func (s ReleaseStyle) String() string {
	switch s {
	case ReleasePingEval:
		return "ping+eval"
	case ReleaseEval:
		return "eval"
	case ReleaseGetDel:
		return "getdel"
	}
	return "unknown"
}
