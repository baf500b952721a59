// Package lock is a Redis lock whose waiters hear of a release before the
// releaser can take the lock back, and which can hand the lock over in
// strict FIFO order across processes.
//
// A Locker hands out leases on named locks. Acquiring runs one script that
// sets the lock key (<prefix>{key}) to the lease's 128-bit random owner
// token with a TTL and issues the lease's fencing token. Every other
// script (release, extend, write-back) compares the owner token before it
// touches the lock. All keys of a lock share the hash tag {key}, so every
// script is valid on Redis Cluster; a key that would break that (one that
// begins with '}') is refused with ErrInvalid.
//
// Fast mode, the default. Waiters in other processes that have asked for
// the lock are handed it by the release itself (below); the others hear of
// a release through keyspace notifications (package subscriber), and so,
// after a hand-off window, do waiters whose request has not been served.
// The release is PING and the compare-and-delete EVALSHA in one write:
// Redis then reads both in one pass and, because it writes pending replies
// newest client first, writes the notification to the waiters before the
// releaser's reply. A waiter thus gets a head start on the releaser's next
// acquire. That is a head start, not a guarantee: on servers that order
// writes otherwise (I/O threads, proxies) it falls back to a plain race,
// never to a correctness problem. A waiter that misses a notification
// retries when the holder's TTL runs out.
//
// Requests and hand-offs. A waiter that found the lock held must not be
// passed over by a holder that releases and locks again in a tight loop,
// and a holder that keeps the lock between pieces of work (package
// manager's hold) must learn that others want it. So the first failed
// attempt of a waiting Lock appends its request,
// "<owner> <waiter-id> <channel>", to the list <prefix>{key}:wanted, and
// the first request of an empty list is published on that name as a
// channel (Lease.Wanted hears it). A request stays until its waiter
// acquires, is handed the lock or gives up, or the list's TTL (the lock's,
// from the last attempt that asked) ends. A release (Unlock, or a
// write-back of package manager) that finds requests hands the lock to the
// first in the same script: it takes the request off the list, sets the
// lock to the asker's owner token and publishes the waiter's ID to its
// process channel; a held write-back does the same instead of extending.
// The asker's next attempt finds the lock its own and confirms it. The
// former holder, asking again, finds the lock held and queues behind the
// others that asked: it cannot take the lock back, whatever the server's
// write order, and under contention each release wakes one waiter, not
// all. Waiters that have not asked yet still race, with the head start
// above; so does any Lock when the list has run dry.
//
// Since a waiter whose request stands is handed the lock by the release
// itself, it does not watch the key's keyspace events at first: on a busy
// lock every SET with a TTL (each acquire, hand-off and confirmation) is
// one, and they would reach every waiting process. It looks again after a
// hand-off window (see below), and watches the events from then on, so
// that a lock handed to a waiter that never confirms, or released by a
// client that does not hand on, reaches it when it frees. A Lock on a key
// that this process waits for, or that the Locker's last release of it
// handed on within the last second, asks at its first attempt.
//
// Hand-off windows. A lock handed to a waiter (in either mode) is set with
// a TTL of 500ms, or the lock's TTL if shorter, until the waiter confirms:
// its confirmation sets its own TTL, and its lease's deadline counts from
// the moment it sent the confirmation. The hand-off script first asks
// how many clients subscribe to the waiter's process channel itself
// (PUBSUB NUMSUB: pattern subscribers, such as an operator's
// PSUBSCRIBE *, are not counted; on shard channels, which have none,
// SPUBLISH's count); none means the waiter's process is gone (a process
// that dies closes its connections, and Redis forgets its subscriptions),
// and the hand-off goes to the next waiter in the same script. A waiter
// that is alive but stalled, or that died after its process received the
// hand-off and before it confirmed, keeps the lock for the window at most; in fair mode the next waiter then takes it at its
// next renewal, within a third of the queue lease (1s by default). A
// waiter whose subscriber is reconnecting at the moment of the hand-off is
// skipped like a dead one, and queues again, at the back, once it renews;
// so, on a cluster, is one whose lock's slot moved to another node a
// moment before and which still listens on the old one.
//
// Fair mode (WithFair) makes the order of acquisition a property of the
// protocol rather than of the server's write order or the scheduler's
// whims. Keys, all under the lock's hash tag:
//
//	<prefix>{key}          the lock: the owner's token, with the owner's TTL
//	<prefix>{key}:fence    the last fencing token handed out
//	<prefix>{key}:wanted   fast mode: the list of requests; in both modes, the channel of requests
//	<prefix>{key}:queue    fair mode: sorted set of queued owners, scored by arrival
//	<prefix>{key}:waiters  fair mode: hash: owner -> "<deadline-ms> <waiter-id> <channel>"
//	<prefix>{key}:seq      fair mode: arrival counter
//
// Acquire (one script). If the lock was handed to the caller, it confirms
// it. If the lock is free, the first live queued waiter is offered it and
// the caller takes it only if nobody was queued. Otherwise the caller is
// queued: a new entry gets the next arrival number, an existing one has
// its deadline pushed back.
//
// Release (one script, sent as PING + EVALSHA). It takes the caller out of
// the queue and, if the caller owns the lock, offers it: it pops queue
// entries in arrival order, dropping those past their deadline and those
// whose process no longer listens, and hands the lock to the first live
// one. With nobody to hand it to, it deletes the lock. A waiter that gives
// up runs the same script.
//
// Why each property holds:
//
//   - Arrival order: the arrival number comes from INCR inside the script
//     that queues, so it is the order in which the requests reached the
//     server; a hand-off always takes the lowest.
//   - Direct hand-off: the release script itself makes the head the owner;
//     the lock is never free in between, so the releaser, or anyone else,
//     cannot take it back.
//   - No herd: one PUBLISH to the head's process channel, naming one waiter
//     ID; the subscriber wakes that waiter alone.
//   - A dead waiter does not stall the queue: a process that died is
//     skipped at hand-off, in the release script, whatever else
//     subscribes (pattern subscribers are not counted); one that stopped
//     without dying keeps the lock for the hand-off window at most, and
//     its queue entry until its queue lease (3s) runs out.
//   - The queue's keys expire a queue lease after the last waiter renewed.
//   - Cancellation: a waiter that gives up runs the release script, which
//     removes its entry and, if a hand-off reached it in the meantime,
//     passes the lock on at once.
//   - A lost publish (a connection that died without Redis noticing yet):
//     every waiter runs the acquire script again after a reconnect and
//     every third of the queue lease; a waiter that was handed the lock
//     confirms it there if the window is still open, and otherwise the
//     lock, free again, goes to the next waiter at the next attempt.
//   - Any server with EVAL and PUBLISH/SUBSCRIBE (or, on a cluster,
//     SPUBLISH/SSUBSCRIBE): no keyspace notification and no particular
//     reply order is relied on.
//
// The guarantees, and what they rest on:
//
//   - Mutual exclusion by lease: a lease's local deadline is never later
//     than the lock's expiry in Redis. Every lease counts its TTL from a
//     moment before its acquire (or confirmation, or extension) was sent,
//     with the TTL the server got (TTLs are sent rounded up to the
//     millisecond), less a millisecond for the grain of the server's
//     expiry clock. This rests on the client's and the server's clocks
//     running at the same rate, and on the server not evicting keys: Open
//     refuses an evicting maxmemory-policy (New leaves it to its caller). A
//     restart without persistence, or a failover to a replica that had not
//     received the lock, loses every lock: a second owner can then acquire
//     while the first lease is open. Fencing tokens are the defence.
//   - Leases stay exact under every combination of calls: an extension to
//     a shorter TTL moves the deadline, and Done, earlier; extensions of
//     one lease (Extend, the watchdog's, a held write-back's) take turns,
//     so that the deadline follows the one Redis ran last; one whose
//     outcome is unknown counts as run where that ends the lease sooner.
//     Every TTL sent is range-checked (1ms to 100 years): outside it, the
//     call fails with ErrInvalid and sends nothing.
//   - Every way out releases: a Lock cancelled with its acquire on its
//     way undoes it in the background, a write-back the server refused
//     releases in the same call, and Close waits for the releases going
//     on in the background: a service that cancels its work and then
//     closes its Locker leaves no lock held.
//   - Errors tell the truth about writes: an error matching ErrNotHeld
//     means the server wrote nothing; an outcome the client cannot know
//     (the connection broke with the command in flight) is an error
//     matching conn.UncertainError. The server's reply decides, not a
//     local timer that fired meanwhile.
//   - Fencing tokens strictly increase per key, from every client: each is
//     one more than the last one handed out, and never less than the
//     server's clock in microseconds since the epoch. So they keep
//     increasing across a restart without persistence, a restart from an
//     old snapshot, and a counter that expired (an hour after the last
//     acquisition, or a TTL after it if the TTL is longer): this rests on
//     the server's clock not going back. A clock set back by more
//     than the time since the last acquisition, while the counter is gone,
//     can repeat tokens.
//   - Nothing is left behind: every key has a TTL. The lock has its
//     holder's, a request its asker's, the counter the fence retention,
//     and the queue keys the queue lease.
//
// Redis Cluster. Open with a redis+cluster:// URL makes a Locker on a
// cluster: each lock lives in one slot (its hash tag), and its scripts go
// to the primary that serves that slot, following MOVED and ASK. Through a
// reshard or a failover the cluster answers that it cannot serve a
// command now (TRYAGAIN while a slot is open for migration, CLUSTERDOWN
// on every node while a primary is replaced): a Lock waits through it
// for as long as its context allows, and a release or write-back is sent
// again within the release timeout, so neither strands a lock for its
// TTL.
// Keyspace events are published on the key's own node, so each primary
// that holds a watched lock gets a Subscriber of its own. On Redis 7
// nodes, hand-offs and requests go by SPUBLISH on shard channels in the
// lock's slot (a waiter's hand-off channel is
// <prefix>{key}:to:<its process channel>), so they stay on that node;
// PUBLISH would be sent to every node of the cluster. A slot that moves
// while waiters sleep is found at their next attempt, a second later at
// most, and they listen on the new node; a shard channel whose slot
// leaves a node is ended by the server, which wakes its waiters at once,
// and a fair waiter woken so renews its place with the new node's
// channel at once, so that no release passes it over.
// Replication to a primary's replicas is asynchronous: a failover can lose
// a lock, unless WithReplicaAck makes every acquire wait for replicas.
// Fencing tokens keep increasing across a failover as long as the clocks
// of the old primary and of the promoted replica differ by less than the
// failover takes.
//
// Locker.Inspect reads a lock's keys (those of its mode, listed above) in
// one script that writes nothing: who holds the lock and for how long, the
// holder's fencing token, whether it is asked to let go, and the queue.
//
// Concurrency: a Locker and its Leases are safe for concurrent use. The
// Locker owns its background goroutines and waits for them in Close:
// releases that outlive a caller who stopped waiting, a watchdog per lease
// with WithAutoExtend, the timer that ends a lease at its deadline once
// Done was called, and the listener behind Wanted. Callers of Lock wait in
// their own goroutine. Close ends in bounded time (see Close).
package lock
