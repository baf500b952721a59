// Package subscriber keeps one connection per process in subscribe mode and
// turns what it hears into wake-ups for the goroutines waiting on locks.
//
// A waiter registers for a lock key with [Subscriber.Watch], which returns
// only once the server has confirmed the subscription to the key's keyspace
// channel (__keyspace@<db>__:<key>): a caller can register, retry its
// acquire, and then wait, and never miss a release that falls in between.
// The key's del, expired and evicted events wake that key's local waiters
// one at a time, in arrival order. The subscription is dropped a linger
// ([WithLinger], 1s by default) after the last local waiter of the key
// leaves. Besides, the Subscriber holds one channel per process for
// directed wake-ups ([Subscriber.Directed]): a message on it names one
// waiter, and wakes only that one. At start it makes sure that the server
// publishes the keyspace events it needs (notify-keyspace-events
// K, g, x and e), keeping every flag already set. After the connection
// breaks it redials with backoff, subscribes again, and wakes every waiter so
// that each re-checks its lock.
//
// Shard channels (Redis 7 and later; [Subscriber.WatchShardChannel],
// [Subscriber.DirectedOn]) are subscribed with SSUBSCRIBE, which on a
// Redis Cluster goes to the node that serves the channel's slot, and hear
// SPUBLISH: a Subscriber connected to that node serves the locks of its
// slots without any message crossing the cluster. When a slot leaves the
// node, the server ends its shard channels' subscriptions, and their
// waiters are woken to look for the new node.
//
// A connection can also die silently: when the server's host vanishes, or a
// middlebox forgets the connection, no bytes arrive and no reset either.
// Against that, every command the Subscriber sends must be answered within
// the health-check interval d ([WithHealthCheck], 5s by default), or the
// connection is closed and handled as a broken one, and a connection that
// has given no reply for d is sent a PING. A half-open connection thus costs
// at most about 2d of unheard notifications, plus the redial; then every
// waiter is woken and re-checks its lock.
//
// Concurrency: a Subscriber and its Waiters are safe for concurrent use. One
// supervisor goroutine owns the subscriptions and the connection: it sends
// every SUBSCRIBE and UNSUBSCRIBE, in order, and every PING, all on the
// subscribe connection, waits for one reply at a time and for at most d,
// closes the connection when a reply is late, and reconnects. It starts no
// other goroutine. Messages arrive on the connection's reader goroutine,
// which only signals waiters and runs their OnRelease hooks, which must not
// block either, so that it never blocks (a hook that did would also delay
// the replies, and cost a reconnect once it held one up for d). Close stops
// the supervisor and the connection and waits for both.
package subscriber
