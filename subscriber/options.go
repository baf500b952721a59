package subscriber

import (
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/observe"
)

// Option configures New.
type Option func(*options)

type options struct {
	connOptions        []conn.Option
	healthCheck        time.Duration
	keyspaceEvents     bool
	keyspaceConfigured bool
	linger             time.Duration
	observer           observe.Observer
}

// defaultHealthCheck is WithHealthCheck's default, and the bound on every
// reply when the health check is off.
const defaultHealthCheck = 5 * time.Second

func defaultOptions() options {
	return options{keyspaceEvents: true, healthCheck: defaultHealthCheck, linger: defaultLinger}
}

// defaultLinger is withLinger's default.
const defaultLinger = time.Second

// WithConnOptions passes options to the subscriber's connection (TLS,
// credentials, timeouts, ...). RESP3 is always used: subscriptions are
// confirmed with push frames. Default: none.
func WithConnOptions(opts ...conn.Option) Option {
	return func(o *options) { o.connOptions = append(o.connOptions, opts...) }
}

// WithKeyspaceEventsConfigured tells New that the server already publishes
// the keyspace events the lock needs (notify-keyspace-events includes K, g,
// x and e, or K and A), so that it neither reads nor sets the setting. Use
// it where CONFIG is refused, as on many managed services. Default: New
// reads the setting and adds the missing flags with CONFIG SET.
func WithKeyspaceEventsConfigured() Option {
	return func(o *options) { o.keyspaceConfigured = true }
}

// WithoutKeyspaceEvents is for users of directed wake-ups alone (the fair
// lock): New leaves notify-keyspace-events alone and Watch is refused.
// Default: keyspace events are used.
func WithoutKeyspaceEvents() Option {
	return func(o *options) { o.keyspaceEvents = false }
}

// WithHealthCheck bounds how long the subscribe connection can be dead
// without the Subscriber noticing. A connection can go half-open, as when
// the server's host vanishes or a middlebox forgets the connection: no
// bytes arrive, and no reset either, so that only the kernel would end it,
// after minutes. Against that, every command the Subscriber sends on its
// connection (SUBSCRIBE, UNSUBSCRIBE, the CONFIG GET and SET that turn
// keyspace events on, and the PINGs below) must be answered within d, or
// the connection is closed; and when d passes without a reply on the
// connection, the Subscriber sends it a PING. A closed connection is
// handled as a broken one: the Subscriber redials, subscribes again, and
// wakes every waiter so that each re-checks its lock. So a half-open
// connection costs at most about 2d of unheard notifications (one d until
// the PING, one for its reply), plus the redial. New's CONFIG and
// SUBSCRIBE are bounded by d as well as by New's ctx.
//
// Choose d well above the round trip to the server and the longest the
// server may stall (a slow command, a large fork): a reply later than d
// costs a reconnect, which wakes every waiter. A d of 0 or less turns the
// PINGs off, so that an idle connection is never checked; replies are then
// still bounded, by 5s, so that no command waits forever on a dead
// connection. Default: 5s.
func WithHealthCheck(d time.Duration) Option {
	return func(o *options) { o.healthCheck = d }
}

// withLinger keeps the subscription to a key's releases (Watch) for d
// after its last local waiter leaves. A key waited on again within d needs
// no SUBSCRIBE (nor the UNSUBSCRIBE before it): under steady contention
// each wait would otherwise cost two commands and their round trips on the
// subscribe connection, and a Lock on such a key can register before its
// first attempt at no cost (see Hears). Events on a lingering channel
// reach no waiter and are dropped. Other channels do not linger. A new
// connection subscribes only to channels with waiters, so a reconnect
// ends every linger. Default: 1s; 0 drops a subscription as soon as its
// last waiter leaves.
func withLinger(d time.Duration) Option {
	return func(o *options) { o.linger = max(d, 0) }
}

// WithObserver has the Subscriber tell o when its connection is lost
// (observe.ConnectionLost), back (observe.Reconnected), or fails its health
// check (observe.HealthCheckFailed), delivered as package observe says:
// from a goroutine of the Subscriber's, which Close stops once it has
// delivered what was queued. A Locker's Open gives its Subscribers the
// Locker's own observers; this option is for a Subscriber made for
// lock.New. Default: none. A nil o is ignored.
func WithObserver(o observe.Observer) Option {
	return func(opts *options) {
		if o != nil {
			opts.observer = o
		}
	}
}
