package lock

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxKeyLen is the longest lock key accepted, in bytes. Redis allows far
// longer keys, but a lock key travels in every acquire, release and
// keyspace event, and a key this long is almost surely a mistake.
const maxKeyLen = 1024

// keyNames are the Redis keys of one lock. They share one hash tag, so
// that the scripts touching them stay valid on Redis Cluster.
type keyNames struct {
	lock    string // holds the owner's token while the lock is held
	wanted  string // a request, and its channel: a waiter asks the holder to let go
	fence   string // the last fencing token handed out
	queue   string // fair mode: waiting owners, scored by arrival
	waiters string // fair mode: owner -> "<deadline-ms> <waiter-id> <channel>"
	seq     string // fair mode: arrival counter
}

var suffixes = [...]string{":wanted", ":fence", ":queue", ":waiters", ":seq"}

func (l *Locker) keyNames(key string) keyNames {
	names, _ := l.claimStrings(key, noOwner)
	return names
}

// ownerLen is the length of an owner's token: 26 characters of a 32-letter
// alphabet, 130 random bits, as crypto/rand.Text makes them.
const ownerLen = 26

const ownerAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// owner says whether claimStrings makes an owner token.
type owner int

const (
	noOwner  owner = iota // the names alone
	newOwner              // the names and a new random owner token
)

// claimStrings returns a lock's key names and, if o asks, a new owner
// token. Every acquire needs them: they are cut from one string, laid out
// as <base>:wanted<base>:fence...<owner>, so they cost one allocation.
func (l *Locker) claimStrings(key string, o owner) (keyNames, string) {
	baseLen := len(l.opts.Prefix) + len(key) + 2
	var b strings.Builder
	b.Grow(len(suffixes)*baseLen + len(":wanted:fence:queue:waiters:seq") + ownerLen)
	ends := [len(suffixes)]int{}
	for i, suffix := range suffixes {
		b.WriteString(l.opts.Prefix)
		b.WriteByte('{')
		b.WriteString(key)
		b.WriteByte('}')
		b.WriteString(suffix)
		ends[i] = b.Len()
	}
	if o == newOwner {
		var random [ownerLen]byte
		_, _ = rand.Read(random[:]) // never fails (see crypto/rand.Read)
		for _, r := range random {
			b.WriteByte(ownerAlphabet[r%32])
		}
	}
	all := b.String()
	last := ends[len(ends)-1]
	return keyNames{
		lock:    all[:baseLen],
		wanted:  all[:ends[0]],
		fence:   all[ends[0]:ends[1]],
		queue:   all[ends[1]:ends[2]],
		waiters: all[ends[2]:ends[3]],
		seq:     all[ends[3]:last],
	}, all[last:]
}

// fastKeys are the KEYS of the fast mode's scripts: lock, fence, wanted.
func (n keyNames) fastKeys() []string { return []string{n.lock, n.fence, n.wanted} }

// fairKeys are the KEYS of the fair mode's scripts, in their order: lock,
// fence, queue, waiters, seq, wanted (see fair.lua).
func (n keyNames) fairKeys() []string {
	return []string{n.lock, n.fence, n.queue, n.waiters, n.seq, n.wanted}
}

func checkCall(ctx context.Context, prefix, key string) error {
	if ctx == nil {
		return fmt.Errorf("lock: %w: nil context", ErrInvalid)
	}
	return checkKey(prefix, key)
}

// checkKey refuses keys that are empty or too long, and keys whose lock
// names would not share a hash tag. The names are <prefix>{key}<suffix>;
// Redis hashes only what lies between the first '{' and the first '}'
// after it, unless that is empty, when it hashes the whole name. So the
// names share a slot exactly when the first '{' is not followed at once by
// a '}': a key that begins with '}' under a prefix without braces would
// put every name of the lock in a slot of its own.
func checkKey(prefix, key string) error {
	switch {
	case key == "":
		return fmt.Errorf("lock: %w: empty key", ErrInvalid)
	case len(key) > maxKeyLen:
		return fmt.Errorf("lock: %w: key of %d bytes, over the %d-byte limit", ErrInvalid, len(key), maxKeyLen)
	}
	base := prefix + "{" + key + "}"
	open := strings.IndexByte(base, '{')
	if base[open+1] == '}' {
		return fmt.Errorf("lock: %w: key %q under prefix %q has an empty hash tag: its keys would not share a cluster slot", ErrInvalid, key, prefix)
	}
	return nil
}

// maxDuration is the longest duration sent to Redis as a TTL: 100 years.
// Redis takes TTLs up to about 292 million years in milliseconds, but the
// scripts add TTLs to the server's clock in Lua numbers, which hold
// integers exactly only up to 2^53: a bound far below both keeps every sum
// exact. No lock needs more.
const maxDuration = 100 * 365 * 24 * time.Hour

// checkMillis refuses a duration that does not reach the millisecond that
// Redis counts TTLs in, or that exceeds maxDuration.
func checkMillis(name string, d time.Duration) error {
	switch {
	case d < time.Millisecond:
		return fmt.Errorf("lock: %w: %s %v, want at least 1ms", ErrInvalid, name, d)
	case d > maxDuration:
		return fmt.Errorf("lock: %w: %s %v, want at most 100 years (%v)", ErrInvalid, name, d, maxDuration)
	}
	return nil
}

// millis is d in whole milliseconds, rounded up, as sent to Redis: a lease
// that counts d locally then ends no later than the key does. d has passed
// checkMillis, so the sum cannot overflow; it is computed without one all
// the same.
func millis(d time.Duration) string {
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(int64(ms), 10)
}
