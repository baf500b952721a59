package subscriber_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/subscriber"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(m))
}

func newSubscriber(t *testing.T, srv *redistest.Server, opts ...subscriber.Option) *subscriber.Subscriber {
	t.Helper()
	s, err := subscriber.New(context.Background(), srv.Addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func watch(t *testing.T, s *subscriber.Subscriber, key string) *subscriber.Waiter {
	t.Helper()
	w, err := s.Watch(context.Background(), subscriber.Topic{Key: key})
	require.NoError(t, err)
	t.Cleanup(w.Close)
	return w
}

// directed registers a directed waiter: on the process's channel when
// shardPrefix is "", else on that shard channel prefix.
func directed(t *testing.T, s *subscriber.Subscriber, shardPrefix string) *subscriber.Waiter {
	t.Helper()
	topic := subscriber.Topic{Directed: true}
	if shardPrefix != "" {
		topic.Channel, topic.Shard = shardPrefix, true
	}
	w, err := s.Watch(context.Background(), topic)
	require.NoError(t, err)
	t.Cleanup(w.Close)
	return w
}

// channelOf is the channel a directed waiter hears.
func channelOf(w *subscriber.Waiter) string {
	channel, _ := w.Address()
	return channel
}

// idOf is a directed waiter's ID as a message names it.
func idOf(w *subscriber.Waiter) string {
	_, id := w.Address()
	return strconv.FormatUint(id, 10)
}

// woken reports whether w has a wake-up pending, taking it.
func woken(w *subscriber.Waiter) bool {
	select {
	case <-w.Wake():
		return true
	default:
		return false
	}
}

func requireWoken(t *testing.T, w *subscriber.Waiter) {
	t.Helper()
	select {
	case <-w.Wake():
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken")
	}
}

// release makes key's lock go away with a del event.
func release(t *testing.T, srv *redistest.Server, key string) {
	t.Helper()
	srv.Do(t, "SET", key, "x")
	srv.Do(t, "DEL", key)
}

// barrier waits until every keyspace event published before it has been
// handled: events reach the subscriber in order, so once a sentinel key's
// waiter is woken, all earlier events have been dealt with.
func barrier(t *testing.T, s *subscriber.Subscriber, srv *redistest.Server) {
	t.Helper()
	sentinel := watch(t, s, "sentinel")
	release(t, srv, "sentinel")
	requireWoken(t, sentinel)
	sentinel.Close()
}

func numsub(t *testing.T, srv *redistest.Server, channel string) int64 {
	t.Helper()
	v := srv.Do(t, "PUBSUB", "NUMSUB", channel)
	return v.Elems[1].Int
}

// requireNumsub waits until channel has want subscribers on srv. It polls
// on the test's goroutine rather than in require.Eventually, whose
// condition runs on a goroutine of its own, where numsub's t.Fatal must not
// be called.
func requireNumsub(t *testing.T, srv *redistest.Server, channel string, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a loaded CI machine
	for {
		got := numsub(t, srv, channel)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d subscribers, want %d", channel, got, want)
		}
		time.Sleep(time.Millisecond)
	}
}
