package lock

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/observing"
	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/subscriber"
)

// Option configures Open and New. The With functions of this package make
// them; each documents its default. A zero Option changes nothing.
type Option struct {
	apply func(*settings)
}

// settings are a Locker's, as its options leave them. The defaults are
// documented on the options that set them.
type settings struct {
	TTL               time.Duration
	Fair              bool
	QueueLease        time.Duration
	AutoExtend        bool
	Prefix            string
	ReleaseTimeout    time.Duration
	FenceRetention    time.Duration
	EvictionAllowed   bool
	EventsConfigured  bool
	ReplicaAcks       int
	ReplicaAckTimeout time.Duration
	ConnOptions       []conn.Option
	Observers         []observe.Observer

	// queue delivers events to Observers; started by Open and New, which
	// hand it to the Locker.
	queue *observing.Queue

	// Set by this module's tests alone (export_test.go).
	ReleaseStyle      releaseStyle
	ClusterOptions    []cluster.Option
	PlainChannels     bool
	SubscriberOptions []subscriber.Option
}

func option(apply func(*settings)) Option { return Option{apply} }

func defaultSettings() settings {
	return settings{
		TTL:            10 * time.Second,
		QueueLease:     3 * time.Second,
		Prefix:         "baton:",
		ReleaseStyle:   releasePingEval,
		ReleaseTimeout: 5 * time.Second,
		FenceRetention: time.Hour,
	}
}

// WithTTL sets how long a lock is held when its holder neither extends nor
// releases it: the bound on how long a crashed holder blocks everyone else.
// Redis counts TTLs in whole milliseconds; a TTL with a fraction of one is
// sent rounded up, while the lease counts the TTL as given, so the lease
// always ends before the lock does in Redis. Default: 10s. It must be at
// least a millisecond and at most 100 years. The lock's fencing counter
// lives at least the fence retention past the last acquisition, or the
// TTL if that is longer (see WithFenceRetention).
func WithTTL(d time.Duration) Option { return option(func(o *settings) { o.TTL = d }) }

// WithFair makes the lock fair: waiters from every process queue in Redis
// in the order their requests reached the server, and a release hands the
// lock straight to the head of the queue, so that no releaser can take it
// back and no server's write order matters. Every Locker of a key must use
// the same mode. Fair mode needs no keyspace notifications; Open does not
// touch notify-keyspace-events. Default: fast mode.
func WithFair() Option { return option(func(o *settings) { o.Fair = true }) }

// WithAutoExtend starts a watchdog for every lease, which extends it to the
// full TTL every TTL/3 until it is released, the first time when two
// thirds of the TTL are left (at once for a lease from a fast hand-off
// after a long wait, which starts with less). If an extension finds the lock
// gone, or none succeeds before the lease runs out, the lease is lost and
// its Done channel closes. Default: off; a lease lasts one TTL unless
// extended with Extend.
func WithAutoExtend() Option { return option(func(o *settings) { o.AutoExtend = true }) }

// WithKeyPrefix sets the prefix of the Redis keys of every lock: the lock
// for key k lives at <prefix>{k}, its fencing counter at <prefix>{k}:fence.
// Braces in the prefix are allowed only where every key of a lock still
// shares one hash tag; on a Redis Cluster they put every lock in the
// prefix's slot, on one node. Default: "baton:".
func WithKeyPrefix(p string) Option { return option(func(o *settings) { o.Prefix = p }) }

// WithConnOptions passes options to the connections Open makes: the command
// connection and the subscriber's. conn's defaults stand where they say
// nothing, among them a read timeout of 5s, which breaks a connection
// whose server stays silent that long while replies are due (a half-open
// connection, a server that is gone), so that the next call redials:
// Open's connections carry no blocking command, and a half-open one would
// otherwise fail every call until the kernel gives up on it, minutes
// later. With WithReplicaAck, a read timeout shorter than its timeout
// breaks the connection under a WAIT that waits it out. New ignores the option: a caller
// who needs the subscriber configured otherwise makes the connections and
// passes them to New.
func WithConnOptions(opts ...conn.Option) Option {
	return option(func(o *settings) { o.ConnOptions = append(o.ConnOptions, opts...) })
}

// WithReleaseTimeout bounds the work a release does on its own: a release
// that goes on after the caller of Unlock gave up (its context ended), a
// release retried after its connection broke or while a cluster cannot
// serve it, the resending of a release too few replicas acknowledged (see
// WithReplicaAck), and each of Close's two phases. A longer timeout
// rides out longer outages (a failover that takes longer than it leaves
// the lock to its TTL); a shorter one lets Close return sooner from a
// server that is gone. Default: 5s; more than 0.
func WithReleaseTimeout(d time.Duration) Option {
	return option(func(o *settings) { o.ReleaseTimeout = d })
}

