package lock

// releaseStyle is how a fast-mode release is sent. Every Locker sends
// releasePingEval; the other styles reproduce the behaviour baton exists
// to fix, for this module's tests and benchmarks to compare against.
type releaseStyle int

const (
	// releasePingEval sends PING and the compare-and-delete script in one
	// write. Redis then writes the keyspace notification to waiters before
	// the releaser's reply, so a remote waiter gets a head start on the
	// next acquire.
	releasePingEval releaseStyle = iota
	// releaseEval sends the compare-and-delete script alone. Redis writes
	// the releaser's reply first, so a releaser that locks again at once
	// usually wins.
	releaseEval
	// releaseGetDel sends GETDEL and compares the owner afterwards. It is
	// NOT safe: a lease that expired deletes its successor's lock. For
	// comparing reply orders only.
	releaseGetDel
)
