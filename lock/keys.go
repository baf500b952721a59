package lock

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// MaxKeyLen is the longest lock key accepted, in bytes. Redis allows far
// longer keys, but a lock key travels in every acquire, release and
// keyspace event, and a key this long is almost surely a mistake.
const MaxKeyLen = 1024

// keyNames are the Redis keys of one lock. They share the hash tag {key},
// so that the scripts touching them stay valid on Redis Cluster.
type keyNames struct {
	lock   string // holds the owner's token while the lock is held
	fence  string // counter of fencing tokens; never expires
	wanted string // a flag, and a channel: a waiter asks the holder to let go
	next   string // a polite owner waiting behind the one asking
}

func (l *Locker) keyNames(key string) keyNames {
	// Every acquire needs the names: they are cut from one string, laid out
	// as <base>:wanted<base>:fence<base>:next, so they cost one allocation.
	const wanted, fence, next = ":wanted", ":fence", ":next"
	var b strings.Builder
	baseLen := len(l.opts.prefix) + len(key) + 2
	b.Grow(3*baseLen + len(wanted) + len(fence) + len(next))
	for _, suffix := range []string{wanted, fence, next} {
		b.WriteString(l.opts.prefix)
		b.WriteByte('{')
		b.WriteString(key)
		b.WriteByte('}')
		b.WriteString(suffix)
	}
	all := b.String()
	fenceAt := baseLen + len(wanted)
	nextAt := fenceAt + baseLen + len(fence)
	return keyNames{
		lock:   all[:baseLen],
		wanted: all[:fenceAt],
		fence:  all[fenceAt:nextAt],
		next:   all[nextAt:],
	}
}

// fastKeys are the keys of the fast mode's acquire script: lock, fence,
// wanted, next.
func (n keyNames) fastKeys() []string { return []string{n.lock, n.fence, n.wanted, n.next} }

// fairKeys are the keys of the fair mode's scripts, in their KEYS order:
// lock, fence, queue, waiters, seq, wanted (see fair_scripts.go).
func (n keyNames) fairKeys() []string {
	return []string{n.lock, n.fence, n.lock + ":queue", n.lock + ":waiters", n.lock + ":seq", n.wanted}
}

func checkCall(ctx context.Context, key string) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	return checkKey(key)
}

func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key of %d bytes, over the %d-byte limit", ErrInvalid, len(key), MaxKeyLen)
	}
	return nil
}

// checkMillis refuses a duration that does not reach the millisecond that
// Redis counts TTLs in.
func checkMillis(name string, d time.Duration) error {
	if d < time.Millisecond {
		return fmt.Errorf("%w: %s %v, want at least 1ms", ErrInvalid, name, d)
	}
	return nil
}
