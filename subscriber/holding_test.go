package subscriber_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/subscriber"
)

// hold watches key, set to value, and returns the channel its loss comes
// on. It waits until the Subscriber has read the key, so that what the
// test does next is a change the server reports.
func hold(t *testing.T, s *subscriber.Subscriber, srv *redistest.Server, key, value string) <-chan subscriber.Loss {
	t.Helper()
	lost := make(chan subscriber.Loss, 1)
	h, err := s.Hold(key, value, lossesOnly(lost))
	require.NoError(t, err)
	t.Cleanup(h.Close)
	redistest.Eventually(t, func() bool { return tracked(t, srv) }, 2*time.Second, time.Millisecond, "never tracked")
	return lost
}

// lossesOnly sends the losses a Holding reports on lost, and drops the
// connection's breaks (Unheard), which come before a loss found on a new
// connection.
func lossesOnly(lost chan<- subscriber.Loss) func(subscriber.Loss) {
	return func(l subscriber.Loss) {
		if l != subscriber.Unheard {
			lost <- l
		}
	}
}

// tracked says whether the server's tracking table holds a key: the
// tests' servers have no other tracking client.
func tracked(t *testing.T, srv *redistest.Server) bool {
	return !strings.Contains(srv.Do(t, "INFO", "stats").Str, "tracking_total_keys:0\r\n")
}

func requireLoss(t *testing.T, lost <-chan subscriber.Loss, want subscriber.Loss) {
	t.Helper()
	select {
	case got := <-lost:
		require.Equal(t, want, got)
	case <-time.After(2 * time.Second):
		t.Fatalf("no loss reported; want %v", want)
	}
}

func requireNoLoss(t *testing.T, lost <-chan subscriber.Loss, within time.Duration) {
	t.Helper()
	select {
	case got := <-lost:
		t.Fatalf("loss %v reported for a key that kept its value", got)
	case <-time.After(within):
	}
}

func TestAHeldKeyLostOnTheServerIsReported(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("maxmemory-policy allkeys-lru"))
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	for _, tt := range []struct {
		name string
		lose []string
		want subscriber.Loss
	}{
		{"DEL", []string{"DEL", "k"}, subscriber.Removed},
		{"UNLINK", []string{"UNLINK", "k"}, subscriber.Removed},
		{"SET", []string{"SET", "k", "other"}, subscriber.Overwritten},
		{"RENAME", []string{"RENAME", "k", "elsewhere"}, subscriber.Removed},
		{"PEXPIRE", []string{"PEXPIRE", "k", "-1"}, subscriber.Removed},
		{"FLUSHDB", []string{"FLUSHDB"}, subscriber.Flushed},
		{"FLUSHALL", []string{"FLUSHALL", "ASYNC"}, subscriber.Flushed},
		{"LPUSH", []string{"EVAL", "redis.call('DEL', KEYS[1]); return redis.call('LPUSH', KEYS[1], 'x')", "1", "k"}, subscriber.Overwritten},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv.Do(t, "SET", "k", "mine", "PX", "60000")
			lost := hold(t, s, srv, "k", "mine")
			srv.Do(t, tt.lose...)
			requireLoss(t, lost, tt.want)
			srv.Do(t, "DEL", "k", "elsewhere")
		})
	}
}

func TestAKeyThatKeepsItsValueIsNotReported(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	srv.Do(t, "SET", "k", "mine", "PX", "60000")
	lost := hold(t, s, srv, "k", "mine")
	for range 20 {
		srv.Do(t, "PEXPIRE", "k", "60000")
		srv.Do(t, "SET", "k", "mine", "XX", "PX", "60000")
	}
	other, err := conn.Dial(context.Background(), srv.Addr, conn.WithDB(1))
	require.NoError(t, err)
	defer other.Close()
	_, err = other.Do(context.Background(), "FLUSHDB") // another database's flush invalidates every key
	require.NoError(t, err)
	requireNoLoss(t, lost, 100*time.Millisecond)
	srv.Do(t, "DEL", "k")
	requireLoss(t, lost, subscriber.Removed) // and it still listens
}

func TestAKeyLostBeforeHoldIsReported(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	lost := make(chan subscriber.Loss, 1)
	h, err := s.Hold("k", "mine", lossesOnly(lost))
	require.NoError(t, err)
	defer h.Close()
	requireLoss(t, lost, subscriber.Removed)
}

