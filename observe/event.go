package observe

import (
	"context"
	"time"
)

// Observer is told what a Locker does, one Event at a time (see the
// package doc for who calls it, and when).
type Observer interface {
	Observe(Event)
}

// QueueSize is how many events a Locker keeps for its observers while
// they are busy: enough for the bursts of a busy process, which a slow
// observer then catches up on. Past it, events are dropped and counted.
// The end of a call or a lease whose start was queued (CallEnded,
// LeaseEnded) is kept beyond it, and counts for none of it.
const QueueSize = 1024

// Event is one thing a Locker did or saw. Kind says which fields are set;
// the others are zero.
type Event struct {
	Kind Kind
	// Time is when it happened, by this process's clock.
	Time time.Time
	// Call identifies a call of Lock, TryLock or Modify, from CallBegan to
	// CallEnded, and the lease it obtained; unique in the process. Zero
	// for an event that belongs to no call.
	Call uint64
	// Op is the operation: the call's, or, for Uncertain, ExtendFailed and
	// ReleaseFailed, the one whose outcome it tells of.
	Op Op
	// Key is the lock's key as the caller named it, or the Modify's token.
	Key string
	// Mode is the Locker's. A Subscriber knows none: its events
	// (ConnectionLost, Reconnected, HealthCheckFailed), and Dropped, have
	// the mode of the Locker whose Open made the Subscriber, and none for
	// a Subscriber made for lock.New.
	Mode Mode
	// Context is a CallBegan's: the caller's context, for an adapter that
	// parents a span on the caller's. An observer must not keep it past
	// the call's CallEnded.
	Context context.Context
	// How is how a lease was obtained: on LeaseGranted, and on a CallEnded
	// with no error.
	How How
	// Reason is why a lease ended: on LeaseEnded.
	Reason Reason
	// Token is the lease's fencing token: on LeaseGranted, LeaseEnded, and
	// a CallEnded with no error.
	Token uint64
	// Duration is, on CallEnded, how long the call took; on LeaseEnded,
	// how long the lease was held: for one that ran out, from its grant
	// to its deadline, however late its end was noticed; on HandedOver, how long from the hand-off's
	// message coming in to the waiter reading it; on Reconnected, how
	// long the connection was down.
	Duration time.Duration
	// Err is a CallEnded's error (nil for success), and what went wrong
	// for Uncertain, ExtendFailed, ReleaseFailed, ConnectionLost and
	// HealthCheckFailed.
	Err error
	// Count is a Dropped event's number of events dropped, and a
	// WaitersSkipped event's number of waiters.
	Count int
}

// Kind is what an Event tells of.
type Kind uint8

const (
	// CallBegan: a call began (Call, Op, Key, Mode, Context).
	CallBegan Kind = iota + 1
	// Asked: the call found the lock held and asked for it: in fast mode
	// it asked the holder to let go, in fair mode it queued (Call, Key).
	// Once per call, at its first ask.
	Asked
	// HandedOver: a release handed the lock to the call's waiter, whose
	// message came in Duration before the waiter read it (Call, Key).
	HandedOver
	// Confirming: the call confirms a hand-off with an acquire, as it
	// does where the hand-off's message cannot stand for the lease (Call,
	// Key).
	Confirming
	// WritingBack: a Modify sends its write-back (Call, Key).
	WritingBack
	// LeaseGranted: the call obtained a lease (Call, Key, Mode, How,
	// Token). It comes before the call's CallEnded.
	LeaseGranted
	// CallEnded: the call returned (Call, Op, Key, Mode, Duration, Err;
	// How and Token if it obtained a lease).
	CallEnded
	// LeaseEnded: a lease ended (Call, Key, Mode, Token, Reason, Duration
	// held).
	LeaseEnded
	// Uncertain: a write whose outcome is unknown: it may or may not have
	// run on the server (Op, Key, Err). A caller that got the error sees
	// it too; one in the background is seen only here.
	Uncertain
	// ExtendFailed: the watchdog (lock.WithAutoExtend) could not extend a
	// lease, and tries again while the lease lasts (Key, Token, Err).
	ExtendFailed
	// ReleaseFailed: a release in the background (of an Unlock whose
	// caller left, a lease that ran out, a Lock that gave up) failed or
	// was abandoned: the lock's TTL frees it (Key, Err).
	ReleaseFailed
	// ConnectionLost: a subscribe connection broke (Err); waiters hear
	// nothing until Reconnected.
	ConnectionLost
	// Reconnected: a subscribe connection is back, Duration after it was
	// lost, and every waiter looks at its lock again.
	Reconnected
	// HealthCheckFailed: a subscribe connection's health check found no
	// answer (Err); the connection is replaced.
	HealthCheckFailed
	// Dropped: Count events found the queue full and were dropped
	// before this one.
	Dropped
	// WaitersSkipped: a release passed over Count waiters before it
	// handed the lock on or let it go, since their process was gone (no
	// subscriber heard their channel) or, in fair mode, their place in
	// the queue had run out unrenewed (Key).
	WaitersSkipped
)

