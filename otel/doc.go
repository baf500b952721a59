// Package batonotel reports what a baton Locker does as OpenTelemetry
// metrics and spans. Its [Observer] is an [observe.Observer] for
// [lock.WithObserver], in a module of its own, so that the library's
// go.mod names no telemetry SDK.
//
// Three lines wire it, with the providers the program has set up:
//
//	obs, err := batonotel.New(batonotel.WithMeterProvider(mp), batonotel.WithTracerProvider(tp))
//	if err != nil { ... }
//	locker, err := lock.Open(ctx, addr, lock.WithObserver(obs))
//
// Without [WithMeterProvider] and [WithTracerProvider] it uses the
// global providers ([otel.SetMeterProvider], [otel.SetTracerProvider]).
// One Observer may serve every Locker of a process. A Manager built on an
// observed Locker reports its Modify calls through it too. Logs are
// another observer of the same events: [lock.WithLogger] logs what no
// caller sees ([observe.Log] lists the records).
//
// # Metrics
//
// Durations are histograms of float64 seconds (unit "s"); counts are
// integer counters and up-down counters whose units name what they count,
// such as "{lease}". Every metric of an event that comes from a Locker
// carries baton.lock.mode (fast or fair); those of an operation carry
// baton.lock.op (lock, trylock, modify, unlock, extend, commit, release).
//
//   - baton.lock.wait.duration: how long a Lock or TryLock call took,
//     granted or not. On success with baton.lock.how: free (the first
//     attempt found the lock free), after_wait (a later attempt did), or
//     handed_over (a release handed it over); on failure with error.type.
//   - baton.lock.hold.duration: how long a lease was held (to its
//     deadline, for one that ran out), with baton.lock.lease.end_reason:
//     released, expired, lost, extension_failed or closed.
//   - baton.modify.duration: how long a Manager's Modify call took
//     (error.type on failure).
//   - baton.lock.handoff.duration: how long a hand-off's message waited
//     between its arrival and the waiter reading it.
//   - baton.lock.acquisitions: Lock and TryLock calls that returned a
//     lease, with baton.lock.how.
//   - baton.lock.leases.ended: leases that ended, with the end reason;
//     baton.lock.leases.lost: those that ended expired, lost or
//     extension_failed, that is, while their holder still held them
//     (a lease that ran out counts here even where its holder's Unlock,
//     or Close, was the first to notice).
//   - baton.lock.leases.held: leases granted and not yet ended.
//   - baton.lock.waiters: Lock and TryLock calls in progress that have
//     not been granted a lease yet (Modify calls are not counted; the
//     Lock each makes is).
//   - baton.lock.uncertain: writes whose outcome is unknown (they may or
//     may not have run on the server), with the operation.
//   - baton.lock.extend.failures: failed extensions of the watchdog
//     (lock.WithAutoExtend); baton.lock.release.failures: releases in
//     the background that failed, leaving the lock to its TTL. Both with
//     error.type.
//   - baton.lock.release.skipped_waiters: waiters a release passed over
//     because their process was gone (or, in fair mode, their place in
//     the queue had run out): a sign of instances that crash or stall.
//   - baton.subscriber.reconnects and
//     baton.subscriber.health_check.failures: the subscribe connection
//     that waiters hear releases on, broken and dialled again, or
//     found silent. They carry the mode of the Locker whose Open made
//     the Subscriber, and none for a Subscriber made for lock.New.
//   - baton.observe.dropped: events the Locker dropped because its
//     observers fell behind (see [observe.QueueSize]).
//     Where it is not zero, the other metrics miss events: a call or a
//     lease dropped whole (the queue drops a start with its end, never
//     the end of a start it queued), or a step of a call.
//
// error.type is a short word, from errors.Is and errors.As, never the
// error's text: not_acquired, not_held, closed, invalid, undecodable,
// uncertain (an outcome left unknown, whatever its cause), canceled,
// deadline_exceeded, or other.
//
// The duration histograms have bucket boundaries from 10µs to five
// minutes. A view of the meter provider replaces them, selecting the
// instruments by [ScopeName]:
//
//	view := sdkmetric.NewView(
//		sdkmetric.Instrument{Name: "baton.lock.wait.duration", Scope: instrumentation.Scope{Name: batonotel.ScopeName}},
//		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: []float64{0.001, 0.01, 0.1, 1}}},
//	)
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(view))
//
// # Spans
//
// Each Lock, TryLock and Modify call is a span of kind internal,
// named baton.lock, baton.trylock or baton.modify, a child of the span in
// the context the call was given, from the call to its return. Its
// attributes are baton.lock.mode, baton.lock.op and, on success,
// baton.lock.how. Its events are its steps, each at the time it
// happened: "asked" (the lock was held, and the call asked for it, or
// queued in fair mode), "handed over" (a release handed the lock to it,
// with baton.lock.handoff.duration in seconds), "confirming" (it confirms
// a hand-off with an acquire), "writing back" (a Modify sends its state),
// and "lease granted" (with baton.lock.how and baton.lock.token, the
// fencing token). A call that fails records its error (an "exception"
// event with the error's text, in which baton redacts addresses), and
// its status is Error with error.type as the description. A Modify's span and the
// span of the Lock it makes are siblings under the caller's span: the
// events do not say that one call is part of another.
//
// # Cardinality and keys
//
// Every attribute above takes a few values, so each metric has a few
// series per process. Keys are left out: a service that locks one key per
// customer would otherwise make a series per customer. [WithKeyLabel] maps
// a key to a label of the caller's choosing, which becomes the attribute
// baton.lock.key on metrics and spans; make it map many keys to one
// label, such as the key's prefix:
//
//	batonotel.WithKeyLabel(func(key string) string {
//		prefix, _, _ := strings.Cut(key, ":")
//		return prefix // "orders:42" -> "orders"
//	})
//
// # Concurrency
//
// A Locker delivers its events from a goroutine of its own, never from
// one that a lock's progress waits on, so the time the Observer takes
// delays no lock. Observe is safe for concurrent use: an Observer given
// to several Lockers is called from each one's goroutine. It keeps each
// call's span from its CallBegan to its CallEnded, and never the call's
// context. An Observer attached while a call was in progress measures
// that call's end but makes no span of it.
package batonotel
