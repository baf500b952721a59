// Package subscriber keeps one connection per process in subscribe mode and
// turns what it hears into wake-ups for the goroutines waiting on locks.
// Package lock makes its own; make one to build a Locker with lock.New:
//
//	sub, err := subscriber.New(ctx, "redis://localhost:6379")
//	if err != nil {
//		return err
//	}
//	defer sub.Close()
//	w, err := sub.Watch(ctx, subscriber.Topic{Key: "baton:{job}"})
//	if err != nil {
//		return err
//	}
//	defer w.Close()
//	// ... try to take the lock; if it is held:
//	<-w.Wake() // its holder released it, or the connection was replaced
//
// # Topics
//
// A [Waiter] waits for one [Topic]:
//
//   - Topic{Key: k}: the key's releases, its del, expired and evicted
//     keyspace events (__keyspace@<db>__:k). The waiters of one key are
//     woken one at a time, in arrival order.
//   - Topic{Channel: c}: each message on a channel, one waiter per message,
//     in arrival order; with Shard, a shard channel (SSUBSCRIBE, Redis 7 and
//     later).
//   - Topic{Directed: true}: the messages that name this waiter's ID on the
//     process's own channel, or, with Shard and a Channel, on a shard
//     channel of this process; [Waiter.Address] says where to publish.
//
// [Subscriber.Watch] returns only once the server has confirmed the
// subscription: a caller can register, retry its acquire, and then wait,
// and never miss a release that falls in between. A key's subscription is
// dropped a second after its last local waiter leaves, so that steady
// contention costs no SUBSCRIBE per wait ([Subscriber.Hears]).
//
// # Keyspace events
//
// [New] makes sure that the server publishes the keyspace events the lock
// needs (notify-keyspace-events K, g, x and e), keeping every flag already
// set; it fails with an error matching [ErrKeyspaceEvents] where CONFIG is
// refused. [WithKeyspaceEventsConfigured] says the operator has set them;
// [WithoutKeyspaceEvents] is for directed wake-ups alone (the fair lock).
//
// # Held keys
//
// [Subscriber.Hold] watches a key whose value this process set (a lock's
// owner token), and reports, once, when the server shows it gone or
// holding another value ([Loss]): the Subscriber turns client-side
// caching on for its connection (CLIENT TRACKING, Redis 6 and later, no
// CONFIG), reads the key, and reads it again at each invalidation the
// server sends; after a flush it reads every held key, and on a new
// connection too, since changes went unheard. Package lock holds the key
// of each lease whose Done was asked for.
//
// # Redis Cluster
//
// Shard channels are subscribed on the node that serves their slot, and
// hear SPUBLISH: a Subscriber connected to that node serves the locks of
// its slots without any message crossing the cluster. When a slot leaves
// the node, the server ends its shard channels' subscriptions, and their
// waiters are woken to look for the new node.
//
// # Failures
//
// After the connection breaks the Subscriber redials with backoff,
// subscribes again, and wakes every waiter so that each re-checks its
// lock. A connection can also die silently, when the server's host
// vanishes or a middlebox forgets it: every command the Subscriber sends
// must be answered within the health-check interval d ([WithHealthCheck],
// 5s by default), and a connection silent for d is sent a PING; a late
// reply closes it. A half-open connection thus costs at most about 2d of
// unheard notifications, plus the redial.
//
// # Concurrency
//
// A Subscriber and its Waiters are safe for concurrent use. One supervisor
// goroutine owns the subscriptions: it sends every SUBSCRIBE, UNSUBSCRIBE
// and PING, in order, waits for one reply at a time, and reconnects.
// Messages arrive on the connection's reader goroutine, which only signals
// waiters and runs their OnRelease hooks, so it never blocks (see
// Topic.OnRelease). [Subscriber.Close] stops both and waits for them.
package subscriber
