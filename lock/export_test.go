package lock

import (
	"context"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/subscriber"
)

// ReleaseScriptSource is the fast release script's source, whose digest
// tells a release on the wire.
var ReleaseScriptSource = fastReleaseScript.src

// RawAcquire and RawRelease are the EVAL commands of the fast acquire
// (a first attempt, which does not ask) and release on the lock named
// lockName for owner, with the arguments a Locker of the default options
// sends: the benchmark baseline runs them on a bare connection.
func RawAcquire(lockName, owner string) []string {
	args := fastAcquireArgs{owner: owner, ttl: millis(defaultSettings().TTL), ask: askNot, retention: millis(defaultSettings().FenceRetention), publish: "PUBLISH"}
	return fastAcquireScript.command(byText, rawKeys(lockName).fastKeys(), args.argv())
}

func RawRelease(lockName, owner string) []string {
	args := fastReleaseArgs{owner: owner, ttl: millis(defaultSettings().TTL), retention: millis(defaultSettings().FenceRetention), publish: "PUBLISH"}
	return fastReleaseScript.command(byText, rawKeys(lockName).fastKeys(), args.argv())
}

func rawKeys(lockName string) keyNames {
	return keyNames{lock: lockName, fence: lockName + ":fence", wanted: lockName + ":wanted"}
}

// QueuedAfter is, for a fair lease that waited in the queue, the last
// fencing token handed out when it queued, and whether it queued at all.
func QueuedAfter(ls *Lease) (uint64, bool) { return ls.queuedAfter, ls.queuedAfter != 0 }

// The release styles, and the option that picks one, for the tests that
// compare them.
const (
	ReleasePingEval = releasePingEval
	ReleaseEval     = releaseEval
	ReleaseGetDel   = releaseGetDel
)

func WithReleaseStyle(s releaseStyle) Option { return option(func(o *settings) { o.ReleaseStyle = s }) }

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
	c.asker = formatAsker(channel, waiterID)
	a, err := c.tryFast(ctx, c.ask(), nil)
	if a.lease == nil && err == nil {
		return nil, ErrNotAcquired
	}
	return a.lease, err
}

// Deadline is when the lease ends by this process's clock unless extended.
func Deadline(ls *Lease) time.Time {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.deadline
}

// WithClusterOptions passes options to a cluster Locker's client.
func WithClusterOptions(opts ...cluster.Option) Option {
	return option(func(o *settings) { o.ClusterOptions = append(o.ClusterOptions, opts...) })
}

// WithSubscriberOptions passes options to the subscribers Open makes.
func WithSubscriberOptions(opts ...subscriber.Option) Option {
	return option(func(o *settings) { o.SubscriberOptions = append(o.SubscriberOptions, opts...) })
}

// ErrReplicaAck is in the error of a call too few replicas acknowledged.
var ErrReplicaAck = errReplicaAck

// WithPlainChannels makes a cluster Locker use PUBLISH, as on nodes
// without SPUBLISH.
func WithPlainChannels() Option { return option(func(o *settings) { o.PlainChannels = true }) }

// Node is the client of the server that holds key's lock.
func Node(ctx context.Context, l *Locker, key string) (*conn.Client, error) {
	return l.nodes.node(ctx, key)
}