func TestAKeyGoneAfterARestartIsReported(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	srv.Do(t, "SET", "k", "mine", "PX", "60000")
	lost := hold(t, s, srv, "k", "mine")
	srv.Restart(t)
	requireLoss(t, lost, subscriber.Vanished)
}

func TestAClosedHoldingIsNotReported(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	srv.Do(t, "SET", "k", "mine", "PX", "60000")
	lost := make(chan subscriber.Loss, 1)
	h, err := s.Hold("k", "mine", lossesOnly(lost))
	require.NoError(t, err)
	redistest.Eventually(t, func() bool { return tracked(t, srv) }, 2*time.Second, time.Millisecond, "never tracked")
	h.Close()
	srv.Do(t, "DEL", "k")
	requireNoLoss(t, lost, 100*time.Millisecond)
}

// A broken connection is told to each holding as Unheard, which ends
// none: the new connection reads the key again, tracks it, and reports
// a later loss.
func TestABrokenConnectionIsToldAndTheHoldingGoesOn(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	srv.Do(t, "SET", "k", "mine", "PX", "60000")
	told := make(chan subscriber.Loss, 4)
	h, err := s.Hold("k", "mine", func(l subscriber.Loss) { told <- l })
	require.NoError(t, err)
	defer h.Close()
	redistest.Eventually(t, func() bool { return tracked(t, srv) }, 2*time.Second, time.Millisecond, "never tracked")
	srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	requireLoss(t, told, subscriber.Unheard)
	// The new connection turns tracking on and reads the key in one
	// write, which the server runs whole: once it shows the flag, the
	// key is read.
	redistest.Eventually(t, func() bool {
		return strings.Contains(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub").Str, "flags=Pt ")
	}, 5*time.Second, time.Millisecond, "never tracked again")
	requireNoLoss(t, told, 50*time.Millisecond)
	srv.Do(t, "DEL", "k")
	requireLoss(t, told, subscriber.Removed)
}

// A server that refuses client-side caching for now (a script past its
// time limit answers BUSY) is asked again, paced, and the holding is
// watched once it answers.
func TestAServerBusyAtTheFirstReadIsAskedAgain(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do(t, "CONFIG", "SET", "busy-reply-threshold", "50")
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	srv.Do(t, "SET", "k", "mine")
	busy, err := conn.Dial(context.Background(), srv.Addr)
	require.NoError(t, err)
	defer busy.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = busy.Do(context.Background(), "EVAL", "local s = redis.call('TIME')[1] while tonumber(redis.call('TIME')[1]) < s + 2 do end return 1", "0")
	}()
	time.Sleep(200 * time.Millisecond) // past the threshold: BUSY for the others
	lost := make(chan subscriber.Loss, 4)
	h, err := s.Hold("k", "mine", lossesOnly(lost))
	require.NoError(t, err)
	defer h.Close()
	<-done
	redistest.Eventually(t, func() bool {
		return strings.Contains(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub").Str, "flags=Pt ")
	}, 2*time.Second, time.Millisecond, "tracking never turned on")
	srv.Do(t, "DEL", "k")
	requireLoss(t, lost, subscriber.Removed)
}

// A read the server refuses for good (an ACL without GET) is not asked
// again: the key goes unwatched, and the connection is not flooded.
func TestAReadRefusedForGoodIsNotAskedAgain(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do(t, "ACL", "SETUSER", "sub", "on", ">pw", "~*", "&*", "+@all", "-get")
	s := newSubscriberAt(t, "redis://sub:pw@"+srv.Addr, subscriber.WithoutKeyspaceEvents())
	srv.Do(t, "SET", "k", "mine")
	h, err := s.Hold("k", "mine", func(subscriber.Loss) {})
	require.NoError(t, err)
	defer h.Close()
	time.Sleep(50 * time.Millisecond)
	before := srv.Do(t, "INFO", "commandstats").Str
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, getRejections(before), getRejections(srv.Do(t, "INFO", "commandstats").Str), "the refused GET was sent again")
}

// getRejections is the count of GETs the server refused, from INFO
// commandstats.
func getRejections(stats string) string {
	_, after, _ := strings.Cut(stats, "cmdstat_get:")
	line, _, _ := strings.Cut(after, "\r\n")
	_, n, _ := strings.Cut(line, "rejected_calls=")
	n, _, _ = strings.Cut(n, ",")
	return n
}
