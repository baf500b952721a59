package subscriber_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/subscriber"
)

func TestALingeringSubscriptionServesTheNextWaiterWithoutACommand(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithLinger(time.Hour))
	require.False(t, s.Hears("k"))
	w := watch(t, s, "k")
	require.True(t, s.Hears("k"))
	w.Close()
	require.True(t, s.Hears("k"), "the subscription lingers")
	require.Equal(t, int64(1), numsub(t, srv, "__keyspace@0__:k"))

	// A release that reaches no waiter is dropped, not kept for the next.
	release(t, srv, "k")
	barrier(t, s, srv)
	subscribes := subscribeCalls(t, srv)
	next := watch(t, s, "k")
	require.Equal(t, subscribes, subscribeCalls(t, srv), "a lingering key's waiter needs no SUBSCRIBE")
	require.False(t, woken(next))
	release(t, srv, "k")
	requireWoken(t, next)
}

func TestALingerRunsOutAndTheSubscriptionGoes(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithLinger(50*time.Millisecond))
	w := watch(t, s, "k")
	w.Close()
	requireNumsub(t, srv, "__keyspace@0__:k", 0)
	require.False(t, s.Hears("k"))

	// A waiter that comes back within the linger keeps the subscription
	// past it, and its leaving starts a linger of its own.
	a := watch(t, s, "k")
	a.Close()
	b := watch(t, s, "k")
	time.Sleep(150 * time.Millisecond)
	require.Equal(t, int64(1), numsub(t, srv, "__keyspace@0__:k"))
	release(t, srv, "k")
	requireWoken(t, b)
	b.Close()
	requireNumsub(t, srv, "__keyspace@0__:k", 0)
}

func TestWithoutLingerTheLastWaiterLeavingUnsubscribesAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithLinger(0))
	w := watch(t, s, "k")
	w.Close()
	requireNumsub(t, srv, "__keyspace@0__:k", 0)
	require.False(t, s.Hears("k"))
}

func TestAReconnectEndsEveryLinger(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithLinger(time.Hour))
	w := watch(t, s, "k")
	w.Close()
	other := watch(t, s, "other") // a waiter to tell when the reconnect is done
	srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	requireWoken(t, other)
	requireNumsub(t, srv, "__keyspace@0__:other", 1)
	require.Equal(t, int64(0), numsub(t, srv, "__keyspace@0__:k"))
	require.False(t, s.Hears("k"))
}

var subscribeStat = regexp.MustCompile(`cmdstat_subscribe:calls=(\d+)`)

// subscribeCalls is how many SUBSCRIBE commands srv has run.
func subscribeCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	m := subscribeStat.FindStringSubmatch(srv.Do(t, "INFO", "commandstats").Str)
	require.NotNil(t, m)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}