// WithQueueLease sets, in fair mode, how long a waiter's place in the queue
// lasts unless renewed. Live waiters renew it every third of it, and check
// at the same pace whether a hand-off reached them. A waiter whose process
// has gone is skipped at once at hand-off; one that stalls is skipped once
// its lease has run out. A shorter lease skips a stalled waiter sooner, at
// the cost of more renewals from every waiter. Default: 3s; at least 3ms.
// Fast mode ignores it.
func WithQueueLease(d time.Duration) Option {
	return option(func(o *settings) { o.QueueLease = d })
}

// WithFenceRetention sets how long a lock's fencing counter outlives the
// lock's last acquisition. Tokens keep increasing after the counter is
// gone (they never fall below the server's clock, in microseconds); the
// counter guards them, while it lives, against the server's clock being
// set back. A shorter retention leaves fewer keys behind locks that are no
// longer used; a longer one covers a larger clock step back. Default: 1h.
// A retention shorter than the TTL is raised to the TTL: the counter must
// outlive every lease.
func WithFenceRetention(d time.Duration) Option {
	return option(func(o *settings) { o.FenceRetention = d })
}

// WithKeyspaceEventsConfigured tells Open that keyspace notifications are
// already on for the lock's keys (notify-keyspace-events includes K, g, x
// and e, or K and A), on the server or on every node of a cluster, so that
// its subscribers neither read nor set the setting. It is what fast mode
// needs where CONFIG is refused (a managed service, an ACL without
// +config). If the events are in fact off, waiters hear of no release and
// find a lock free only when its TTL runs out. Default: Open's
// subscribers read the setting with CONFIG GET and add the missing flags
// with CONFIG SET. Fair mode needs no events and ignores it.
func WithKeyspaceEventsConfigured() Option {
	return option(func(o *settings) { o.EventsConfigured = true })
}

// WithEvictionAllowed lets Open proceed on a server whose
// maxmemory-policy may evict keys. Such a server can evict a held lock
// to make room for other data, and a second owner then acquires it while
// the first lease is open: accept that only where nothing but locks and
// short-lived data live on the server, or for tools that only read (baton
// inspect). Default: Open refuses such a server with an error matching
// ErrInvalid. New makes no check either way.
func WithEvictionAllowed() Option {
	return option(func(o *settings) { o.EvictionAllowed = true })
}

// WithObserver has the Locker tell o what it does: every call of Lock and
// TryLock, the leases they grant and how each ended, hand-offs, outcomes
// left unknown, and what happens in the background (see package observe
// for the events, and for how they are delivered: in order, from a
// goroutine of the Locker's, never from one that a lock's progress waits
// on). Given more than once, every observer is told. Open's subscribers
// report to the same observers; a Subscriber made for New reports to the
// observer given to it with subscriber.WithObserver. Default: none, and a
// Locker with none does no work for one. A nil o is ignored.
func WithObserver(o observe.Observer) Option {
	return option(func(s *settings) {
		if o != nil {
			s.Observers = append(s.Observers, o)
		}
	})
}

// WithLogger logs to logger what happens where no caller sees an error: a
// lease lost while held, a watchdog that could not extend, a release in
// the background that failed, a subscribe connection that was lost or
// reconnected (observe.Log says what, and at which level). It is an
// observer (WithObserver), delivered as every observer is. Default: no
// log. A nil logger is ignored.
func WithLogger(logger *slog.Logger) Option {
	return option(func(s *settings) {
		if logger != nil {
			s.Observers = append(s.Observers, observe.Log(logger))
		}
	})
}

// mode is the Locker's mode, as events name it.
func (o settings) mode() observe.Mode {
	if o.Fair {
		return observe.Fair
	}
	return observe.Fast
}

func buildSettings(opts []Option) (settings, error) {
	o := defaultSettings()
	for _, opt := range opts {
		if opt.apply != nil {
			opt.apply(&o)
		}
	}
	// The fencing counter must outlive every lease (see tokenPrelude):
	// a TTL over the retention takes the retention with it, so that a
	// two-hour lock needs no second setting.
	o.FenceRetention = max(o.FenceRetention, o.TTL)
	return o, checkSettings(o)
}

func checkSettings(o settings) error {
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
		return fmt.Errorf("lock: %w: queue lease %v, want at least 3ms", ErrInvalid, o.QueueLease)
	case o.ReleaseTimeout <= 0:
		return fmt.Errorf("lock: %w: release timeout %v, want more than 0", ErrInvalid, o.ReleaseTimeout)
	case o.ReleaseStyle < releasePingEval || o.ReleaseStyle > releaseGetDel:
		return fmt.Errorf("lock: %w: release style %d", ErrInvalid, o.ReleaseStyle)
	}
	if err := checkReplicaAck(o); err != nil {
		return err
	}
	return checkKey(o.Prefix, "k")
}
