package manager

import "time"

// Option configures a Manager.
type Option func(*settings)

type settings struct {
	prefix string
	ttl    time.Duration
	codec  any // a Codec[T], checked by New
}

func defaultSettings() settings {
	return settings{prefix: "baton:", ttl: time.Hour}
}

// WithKeyPrefix sets the prefix of state keys: the state of token t lives
// at <prefix>{t}:state. Default: "baton:", the lock's default prefix.
func WithKeyPrefix(p string) Option { return func(s *settings) { s.prefix = p } }

// WithStateTTL sets how long state lives after its last write; every write
// refreshes it. Default: 1 hour.
func WithStateTTL(d time.Duration) Option { return func(s *settings) { s.ttl = d } }

// WithCodec sets how state is encoded. c must be a Codec[T] for the
// Manager's T. Default: JSON.
func WithCodec[T any](c Codec[T]) Option { return func(s *settings) { s.codec = c } }
