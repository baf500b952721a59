// Package lock is a Redis lock whose waiters hear of a release before the
// releaser can take the lock back.
//
// A Locker hands out leases on named locks. Acquiring runs one script that
// sets the lock key (<prefix>{key}) to the lease's 128-bit random owner
// token with SET NX PX and, on success, increments the lock's fencing
// counter (<prefix>{key}:fence): the returned count is the lease's fencing
// token, strictly increasing per key across all clients. Both keys share
// the hash tag {key}, so the script is valid on Redis Cluster. Every other
// script (release, extend) compares the owner token before it touches the
// lock.
//
// Fast mode, the default. Waiters in other processes hear of a release
// through keyspace notifications (package subscriber). The release is PING
// and the compare-and-delete EVALSHA in one write: Redis then reads both in
// one pass and, because it writes pending replies newest client first,
// writes the notification to the waiters before the releaser's reply. A
// waiter thus gets a head start on the releaser's next acquire. That is a
// head start, not a guarantee: on servers that order writes otherwise (I/O
// threads, proxies) it falls back to a plain race, never to a correctness
// problem. A waiter that misses a notification retries when the holder's
// TTL runs out.
//
// Requests. A holder that keeps the lock between writes (package manager,
// WithHold) must learn that others want it. In fast mode, every failed
// attempt of a Lock sets the flag <prefix>{key}:wanted to its owner token
// and publishes on that name as a channel. The flag is one slot, the
// latest asker's; it stays until that waiter acquires or gives up (it
// withdraws), or its TTL ends. The holder
// reads the flag in its write-back script (ExtendSetting) and listens on
// the channel (WantedChannel), and lets go. Having let go, it acquires
// again politely (LockThenPolitely): finding the lock free with another's
// request standing, it does not take it but waits next in line
// (<prefix>{key}:next). The waiter, on acquiring, finds the polite owner's
// request in its place, so it is asked to let go in turn. If the waiter
// does not come within the polite grace (WithPoliteGrace), the polite
// owner takes the lock and, if it is still the one waiting next, drops the
// request. A plain Lock takes a free
// lock whatever the flag says.
//
// Fair mode (WithFair) makes the order of acquisition a property of the
// protocol rather than of the server's write order or the scheduler's
// whims.
//
// Keys, all under the lock's hash tag so that every script is valid on
// Redis Cluster:
//
//	<prefix>{key}          the lock: the owner's token, with the owner's TTL
//	<prefix>{key}:fence    fencing counter
//	<prefix>{key}:wanted   a request: in fast mode a waiter's owner token, in fair mode "1"
//	<prefix>{key}:next     fast mode: a polite owner waiting behind the request
//	<prefix>{key}:queue    sorted set of queued owners, scored by arrival
//	<prefix>{key}:waiters  hash: owner -> "<deadline-ms> <ttl-ms> <waiter-id> <channel>"
//	<prefix>{key}:seq      arrival counter
//
// Acquire (one script). If the caller already owns the lock (it was handed
// over and the message was lost), it says so with the current fencing
// token. If the lock is free, the first live queued waiter is promoted (see
// below) and the caller takes the lock only if nobody was queued. Otherwise
// the caller is queued: a new entry gets the next arrival number, an
// existing one just has its deadline pushed back.
//
// Release (one script, sent as PING + EVALSHA). It takes the caller out of
// the queue and, if the caller owns the lock, promotes: it pops queue
// entries in arrival order, dropping those past their deadline, and makes
// the first live one the owner (SET with that waiter's own TTL), increments
// the fencing counter, and publishes "<waiter-id> <fence>" to that waiter's
// process channel. With nobody to promote, it deletes the lock. A waiter
// that gives up runs the same script.
//
// Why each property holds:
//
//   - Arrival order: the arrival number comes from INCR inside the script
//     that queues, so it is the order in which the requests reached the
//     server; promotion always takes the lowest.
//   - Direct hand-off: the release script itself makes the head the owner;
//     the lock is never free in between, so the releaser, or anyone else,
//     cannot take it back. The published fence tells the new owner it owns
//     the lock, with no further round trip.
//   - The releaser waits its turn: asking again, it finds the lock held (by
//     the head it just promoted) or others queued, and is queued behind
//     them.
//   - No herd: one PUBLISH to the head's process channel, naming one waiter
//     ID; the subscriber wakes that waiter alone.
//   - A vanished waiter does not stall the queue: its entry's deadline is
//     pushed back only by its own renewals, every third of the queue lease,
//     so it is skipped at hand-off once the lease has run out. Handed the
//     lock just as it died, it holds it for its TTL at most: a later acquire
//     attempt by any waiter finds the lock free and promotes the next.
//   - Cancellation: a waiter that gives up runs the release script, which
//     removes its entry and, if a hand-off reached it in the meantime,
//     passes the lock on at once.
//   - A lost publish (the subscriber was reconnecting): every waiter runs
//     the acquire script again after a reconnect and every third of the
//     queue lease; a waiter that owns the lock learns it there.
//   - Any server with EVAL and PUBLISH/SUBSCRIBE: no keyspace notification
//     and no particular reply order is relied on.
//
// Concurrency: a Locker and its Leases are safe for concurrent use. The
// Locker owns two kinds of goroutines and waits for both in Close: releases
// that outlive a caller who stopped waiting, and one watchdog per lease
// when WithAutoExtend is on. Callers of Lock wait in their own goroutine.
package lock
