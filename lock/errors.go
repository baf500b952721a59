package lock

import (
	"errors"
	"fmt"

	"github.com/batonlock/baton/resp"
)

var (
	// ErrNotAcquired is returned by TryLock when another owner holds the
	// lock, and by Lock and TryLock when WithReplicaAck's replicas did not
	// acknowledge the acquire, which was then undone.
	ErrNotAcquired = errors.New("lock: not acquired")

	// ErrNotHeld is returned when the lease no longer owns the lock: it
	// was released already, or it expired, or another owner has it since.
	// The call that returns it wrote nothing.
	ErrNotHeld = errors.New("lock: not held (released, expired or taken over)")

	// ErrInvalid is matched by errors for bad arguments and options: an
	// empty key, a key over 1024 bytes, a key whose Redis keys would not
	// share a hash tag, a duration under a millisecond, a nil context, and
	// an address Open cannot read (which matches conn.ErrInvalid too).
	// Nothing was sent to Redis.
	//
	// Package manager's ErrInvalid is this same value, for a Manager's
	// arguments and options: one name matches a refusal by either
	// package. So its text names neither; each error that wraps it
	// begins with the package that refused.
	ErrInvalid = errors.New("invalid argument")

	// ErrClosed is matched by the errors of calls on a Locker whose Close
	// has begun, and of the Locks that Close ended while they waited.
	//
	// Package manager's ErrClosed is this same value, which a Manager's
	// Modify returns once the Manager's own Close has begun: one name
	// matches either closing, since either way the call did nothing and
	// the next will fail too. So its text names neither; each error that
	// wraps it says which was closed.
	ErrClosed = errors.New("closed")
)

// errLockerClosed is ErrClosed as this package returns it, saying what
// was closed.
var errLockerClosed = fmt.Errorf("lock: the Locker is %w", ErrClosed)

// errBadReply is a script reply that no script of this package gives:
// the server is not running our script, or not as written.
var errBadReply = fmt.Errorf("lock: unexpected script reply: %w", resp.ErrProtocol)
