// Package lock is a Redis lock whose release hands the lock to the waiter
// that asked for it, so that a holder that locks again in a tight loop
// cannot pass waiting processes over, and which can hand the lock over in
// strict FIFO order across processes ([WithFair]).
//
//	l, err := lock.Open(ctx, "redis://localhost:6379/0")
//	if err != nil {
//		return err
//	}
//	defer l.Close()
//
//	lease, err := l.Lock(ctx, "orders:42")
//	if err != nil {
//		return err
//	}
//	defer lease.Unlock(ctx)
//
//	// Hand the fencing token to the resource the lock protects: it refuses
//	// writes carrying a token lower than one it has seen.
//	return orders.Write(lease.Token(), "42", "shipped")
//
// The protocol, and why each property below holds, is described in
// docs/PROTOCOL.md in the module's repository.
//
// # Lockers and leases
//
// [Open] connects to a server (host:port, or a redis://, rediss:// or
// unix:// URL, as [conn.Dial] takes them) or to a Redis Cluster (a
// redis+cluster:// URL), and returns a [Locker] that owns its
// connections. [New] makes a Locker on a [conn.Client] and a
// [subscriber.Subscriber] that the caller made and keeps.
//
// A Locker hands out a [Lease] per holding of a named lock.
// [Locker.Lock] waits as long as its context allows; [Locker.TryLock]
// makes one attempt and returns [ErrNotAcquired] if another owner holds
// the lock. A Locker's leases are not reentrant: a second Lock of a key
// from the same Locker waits like any other owner.
//
// A lease lasts the lock's TTL ([WithTTL], 10s by default), counted
// from before the command that set it (for a fast hand-off, from the
// waiter's first ask, so that it may start with up to half of it gone),
// unless it is extended, by [Lease.Extend] or by a watchdog that
// [WithAutoExtend] starts, which extends it to the full TTL whenever two
// thirds of it are left, every TTL/3. [Lease.Done] is
// closed when the lease ends: released, lost, or run out by this
// process's clock, which errs early; [Lease.Context] gives work under
// the lock a context that ends with the lease, and [Lease.Err] says why
// it ended. [Lease.Wanted] is closed when another
// owner asks for the lock, for a holder that keeps it between pieces of
// work. [Lease.Unlock] releases it; [Locker.Close] releases every lease
// still held.
//
// The lock for key k lives at <prefix>{k} ([Locker.Key]; the prefix is
// "baton:" by default, [WithKeyPrefix]), and every other key of the lock
// shares its hash tag {k}. A key must be non-empty, at most 1024 bytes,
// and must not leave the names an empty hash tag (a key that begins with
// '}' under a prefix without braces): otherwise the call fails with
// [ErrInvalid] and nothing is sent. Each lease holds the lock with an
// owner token of 130 random bits, which every script compares before it
// releases, extends or writes.
//
// # Fast mode
//
// Fast mode is the default. A waiter that finds the lock held asks for
// it: its request joins a list in Redis, and the holder's next release
// hands the lock to the first request in the same script, and wakes that
// waiter alone. The releaser cannot take the lock back, whatever the
// server's write order, and under contention each release wakes one
// waiter, not all. The release sets the lock to the waiter's owner token
// with the releaser's TTL, issues its fencing token and sends both to the
// waiter, which holds its lease from that message, counted from when it
// asked, with no round trip of its own. A waiter whose process is gone is
// skipped at once; one that stalls holds the lock as a stalled holder
// does, up to that TTL.
//
// Waiters that have not asked yet, and waiters whose request has not been
// served within a hand-off window, hear of a release through keyspace
// notifications, which fast mode needs: [Open] turns them on where the
// server allows CONFIG ([WithKeyspaceEventsConfigured] where it does
// not). The release is sent as PING and the release script in one write,
// so that Redis writes the notification to the waiters before the
// releaser's reply: a waiter gets a head start on the releaser's next
// acquire. On servers that order writes otherwise (I/O threads, proxies)
// that falls back to a plain race, never to a correctness problem. A
// waiter that hears nothing finds the lock free at the latest when the
// holder's TTL runs out.
//
// # Fair mode
//
// [WithFair] makes the order of acquisition a property of the protocol:
// waiters from every process queue in Redis in the order their requests
// reached the server, and a release hands the lock straight to the head of
// the queue, as a fast release hands it to a request: the lock set to the
// waiter's owner token with the releaser's TTL, and the fencing token and
// the TTL sent to the waiter, which holds its lease from that message,
// counted from when it first queued. No keyspace notification and no
// particular reply order is
// relied on: fair mode works on any server with EVAL and
// PUBLISH/SUBSCRIBE (SPUBLISH/SSUBSCRIBE on a cluster), where CONFIG is
// refused, and behind proxies. [Locker.TryLock] does not jump the queue.
//
// A waiter keeps its place by renewing it every third of the queue lease
// ([WithQueueLease], 3s by default). A waiter whose process is gone is
// skipped at hand-off; one that stalls holds a lock handed to it as a
// stalled holder does, up to the releaser's TTL, and its place until its
// queue lease runs out.
//
// Every Locker of a key must use the same mode.
//
// # Fencing tokens
//
// [Lease.Token] is the lease's fencing token: strictly greater than the
// token of every earlier lease on the same key, from any client. Pass it
// to the resource the lock protects, and have that refuse writes carrying
// a token lower than one it has seen: a holder that lost its lease
// unawares (paused past its TTL, or cut off by a failover) then cannot
// overwrite a later holder's work.
//
// A token is one more than the last one handed out, and never less than
// the server's clock in microseconds since the epoch, so tokens keep
// increasing across a restart without persistence, a restart from an old
// snapshot, and a counter that expired. The counter lives the fence
// retention ([WithFenceRetention], 1h by default, or the TTL if that is
// longer) after the last acquisition.
//
// # Write-back
//
// State kept beside a lock, under a name that begins with [Locker.Key],
// can be read with the acquire and written back with the release:
// [Locker.LockAndDo] runs commands after the acquire, in the same write
// when the lock is free or handed over, and [Lease.Commit] stores a
// [Write] only if the lease still owns the lock, checked in the same
// script, which then extends the lock or, with the Write's Unlock set,
// releases it. Nothing another owner does can slip between the check and the
// write. Package manager is built on these two calls.
//
// [Locker.Inspect] reads a lock without taking it: who holds it and for
// how long, the holder's fencing token, whether it is asked to let go,
// and the fair queue, as one snapshot timed by the server's clock
// ([Info]), with the replies of any read commands given to it.
//
// # A lost lock
//
// A lock can be lost on the server while its lease is held: another
// client deletes or overwrites its key, a FLUSHDB or FLUSHALL, an
// eviction ([WithEvictionAllowed]), a restart without persistence, a
// failover to a replica that lacked it. Once a lease's Done, Context or
// Err has been asked for, the server tells this process of such a loss
// as it happens, and the lease ends within milliseconds (on loopback,
// within 5 ms p99 of the command that lost it, 1.3 ms typically, in
// tests under -race), for a cause
// that says how: [ErrRemoved], [ErrOverwritten], [ErrFlushed], each
// matching [ErrLost]. A lease whose Done nobody asked for costs nothing
// more; one that asked costs the server a read of the lock's key on the
// Subscriber's connection, then and after each change of the key, the
// lease's own extensions included (client-side caching, CLIENT TRACKING,
// Redis 6 and later; docs/PROTOCOL.md says how it works).
//
// Some losses the server cannot tell at once. A restart or a failover is
// learnt when the Subscriber has reached the server again, and read the
// lock's key there: [ErrVanished], some tens of milliseconds after the
// server is back (its redial's backoff). A SWAPDB is never told: the
// lease ends at its deadline, as without the watch. Nor is anything told
// by a server that refuses CLIENT TRACKING (before Redis 6, an ACL
// without it). On a Redis Cluster, a slot that moves away from its node
// is followed: the lease is watched on the slot's new node, and ends if
// its key did not arrive there.
//
// # Errors
//
// Errors are wrapped with the lock's key and the operation, and are tested
// with errors.Is and errors.As:
//
//   - [ErrNotAcquired]: [Locker.TryLock] found the lock held, or, under
//     [WithReplicaAck], too few replicas acknowledged an acquire, which was
//     undone.
//   - [ErrNotHeld]: the lease no longer owns the lock. The call wrote
//     nothing.
//   - [ErrStateMissing]: a [Write] with IfExists found its key missing.
//     Nothing was written.
//   - [ErrInvalid]: a bad argument or option. Nothing was sent.
//   - [ErrClosed]: the Locker is closed, or closing.
//   - [conn.UncertainError]: the outcome is unknown, and the command may
//     yet have run (the connection broke with it in flight, say). A
//     [Lease.Unlock] whose context ended first matches it too, and its
//     release completes in the background.
//
// Package manager's ErrInvalid and ErrClosed are these same two values:
// one name matches a bad argument whichever package refused it, and a
// closed Locker or a closed Manager. Their texts name no package; the
// errors that wrap them do.
//
// # Guarantees
//
//   - Mutual exclusion by lease: a lease's local deadline is never later
//     than the lock's expiry in Redis. This rests on the client's and the
//     server's clocks running at the same rate, and on the server not
//     evicting keys: [Open] refuses a maxmemory-policy that may evict
//     ([WithEvictionAllowed] to accept the risk; [New] leaves the check to
//     its caller). A restart without persistence, or a failover to a
//     replica that had not received the lock, loses every lock, and a
//     second owner can then acquire while the first lease is open:
//     fencing tokens are the defence.
//   - Leases are exact under every combination of calls: an extension to
//     a shorter TTL moves the deadline, and [Lease.Done], earlier;
//     extensions of one lease (Extend, the watchdog's, a held write-back's)
//     take turns, so that the deadline follows the one Redis ran last; one
//     whose outcome is unknown counts as run where that ends the lease
//     sooner. Every TTL sent must lie between 1ms and 100 years: outside
//     that the call fails with [ErrInvalid] and sends nothing.
//   - Every way out releases: a Lock cancelled with its acquire on its way
//     undoes it in the background, a write-back the server refused releases
//     in the same call, and [Locker.Close] waits for the releases going on
//     in the background. A service that cancels its work and then closes
//     its Locker leaves no lock held.
//   - Errors tell the truth about writes: [ErrNotHeld] means the server
//     wrote nothing, and an outcome the client cannot know is a
//     [conn.UncertainError]. The server's reply decides, not a local timer
//     that fired meanwhile.
//   - Fencing tokens strictly increase per key, from every client, as
//     long as the server's clock does not go back: a clock set back by
//     more than the time since the last acquisition, while the counter is
//     gone, can repeat tokens.
//   - Dead waiters do not stall a lock: a waiter whose process died is
//     skipped by the release itself; one that stalled holds the lock for
//     the releaser's TTL at most, as a stalled holder does.
//   - Nothing is left behind: every key has a TTL. The lock has its
//     holder's, a request its asker's, the fencing counter the fence
//     retention, and the fair queue's keys the queue lease.
//   - Calls end in bounded time: [Lease.Unlock] returns within the release
//     timeout ([WithReleaseTimeout], 5s by default) whatever its context,
//     and [Locker.Close] within about twice that, even on a server that
//     stopped answering. [Open]'s connections break after 5s without a
//     reply that is due ([WithConnOptions]), so that the next call redials.
//
// # Redis Cluster
//
// [Open] with a redis+cluster:// URL makes a Locker on a cluster. Each
// lock lives in one slot, its hash tag's, and its scripts go to the
// primary that serves that slot, following MOVED and ASK. Through a
// reshard or a failover the cluster answers that it cannot serve a
// command for now (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN, READONLY):
// a Lock waits through it for as long as its context allows, and a
// release or write-back is sent again within the release timeout, so that
// neither strands a lock for its TTL.
//
// Each primary that holds a lock someone waits for gets a subscriber of
// its own. On Redis 7 nodes, hand-offs and requests go by SPUBLISH on
// shard channels in the lock's slot, so they stay on that node. A waiter
// whose lock's slot moves listens on the new node from its next attempt,
// a second later at most.
//
// Replication to replicas is asynchronous: a failover can lose a lock,
// unless [WithReplicaAck] makes every acquire, extension, write-back and
// release wait for replicas. Fencing tokens keep increasing across a
// failover as long as the clocks of the old primary and of the promoted
// replica differ by less than the failover takes.
//
// # Redis Sentinel
//
// [Open] with a redis+sentinel:// URL makes a Locker on the primary that
// Redis Sentinel names (the URL's form, and the sentinels' credentials,
// are in package conn). Its connections, the subscriber's included, move
// to the new primary after a failover: when theirs breaks, and when the
// sentinels announce another primary (+switch-master), since a primary
// failed over alive goes on taking writes for seconds. A call made while
// the sentinels still name a primary that is gone waits for the promotion
// within its context, and a release or write-back within the release
// timeout. As on a cluster, a failover can lose a lock unless
// [WithReplicaAck] waits for every replica of the primary: the sentinels
// may promote one that had not acknowledged. Fencing tokens keep
// increasing across a promotion on the same condition as on a cluster.
//
// # Options
//
// Each option documents its default:
//
//   - [WithTTL]: how long a lock outlives a holder that neither extends nor
//     releases it (10s).
//   - [WithAutoExtend]: a watchdog per lease (off).
//   - [WithFair]: fair mode (fast mode).
//   - [WithKeyPrefix]: the prefix of every key ("baton:").
//   - [WithQueueLease]: how long a fair waiter's place lasts unrenewed (3s).
//   - [WithFenceRetention]: how long the fencing counter outlives the last
//     acquisition (1h, or the TTL if longer).
//   - [WithReleaseTimeout]: the bound on a release's own work and on each
//     phase of Close (5s).
//   - [WithReplicaAck]: wait for replicas (off).
//   - [WithConnOptions]: options for the connections [Open] makes (a read
//     timeout of 5s).
//   - [WithKeyspaceEventsConfigured]: the operator has turned keyspace
//     events on (Open reads the setting and turns them on).
//   - [WithEvictionAllowed]: accept a server that may evict keys (Open
//     refuses one).
//   - [WithObserver]: tell an observer what the Locker does (none).
//   - [WithLogger]: log what happens where no caller sees an error (no
//     log).
//
// # Observing
//
// [WithObserver] has a Locker report each Lock and TryLock call (its
// steps: asking, being handed the lock, confirming), each lease (how it
// was obtained, how long it was held, why it ended: a lease still held
// at its deadline ran out there, held until then, even where nothing
// noticed before an Unlock or Close, see observe.Reason), outcomes left
// unknown, and what happens in the background: a watchdog's failed
// extension, a release that failed with no caller to tell, a subscribe
// connection lost and reconnected. Package observe names the events and
// says how they are delivered: in order, from a goroutine of the
// Locker's, so that a slow or panicking observer delays no hand-off. The
// module github.com/batonlock/baton/otel turns them into OpenTelemetry
// metrics and spans, and [WithLogger] into log records. A Locker with no
// observer does no work for one.
//
// # Concurrency
//
// A [Locker] and its [Lease] values are safe for concurrent use. Callers
// of Lock wait in their own goroutine. The Locker owns its background
// goroutines, and [Locker.Close] stops them and waits for them: releases
// that outlive a caller who stopped waiting, a watchdog per lease with
// [WithAutoExtend], the timer that ends a lease at its deadline once Done
// was called, the listener behind Wanted, and the one that delivers
// events to observers ([WithObserver]).
package lock