var kindNames = [...]string{
	CallBegan: "call began", Asked: "asked", HandedOver: "handed over", Confirming: "confirming",
	WritingBack: "writing back", LeaseGranted: "lease granted", CallEnded: "call ended",
	LeaseEnded: "lease ended", Uncertain: "uncertain", ExtendFailed: "extend failed",
	ReleaseFailed: "release failed", ConnectionLost: "connection lost", Reconnected: "reconnected",
	HealthCheckFailed: "health check failed", Dropped: "dropped", WaitersSkipped: "waiters skipped",
}

func (k Kind) String() string { return name(kindNames[:], int(k)) }

// Op is a Locker's operation.
type Op uint8

const (
	Lock Op = iota + 1
	TryLock
	Modify
	Unlock
	Extend
	Commit
	// Release is a release no caller waits for: in the background, or
	// by Close.
	Release
)

var opNames = [...]string{Lock: "lock", TryLock: "trylock", Modify: "modify", Unlock: "unlock",
	Extend: "extend", Commit: "commit", Release: "release"}

func (o Op) String() string { return name(opNames[:], int(o)) }

// Mode is a Locker's mode.
type Mode uint8

const (
	Fast Mode = iota + 1
	Fair
)

var modeNames = [...]string{Fast: "fast", Fair: "fair"}

func (m Mode) String() string { return name(modeNames[:], int(m)) }

// How is how a lease was obtained.
type How uint8

const (
	// Free: the call's first attempt found the lock free.
	Free How = iota + 1
	// AfterWait: the call waited, and found the lock free at a later
	// attempt (a release it heard of, or a TTL that ran out).
	AfterWait
	// Handed: a release handed the lock to the call.
	Handed
)

var howNames = [...]string{Free: "free", AfterWait: "after wait", Handed: "handed over"}

func (h How) String() string { return name(howNames[:], int(h)) }

// Reason is why a lease ended.
//
// A lease still held when its deadline passed ran out there, whether or
// not its holder asked for Done: an Unlock, a write-back, an extension
// that finds the lock gone, Close or a first Done asked late each end it
// for Expired (or ExtensionFailed), as the timer behind Done would have,
// with a Duration that runs to the deadline. The deadline is the one the
// lease's last extension left. It is compared with an Unlock's beginning
// (a releasing write-back's too), so that an Unlock begun in time is
// Released whatever its reply, which decides only what Unlock returns;
// and with the reply of an extension or of a write-back that keeps the
// lock. One exception: where nobody asked for Done, nothing ends the
// lease at its deadline, and an extension, or a write-back that keeps
// the lock, that finds the lock still the lease's (the local deadline
// errs early) moves the deadline on, and the lease goes on.
type Reason uint8

const (
	// Released: by its holder before its deadline (Unlock, or a
	// write-back that released the lock or handed it on).
	Released Reason = iota + 1
	// Expired: its TTL ran out by this process's clock, without an
	// extension in time: with no watchdog, or with one whose extensions
	// had not failed (an Extend to a shorter TTL than the watchdog's
	// pace, a process paused past the deadline).
	Expired
	// Lost: before its deadline, an extension or a write found the lock
	// gone or another owner's.
	Lost
	// ExtensionFailed: the lease had a watchdog (lock.WithAutoExtend),
	// whose last extension had failed when the lease ran out.
	ExtensionFailed
	// Closed: the Locker's Close released it before its deadline.
	Closed
	// Removed: the server told that the lock's key was removed: DEL,
	// UNLINK, RENAME, an expiry set in the past, or expired or evicted by
	// the server (its notice does not say which). Told only of a lease
	// whose Done was asked for, as are Overwritten, Flushed and Vanished.
	Removed
	// Overwritten: the server told that another client wrote the lock's
	// key.
	Overwritten
	// Flushed: the server told that the lock's database was flushed.
	Flushed
	// Vanished: the lock was gone when the process reached the server
	// again after its connection broke (a failover, a restart without
	// persistence).
	Vanished
)

var reasonNames = [...]string{Released: "released", Expired: "expired", Lost: "lost",
	ExtensionFailed: "extension failed", Closed: "closed", Removed: "removed",
	Overwritten: "overwritten", Flushed: "flushed", Vanished: "vanished"}

func (r Reason) String() string { return name(reasonNames[:], int(r)) }

func name(names []string, i int) string {
	if i > 0 && i < len(names) && names[i] != "" {
		return names[i]
	}
	return "unknown"
}
