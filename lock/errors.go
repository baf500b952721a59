package lock

import "errors"

var (
	// ErrNotAcquired is returned by TryLock when another owner holds the
	// lock.
	ErrNotAcquired = errors.New("lock: not acquired, held by another owner")

	// ErrNotHeld is returned by Unlock and Extend when the lease no longer
	// owns the lock: it was released already, or it expired, or another
	// owner has it since.
	ErrNotHeld = errors.New("lock: not held (released, expired or taken over)")

	// ErrInvalid is matched by errors for bad arguments: an empty or
	// over-long key, a TTL that is not positive, a nil context. Nothing was
	// sent to Redis.
	ErrInvalid = errors.New("lock: invalid argument")

	// ErrClosed is returned by calls on a closed Locker.
	ErrClosed = errors.New("lock: locker closed")
)
