package lock

import (
	"context"
	"time"

	"github.com/batonlock/baton/cluster"
	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/lockconf"
	"github.com/batonlock/baton/internal/lockstate"
	"github.com/batonlock/baton/subscriber"
)

// The scripts' sources, for the benchmark baseline that runs them on a bare
// connection.
var (
	AcquireScriptSource = acquireScript.src
	ReleaseScriptSource = releaseScript.src
)

// QueuedAfter is, for a fair lease that waited in the queue, the last
// fencing token handed out when it queued, and whether it queued at all.
func QueuedAfter(ls *Lease) (uint64, bool) { return ls.queuedAfter, ls.queuedAfter != 0 }

// WithReleaseStyle picks the release style, for the tests that compare
// them.
func WithReleaseStyle(s lockconf.ReleaseStyle) Option { return Option(lockconf.WithReleaseStyle(s)) }

// AskAs makes one attempt for key in fast mode as a waiting Lock would,
// with the owner token given, asking the holder to let go; waiterID and
// channel say where a hand-off reaches it. Tests play a waiter with it
// whose moves they time themselves.
func AskAs(ctx context.Context, l *Locker, key, owner string, waiterID uint64, channel string) (*Lease, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, err
	}
	defer l.exit()
	c := l.newClaim(key)
	c.owner = owner
	c.asker = formatAsker(waiterID, channel)
	ls, _, _, err := c.tryFast(ctx, true, nil)
	if ls == nil && err == nil {
		return nil, ErrNotAcquired
	}
	return ls, err
}

// Deadline is when the lease ends by this process's clock unless extended.
func Deadline(ls *Lease) time.Time {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.deadline
}

// The settings users have no business with, for the tests.
func WithQueueLease(d time.Duration) Option     { return Option(lockconf.WithQueueLease(d)) }
func WithReleaseTimeout(d time.Duration) Option { return Option(lockconf.WithReleaseTimeout(d)) }
func WithFenceRetention(d time.Duration) Option { return Option(lockconf.WithFenceRetention(d)) }

// WithClusterOptions passes options to a cluster Locker's client.
func WithClusterOptions(opts ...cluster.Option) Option {
	return Option(lockconf.WithClusterOptions(opts...))
}

// WithKeyspaceEventsConfigured tells Open's subscribers that the events
// are on, as lock.New's caller can.
func WithKeyspaceEventsConfigured() Option {
	return Option(lockconf.WithSubscriberOptions(subscriber.WithKeyspaceEventsConfigured()))
}

// ErrReplicaAck is in the error of a call too few replicas acknowledged.
var ErrReplicaAck = errReplicaAck

// WithEvictionAllowed lets Open proceed on an evicting server.
func WithEvictionAllowed() Option { return Option(lockconf.WithEvictionAllowed()) }

// WithPlainChannels makes a cluster Locker use PUBLISH, as on nodes
// without SPUBLISH.
func WithPlainChannels() Option { return Option(lockconf.WithPlainChannels()) }

// Write, Commit and Node are what package manager reaches through
// lockstate.
type Write = lockstate.Write

func Commit(ctx context.Context, ls *Lease, w Write, keep bool) (bool, error) {
	return ls.commit(ctx, w, keep)
}

// Node is the client of the server that holds key's lock.
func Node(ctx context.Context, l *Locker, key string) (*conn.Client, error) {
	return l.nodes.node(ctx, key)
}
