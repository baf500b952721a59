package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/batonlock/baton/resp"
)

// shownOwnerLen is how much of an owner token Info shows. The whole token
// (26 characters, 128 random bits) is a credential: with it anyone can
// release or extend the lock as its holder, and an Info is made to be
// printed and logged. Eight characters, 40 bits, tell holders apart (two
// owners share them once in a trillion) and give away too little to act
// as one.
const shownOwnerLen = 8

// Info is one lock as Inspect found it: a snapshot taken at one instant by
// the server, whose clock counts every time in it.
type Info struct {
	// Held reports whether the lock is held: <prefix>{key} exists. A lock
	// handed to a waiter is held, by that waiter, from the release on.
	Held bool

	// Holder is the start of the holder's owner token, the value of
	// <prefix>{key}: its first 8 characters, enough to tell holders apart
	// but not to act as one (the whole token would let anyone who reads
	// the Info release or extend the lock). "" when the lock is free.
	Holder string

	// TTL is how long the lock has left unless its holder extends or
	// releases it: the PTTL of <prefix>{key}. 0 when the lock is free; -1
	// for a lock that never expires, which no baton client sets.
	TTL time.Duration

	// Token is the holder's fencing token, or 0 when it cannot be known.
	// It is read from <prefix>{key}:fence, the last token handed out.
	// Only an acquire or a hand-off hands one out, to the owner it makes
	// the holder, so while the lock is held that is the holder's token,
	// but for two cases. The counter may be gone: it expires a fence
	// retention after the last acquisition, which a holder that keeps
	// extending outlasts; Token is then 0. And the lock may be in a
	// hand-off that its waiter confirms, rather than take the lease from
	// the release's message (see the package doc): from the release until
	// the confirmation, the counter holds the token the release issued,
	// which no lease takes (or, from a release of an earlier version, the
	// previous holder's). Either way the new holder's, once it confirms,
	// is greater. Nothing tells such a hand-off from a holding. 0 when the
	// lock is free.
	Token uint64

	// Wanted reports whether an owner other than the holder asked for the
	// lock and waits for it. In fast mode: the first request on the list
	// <prefix>{key}:wanted is from an owner other than the holder (a
	// request stays until its asker acquires, is handed the lock or gives
	// up, or the list's TTL, the lock's, ends). In fair mode:
	// the queue is not empty. While the lock is held, the holder is asked
	// to let go: it is what closes the holder's Lease.Wanted.
	Wanted bool

	// Queue is, in fair mode, the owners waiting for the lock, in the
	// order they will be offered it: the members of <prefix>{key}:queue by
	// arrival. Owner is the start of the waiter's owner token, as Holder.
	// LeaseLeft is how long its place is kept without a renewal: the
	// deadline in its entry of <prefix>{key}:waiters
	// ("<deadline-ms> <waiter-id> <channel>") less the server's clock. A
	// live waiter renews every third of its queue lease, so a LeaseLeft
	// far below that lease means a waiter that stopped renewing; once
	// negative, the next hand-off drops the entry. Empty in fair mode when
	// nobody waits; nil in fast mode, which has no queue.
	Queue []struct {
		Owner     string
		LeaseLeft time.Duration
	}

	// Replies are the replies to the commands given to Inspect, in order,
	// error replies among them as values; nil when none was given.
	Replies []resp.Value
}

// Inspect reports who holds the lock for key and for how long, and who
// waits for it, and changes nothing. It reads the lock's keys in one
// script, in one round trip: the Info is one consistent snapshot, and its
// times are counted by the server's clock, not this process's. By the
// time Inspect returns, the lock may have changed hands.
//
// cmds, if any, run right after the script, in the same write, on the
// server or the cluster node that holds the lock, without taking it: to
// read state kept beside the lock (named as Key says) along with it. Their
// replies are in Info.Replies. They are meant to read: nothing orders them
// against a holder's writes.
//
// It reads the keys of the Locker's mode: a fast Locker sees no queue
// (Queue is nil), and a fair one no fast-mode request. Invalid keys are
// refused as Lock refuses them (ErrInvalid); a closed Locker returns
// ErrClosed. A key of a type baton never writes at one of the lock's
// names (a hash where the lock is, say) is the server's own error, which
// matches resp.WrongType. A reply that no Redis running this package's
// script gives, or keys of the right type holding values that baton never
// writes (a fence that is not a number), are an error matching
// resp.ErrProtocol.
func (l *Locker) Inspect(ctx context.Context, key string, cmds ...[]string) (Info, error) {
	if err := checkCall(ctx, l.opts.Prefix, key); err != nil {
		return Info{}, err
	}
	if !l.enter() {
		return Info{}, errLockerClosed
	}
	defer l.exit()
	n := l.keyNames(key)
	r, err := runScript(ctx, l.nodes.commander(n.lock), scriptCall{script: &inspectScript,
		keys: []string{n.lock, n.fence, n.wanted, n.queue, n.waiters}, args: inspectArgs{fair: l.opts.Fair}.argv()}, cmds)
	if err != nil {
		return Info{}, fmt.Errorf("lock %q: inspect: %w", key, err)
	}
	info, err := readInfo(r.reply, l.opts.Fair)
	if err != nil {
		return Info{}, fmt.Errorf("lock %q: inspect: %w", key, err)
	}
	info.Replies = r.after
	return info, nil
}

// shownOwner is the part of an owner token an Info shows.
func shownOwner(owner string) string {
	return owner[:min(len(owner), shownOwnerLen)]
}
