package cluster

import (
	"time"

	"github.com/batonlock/baton/conn"
)

// Option configures New.
type Option func(*options)

type options struct {
	connOpts        []conn.Option
	refreshInterval time.Duration
	maxRetries      int
}

func defaultOptions() options {
	return options{
		refreshInterval: time.Second,
		maxRetries:      5,
	}
}

// WithConnOptions passes opts to every node's conn.Client (and so to every
// connection the Client makes): credentials, TLS, timeouts, RESP3, a wire
// tap. Default: none, conn's defaults. Nodes are dialled by "host:port",
// so settings that conn reads from a URL are given here; ParseURL turns a
// redis+cluster:// URL into seeds and these options. Calls add to the
// options of earlier ones.
func WithConnOptions(opts ...conn.Option) Option {
	return func(o *options) { o.connOpts = append(o.connOpts, opts...) }
}

// WithRefreshInterval sets how often at most the Client asks the cluster
// for its topology again, which it does when a reply says MOVED, when a
// node cannot be reached, and when no primary is known for a slot; a
// refresh that the interval forbids is skipped, not delayed. A MOVED reply
// still updates the map for its own slot at once. Default: 1s; 0 or less
// means every one of those events refreshes.
func WithRefreshInterval(d time.Duration) Option {
	return func(o *options) { o.refreshInterval = d }
}

// WithMaxRetries bounds how many times a Do or DoMulti sends its batch
// again, after MOVED or ASK replies and after nodes that could not be
// reached, so that a call sends its batch at most 1+n times. When the
// bound is reached, the call fails with an error matching
// ErrTooManyRetries and the last redirect reply or connection error.
// The waits through a reshard or a failover (see DoMulti) count no retry:
// the caller's context bounds them. Default: 5; a negative n counts as 0.
func WithMaxRetries(n int) Option {
	return func(o *options) { o.maxRetries = max(n, 0) }
}
