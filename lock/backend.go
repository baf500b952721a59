package lock

import (
	"context"
	"errors"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// commander runs commands on the server that holds one lock's keys: a
// *conn.Client on a single server, a cluster client bound to the lock's
// slot on a Redis Cluster. A batch given to DoMulti leaves in one write,
// on either.
type commander interface {
	Do(ctx context.Context, args ...string) (resp.Value, error)
	DoMulti(ctx context.Context, cmds ...[]string) ([]resp.Value, error)
}

// backend is what a Locker runs on: one server (single), or a Redis
// Cluster (clustered), where each lock's commands go to the primary of its
// slot and its waiters listen there. Each method takes a key of the lock
// (its name in Redis, <prefix>{key}, or another with the same hash tag),
// which decides the slot: never the key the caller named, whose own braces
// may hash elsewhere.
type backend interface {
	// commander is where the commands on the lock of key go.
	commander(key string) commander
	// node is the client of the server that holds key, for the early
	// attempts that the subscriber's reader sends on its current
	// connection. ctx bounds a topology refresh, on a cluster.
	node(ctx context.Context, key string) (*conn.Client, error)
	// contended reports whether this process has a waiter on key's lock
	// (a name from keyNames), or still hears its releases after a recent
	// wait (the Subscriber's linger). It never dials.
	contended(lockName string) bool
	// subscriber is the Subscriber that hears key's releases, hand-offs
	// and requests.
	subscriber(ctx context.Context, key string) (*subscriber.Subscriber, error)
	// subscriberMade is the Subscriber that hears key's releases, if it
	// is made already. It never dials.
	subscriberMade(key string) (*subscriber.Subscriber, bool)
	// stale reports whether s no longer hears key's releases: key's slot
	// has moved to another node since s was given out for it, as far as
	// this process has learnt. It never dials.
	stale(s *subscriber.Subscriber, key string) bool
	// recheck is the longest a fast waiter sleeps before it tries again
	// with no wake-up, or 0 for no bound but the holder's TTL.
	recheck() time.Duration
	// interrupt fails the calls in flight, for a Close that a stuck call
	// holds up.
	interrupt()
	// close closes the connections, for a Locker that made them.
	close() error
}

// single is the backend of one server: one command client and one
// Subscriber for every lock.
type single struct {
	client *conn.Client
	sub    *subscriber.Subscriber
}

func (s single) commander(string) commander { return s.client }

func (s single) node(context.Context, string) (*conn.Client, error) { return s.client, nil }

func (s single) contended(lockName string) bool {
	return s.sub.Hears(lockName)
}

func (s single) subscriber(context.Context, string) (*subscriber.Subscriber, error) {
	return s.sub, nil
}

func (s single) subscriberMade(string) (*subscriber.Subscriber, bool) { return s.sub, true }

func (single) stale(*subscriber.Subscriber, string) bool { return false }

func (single) recheck() time.Duration { return 0 }

func (s single) interrupt() { s.client.Interrupt() }

func (s single) close() error {
	return errors.Join(s.sub.Close(), s.client.Close())
}
