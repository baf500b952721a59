package lock

import (
	"errors"
	"fmt"

	"github.com/batonlock/baton/observe"
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

// Why a lease ended, as Lease.Err and the context.Cause of
// Lease.Context report it. Each is a value to test with errors.Is; the
// ways a lock is lost on the server each match ErrLost too.
var (
	// ErrReleased: this process released the lease: Unlock, or a
	// write-back that released the lock or handed it on.
	ErrReleased = errors.New("lock: lease released")
	// ErrExpired: the lease's TTL ran out, by this process's clock,
	// without an extension in time (observers are told whether its
	// watchdog's extensions had failed: observe.ExtensionFailed).
	ErrExpired = errors.New("lock: lease ran out")
	// ErrLost: the server lost the lock while the lease held it. Where
	// only an extension or a write-back found the lock gone, the server
	// did not say how, and the cause is ErrLost itself.
	ErrLost = errors.New("lock: lost on the server")
	// ErrRemoved: the lock's key was removed on the server: DEL, UNLINK,
	// RENAME, an expiry set in the past, or the server expired or evicted
	// it (its notice names the key, not the cause). It matches ErrLost.
	ErrRemoved = &endCause{"lock: lost on the server: its key was removed", ErrLost}
	// ErrOverwritten: another client wrote the lock's key. It matches
	// ErrLost.
	ErrOverwritten = &endCause{"lock: lost on the server: its key was overwritten", ErrLost}
	// ErrFlushed: the lock's database was flushed (FLUSHDB, FLUSHALL). It
	// matches ErrLost.
	ErrFlushed = &endCause{"lock: lost on the server: its database was flushed", ErrLost}
	// ErrVanished: the lock was gone when this process reached the server
	// again after its connection broke: a failover to a replica that
	// lacked it, or a server restarted without persistence. It matches
	// ErrLost.
	ErrVanished = &endCause{"lock: lost on the server: gone after a reconnect (failover or restart)", ErrLost}
)

// endCause is a cause that belongs to a wider one, which errors.Is
// matches too.
type endCause struct {
	text  string
	wider error
}

func (e *endCause) Error() string        { return e.text }
func (e *endCause) Is(target error) bool { return target == e.wider }

// causes is the cause of each reason observers are told of a lease's end.
var causes = [...]error{
	observe.Released:        ErrReleased,
	observe.Expired:         ErrExpired,
	observe.ExtensionFailed: ErrExpired,
	observe.Lost:            ErrLost,
	observe.Closed:          errLockerClosed,
	observe.Removed:         ErrRemoved,
	observe.Overwritten:     ErrOverwritten,
	observe.Flushed:         ErrFlushed,
	observe.Vanished:        ErrVanished,
}
