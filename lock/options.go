package lock

import (
	"fmt"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/lockconf"
)

// Option configures Open and New.
type Option func(*lockconf.Options)

func defaultOptions() lockconf.Options {
	return lockconf.Options{
		TTL:            10 * time.Second,
		QueueLease:     3 * time.Second,
		Prefix:         "baton:",
		ReleaseStyle:   lockconf.ReleasePingEval,
		ReleaseTimeout: 5 * time.Second,
		FenceRetention: time.Hour,
		// Open's connections carry no blocking command, so a reply
		// that is this late means a server or a link that is gone: a
		// half-open connection would otherwise fail every call until
		// the kernel gives up on it, minutes later.
		ConnOptions: []conn.Option{conn.WithReadTimeout(5 * time.Second)},
	}
}

// WithTTL sets how long a lock is held when its holder neither extends nor
// releases it: the bound on how long a crashed holder blocks everyone else.
// Redis counts TTLs in whole milliseconds; a TTL with a fraction of one is
// sent rounded up, while the lease counts the TTL as given, so the lease
// always ends before the lock does in Redis. Default: 10s. It must be at
// least a millisecond and at most 100 years. The lock's fencing counter
// lives at least an hour past the last acquisition, or the TTL if that is
// longer (see the package doc's fencing section).
func WithTTL(d time.Duration) Option { return func(o *lockconf.Options) { o.TTL = d } }

// WithFair makes the lock fair: waiters from every process queue in Redis
// in the order their requests reached the server, and a release hands the
// lock straight to the head of the queue, so that no releaser can take it
// back and no server's write order matters. Every Locker of a key must use
// the same mode. Fair mode needs no keyspace notifications; Open does not
// touch notify-keyspace-events. Default: fast mode.
func WithFair() Option { return func(o *lockconf.Options) { o.Fair = true } }

// WithAutoExtend starts a watchdog for every lease, which extends it to the
// full TTL every TTL/3 until it is released. If an extension finds the lock
// gone, or none succeeds before the lease runs out, the lease is lost and
// its Done channel closes. Default: off; a lease lasts one TTL unless
// extended with Extend.
func WithAutoExtend() Option { return func(o *lockconf.Options) { o.AutoExtend = true } }

// WithKeyPrefix sets the prefix of the Redis keys of every lock: the lock
// for key k lives at <prefix>{k}, its fencing counter at <prefix>{k}:fence.
// Braces in the prefix are allowed only where every key of a lock still
// shares one hash tag; on a Redis Cluster they put every lock in the
// prefix's slot, on one node. Default: "baton:".
func WithKeyPrefix(p string) Option { return func(o *lockconf.Options) { o.Prefix = p } }

// WithConnOptions passes options to the connections Open makes: the command
// connection and the subscriber's. They come after Open's one default,
// conn.WithReadTimeout(5s), which breaks a connection whose server stays
// silent that long while replies are due (a half-open connection, a
// server that is gone), so that the next call redials; a later
// conn.WithReadTimeout replaces it. New ignores the option: a caller
// who needs the subscriber configured otherwise makes the connections and
// passes them to New.
func WithConnOptions(opts ...conn.Option) Option {
	return func(o *lockconf.Options) { o.ConnOptions = append(o.ConnOptions, opts...) }
}

func buildOptions(opts []Option) (lockconf.Options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	// The fencing counter must outlive every lease (see tokenPrelude):
	// a TTL over the retention takes the retention with it, so that a
	// two-hour lock needs no second setting.
	o.FenceRetention = max(o.FenceRetention, o.TTL)
	return o, checkOptions(o)
}

func checkOptions(o lockconf.Options) error {
	if err := checkMillis("TTL", o.TTL); err != nil {
		return err
	}
	if err := checkMillis("queue lease", o.QueueLease); err != nil {
		return err
	}
	if err := checkMillis("fence retention", o.FenceRetention); err != nil {
		return err
	}
	switch {
	case o.QueueLease < 3*time.Millisecond:
		return fmt.Errorf("%w: queue lease %v, want at least 3ms", ErrInvalid, o.QueueLease)
	case o.ReleaseTimeout <= 0:
		return fmt.Errorf("%w: release timeout %v, want more than 0", ErrInvalid, o.ReleaseTimeout)
	case o.ReleaseStyle < lockconf.ReleasePingEval || o.ReleaseStyle > lockconf.ReleaseGetDel:
		return fmt.Errorf("%w: release style %d", ErrInvalid, o.ReleaseStyle)
	}
	if err := checkReplicaAck(o); err != nil {
		return err
	}
	return checkKey(o.Prefix, "k")
}
