// Package subscriber keeps one connection per process in subscribe mode and
// turns what it hears into wake-ups for the goroutines waiting on locks.
//
// A waiter registers for a lock key with [Subscriber.Watch], which returns
// only once the server has confirmed the subscription to the key's keyspace
// channel (__keyspace@<db>__:<key>): a caller can register, retry its
// acquire, and then wait, and never miss a release that falls in between.
// The key's del, expired and evicted events wake that key's local waiters
// one at a time, in arrival order. The subscription is dropped when the last
// local waiter of the key leaves. Besides, the Subscriber holds one channel
// per process for directed wake-ups ([Subscriber.Directed]): a message on
// it names one waiter, and wakes only that one. At start it makes sure that
// the server publishes the keyspace events it needs (notify-keyspace-events
// K, g, x and e), keeping every flag already set. After the connection
// breaks it redials with backoff, subscribes again, and wakes every waiter so
// that each re-checks its lock.
//
// Concurrency: a Subscriber and its Waiters are safe for concurrent use. One
// supervisor goroutine owns the subscriptions: it sends every SUBSCRIBE and
// UNSUBSCRIBE, in order, and reconnects. Messages arrive on the
// connection's reader goroutine, which only signals waiters and runs their
// OnRelease hooks, which must not block either, so that it never blocks. Close stops the supervisor and the connection and waits for both.
package subscriber
