// Package observe is what a Locker tells about its work: the vocabulary
// of events that a metrics or tracing adapter, or a log, turns into
// something an operator can read.
//
//	obs := myObserver{} // implements Observe(observe.Event)
//	locker, err := lock.Open(ctx, addr, lock.WithObserver(obs), lock.WithLogger(slog.Default()))
//
// The OpenTelemetry adapter, in the module github.com/batonlock/baton/otel,
// is such an Observer; lock.WithLogger is another, built on Log. Nothing
// here is needed to use a lock: a Locker with no observer does no work for
// one, and a Lock and Unlock allocate no more than without this package.
//
// # What is observed
//
// Each call of Lock, TryLock and a Manager's Modify is a call: one
// CallBegan, then steps (Asked, HandedOver, Confirming, WritingBack) as
// they happen, then one CallEnded, all with the same Event.Call. A lease
// that a call obtains is one LeaseGranted, before that call's CallEnded,
// and one LeaseEnded, later, which says why it ended. What happens where
// no caller sees an error is an event of its own: an outcome left unknown
// (Uncertain), a watchdog that could not extend (ExtendFailed), a release
// in the background that failed or was abandoned (ReleaseFailed), a
// subscribe connection lost and dialled again (ConnectionLost,
// Reconnected), a health check that failed (HealthCheckFailed), a release
// that passed over waiters whose process was gone (WaitersSkipped). Kind's
// constants say which fields each kind sets.
//
// Keys are in every event that concerns a lock, as the caller named them
// (Lock's key, not the Redis key). A metrics adapter should not make them
// attributes as they are: a service with a lock per customer would make a
// series per customer. The OpenTelemetry adapter leaves them out unless
// told how to map a key to a label of its own.
//
// # Delivery
//
// A Locker delivers events to its observers from one goroutine of its own,
// in the order they happened, and never calls an observer from a goroutine
// that a lock's progress depends on: a hand-off reaches its waiter, and a
// release its server, whatever an observer does. That goroutine takes the
// events in batches, resting a millisecond after each, so that a busy
// Locker costs its callers' cores one wake-up a millisecond rather than
// one an event: an observer hears of an event about a millisecond late at
// most, beyond the time it takes over the events before. Events wait for that
// goroutine in a queue of QueueSize; an event that finds the queue full is
// dropped, and counted: a Dropped event with the count goes into the
// queue ahead of the next event that finds room (or, if none does, is
// delivered at Close). A full queue never drops the end of a call or a
// lease whose start it queued: such an end is queued whatever the queue
// holds, and takes none of its room, so that leases held for long, and
// calls that wait for long, leave the other events all of it; a start
// that finds no room is dropped with its end. So an observer that pairs
// them (spans, calls in progress, leases held) is never left with a
// start that has no end, nor told of an end whose start it never saw.
// An observer that panics loses that one event; the panic is recovered
// and delivery goes on. A Locker's Close delivers the events
// queued before it returns, so that a test that closes its Locker has seen
// everything; an observer still busy after the release timeout
// (lock.WithReleaseTimeout) loses the rest. Close waits for the call in
// progress: an observer must return. A call still going on when its
// Locker closes (a Manager's Modify whose function runs: Close does not
// wait for it) ends for its observers at Close, with a CallEnded whose
// Err matches lock.ErrClosed; what it reports afterwards is dropped.
// An observer given to several Lockers (or to a Locker and a Subscriber
// made for New) is called from each one's goroutine, and must then be safe
// for concurrent use.
package observe
