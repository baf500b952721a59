package lockconf

import (
	"time"

	"github.com/batonlock/baton/cluster"
	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/subscriber"
)

// Options are a Locker's settings. The defaults are documented on the
// options that set them: lock's, and the few here that only code inside
// this module sets.
type Options struct {
	TTL               time.Duration
	Fair              bool
	QueueLease        time.Duration
	AutoExtend        bool
	Prefix            string
	ReleaseStyle      ReleaseStyle
	ReleaseTimeout    time.Duration
	FenceRetention    time.Duration
	EvictionAllowed   bool
	ReplicaAcks       int
	ClusterOptions    []cluster.Option
	PlainChannels     bool
	ReplicaAckTimeout time.Duration
	ConnOptions       []conn.Option
	SubscriberOptions []subscriber.Option
}

// ReleaseStyle is how a fast-mode release is sent.
type ReleaseStyle int

const (
	// ReleasePingEval sends PING and the compare-and-delete script in one
	// write. Redis then writes the keyspace notification to waiters before
	// the releaser's reply, so a remote waiter gets a head start on the
	// next acquire. What every Locker does.
	ReleasePingEval ReleaseStyle = iota
	// ReleaseEval sends the compare-and-delete script alone. Redis writes
	// the releaser's reply first, so a releaser that locks again at once
	// usually wins: the behaviour baton exists to fix, kept to show it.
	ReleaseEval
	// ReleaseGetDel sends GETDEL and compares the owner afterwards. It is
	// NOT safe: a lease that expired deletes its successor's lock. For
	// comparing reply orders only.
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

// WithReleaseStyle is the option (a func(*Options), convertible to
// lock.Option) that picks the release style.
func WithReleaseStyle(s ReleaseStyle) func(*Options) {
	return func(o *Options) { o.ReleaseStyle = s }
}

// WithQueueLease sets how long a fair waiter's place in the queue lasts
// unless renewed; live waiters renew it every third of it, and re-check
// whether a hand-off reached them at the same pace. A waiter whose process
// has gone is skipped at once at hand-off; one that stalls is skipped once
// its lease has run out. Default: 3s; at least 3ms.
func WithQueueLease(d time.Duration) func(*Options) {
	return func(o *Options) { o.QueueLease = d }
}

// WithReleaseTimeout bounds a release that goes on after the caller of
// Unlock gave up (its context ended), a release retried after its
// connection broke, and each of Close's two phases. Default: 5s.
func WithReleaseTimeout(d time.Duration) func(*Options) {
	return func(o *Options) { o.ReleaseTimeout = d }
}

// WithFenceRetention sets how long a lock's fencing counter outlives the
// lock's last acquisition. Tokens keep increasing after the counter is gone
// (they never fall below the server's clock, in microseconds); the counter
// guards them, while it lives, against the server's clock being set back.
// Default: 1 hour. A retention shorter than the TTL is raised to the TTL:
// the counter must outlive every lease.
func WithFenceRetention(d time.Duration) func(*Options) {
	return func(o *Options) { o.FenceRetention = d }
}

// WithEvictionAllowed lets lock.Open proceed on a server whose
// maxmemory-policy may evict keys, for the tests that need such a server
// and for baton inspect, which only reads. Users who accept the risk make
// the Locker with lock.New, which leaves the check to its caller. Default:
// refused.
func WithEvictionAllowed() func(*Options) {
	return func(o *Options) { o.EvictionAllowed = true }
}

// WithClusterOptions passes options to the cluster client lock.Open makes
// for a redis+cluster:// URL. Default: the cluster package's.
func WithClusterOptions(opts ...cluster.Option) func(*Options) {
	return func(o *Options) { o.ClusterOptions = append(o.ClusterOptions, opts...) }
}

// WithPlainChannels makes a Locker on a cluster publish with PUBLISH on
// plain channels, as it does where the nodes lack SPUBLISH, so that the
// fallback is tested on servers that have it. Default: shard channels
// where the nodes have SPUBLISH.
func WithPlainChannels() func(*Options) {
	return func(o *Options) { o.PlainChannels = true }
}

// WithSubscriberOptions passes options to the subscriber lock.Open makes.
// Default: none. lock.New ignores it.
func WithSubscriberOptions(opts ...subscriber.Option) func(*Options) {
	return func(o *Options) { o.SubscriberOptions = append(o.SubscriberOptions, opts...) }
}
