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
// Concurrency: a Locker and its Leases are safe for concurrent use. The
// Locker owns two kinds of goroutines and waits for both in Close: releases
// that outlive a caller who stopped waiting, and one watchdog per lease
// when WithAutoExtend is on. Callers of Lock wait in their own goroutine.
package lock
