package lockstate

import (
	"context"
	"errors"
	"time"

	"github.com/batonlock/baton/resp"
)

// Write is a fenced write-back: a value stored beside the lock, only while
// the lease owns the lock, in the same script that releases or extends it.
type Write struct {
	// Key must share the lock's hash tag, so that the script may touch it
	// on Redis Cluster too: <prefix>{key}<anything>, with the lock's key
	// between the braces.
	Key   string
	Value string
	// TTL is the Key's TTL; at least a millisecond, rounded up to one.
	TTL time.Duration
	// IfExists writes only if Key exists: for a holder that kept its own
	// copy of the value since its last write, which is stale if the key
	// expired or was deleted meanwhile. If Key is missing, nothing is
	// written and the error matches ErrStateMissing; with keep the lock is
	// kept, else released.
	IfExists bool
}

// ErrStateMissing is matched by Commit's error when Write.IfExists was set
// and the key was missing. Nothing was written.
var ErrStateMissing = errors.New("lock: the state to write over is missing")

// Ops are the operations of package lock that package manager uses, on its
// Locker and Lease types.
type Ops[Locker, Lease any] struct {
	// LockThen acquires the lock for key as Lock does, then runs cmds on
	// the Locker's connection and returns their replies, in order. When
	// the lock is free, and when it is handed over, the commands travel in
	// the same write as the acquire; otherwise they follow in a round trip
	// of their own. If they cannot be run the lease is released and the
	// error returned. Error replies are values.
	LockThen func(l *Locker, ctx context.Context, key string, cmds ...[]string) (*Lease, []resp.Value, error)
	// Commit stores w only if the lease still owns the lock, and then, in
	// the same script, releases the lock, or with keep extends it unless
	// another owner waits, who is handed it instead. held reports whether
	// the lease still holds the lock. The server's reply decides: a write
	// that landed returns a nil error even if the lease ran out locally
	// meanwhile. If the lease no longer owns the lock, nothing is written
	// and the error matches lock.ErrNotHeld; an error matching
	// conn.UncertainError means the write may or may not have landed, as
	// when ctx ends with it on its way.
	Commit func(ls *Lease, ctx context.Context, w Write, keep bool) (held bool, err error)
	// Commander is where the Locker sends commands on key, a Redis key
	// (the state kept under a lock, which shares the lock's hash tag):
	// on a cluster, the primary of key's slot.
	Commander func(l *Locker, key string) Commander
	// LockKey is the name in Redis of the lock for key, <prefix>{key}
	// with the Locker's prefix: a Write's Key must share its hash tag.
	// It sends nothing.
	LockKey func(l *Locker, key string) string
}

// Commander runs commands on the server, or the cluster node, that holds
// one lock's keys.
type Commander interface {
	Do(ctx context.Context, args ...string) (resp.Value, error)
}

var registered any // an Ops[lock.Locker, lock.Lease], set by Register

// Register records package lock's operations. Package lock calls it once,
// at init.
func Register[Locker, Lease any](ops Ops[Locker, Lease]) { registered = ops }

// Get returns the operations Register recorded. It panics if called with
// other types than package lock registered, which is a programming error
// in this module.
func Get[Locker, Lease any]() Ops[Locker, Lease] { return registered.(Ops[Locker, Lease]) }
