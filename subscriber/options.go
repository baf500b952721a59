package subscriber

import "github.com/batonlock/baton/conn"

// Option configures New.
type Option func(*options)

type options struct {
	connOptions         []conn.Option
	keyspaceEvents      bool
	keyspaceConfigured  bool
	directedChannelRoot string
}

func defaultOptions() options {
	return options{keyspaceEvents: true, directedChannelRoot: "baton:wake:"}
}

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

// WithDirectedChannelPrefix sets the prefix of the per-process channel for
// directed wake-ups; a random suffix makes it unique. Default: "baton:wake:".
func WithDirectedChannelPrefix(prefix string) Option {
	return func(o *options) { o.directedChannelRoot = prefix }
}
