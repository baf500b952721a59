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
	ErrInvalid = errors.New("lock: invalid argument")

	// ErrClosed is returned by calls on a closed Locker.
	ErrClosed = errors.New("lock: locker closed")
)

// errBadReply is a script reply that no script of this package gives:
// the server is not running our script, or not as written.
var errBadReply = fmt.Errorf("lock: unexpected script reply: %w", resp.ErrProtocol)
