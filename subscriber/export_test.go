package subscriber

// WithLinger sets how long a key's subscription outlives its last waiter,
// for the tests of the linger.
var WithLinger = withLinger

// ErrChannelInUse is the error of a channel asked for in another way than
// it is watched.
var ErrChannelInUse = errChannelInUse

// DB is the database whose keyspace events s hears.
func DB(s *Subscriber) int { return s.db }
