package subscriber_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/subscriber"
)

// healthCheck is short, so that a half-open connection is found quickly,
// and still far longer than a loopback round trip, even under -race on a
// loaded machine.
const healthCheck = 200 * time.Millisecond

// found bounds how long a half-open connection may take to be found and
// replaced: two health checks, plus a redial and a resubscribe, with room
// to spare.
const found = 2 * time.Second

// healthOptions are the options of a Subscriber that must find a half-open
// connection quickly and redial at once.
func healthOptions(extra ...subscriber.Option) []subscriber.Option {
	return append([]subscriber.Option{
		subscriber.WithHealthCheck(healthCheck),
		subscriber.WithConnOptions(conn.WithRedialBackoff(time.Millisecond, 10*time.Millisecond)),
	}, extra...)
}

func newSubscriberAt(t *testing.T, addr string, opts ...subscriber.Option) *subscriber.Subscriber {
	t.Helper()
	s, err := subscriber.New(context.Background(), addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// startProxy puts a fault proxy in front of srv. It is closed at cleanup,
// before srv is stopped and after any Subscriber made later is closed.
func startProxy(t *testing.T, srv *redistest.Server) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

func requireWokenWithin(t *testing.T, w *subscriber.Waiter, d time.Duration, msg string) {
	t.Helper()
	select {
	case <-w.Wake():
	case <-time.After(d):
		t.Fatalf("waiter not woken within %v: %s", d, msg)
	}
}

// A connection that goes half-open (no bytes, no FIN, no RST) is found by
// the health check and replaced; the waiter, whose notification was lost
// with it, is woken to re-check, and the next notification is heard on the
// new connection.
func TestASeveredConnectionIsFoundAndReplaced(t *testing.T) {
	for _, tt := range []struct {
		name   string
		waiter func(*testing.T, *subscriber.Subscriber) *subscriber.Waiter
		notify func(*testing.T, *redistest.Server, *subscriber.Subscriber, *subscriber.Waiter)
	}{
		{
			name:   "keyspace event",
			waiter: func(t *testing.T, s *subscriber.Subscriber) *subscriber.Waiter { return watch(t, s, "k") },
			notify: func(t *testing.T, srv *redistest.Server, _ *subscriber.Subscriber, _ *subscriber.Waiter) {
				release(t, srv, "k")
			},
		},
		{
			name: "directed message",
			waiter: func(t *testing.T, s *subscriber.Subscriber) *subscriber.Waiter {
				w, err := s.Watch(context.Background(), subscriber.Topic{Directed: true})
				require.NoError(t, err)
				t.Cleanup(w.Close)
				return w
			},
			notify: func(t *testing.T, srv *redistest.Server, s *subscriber.Subscriber, w *subscriber.Waiter) {
				srv.Do(t, "PUBLISH", channelOf(w), idOf(w))
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			proxy := startProxy(t, srv)
			s := newSubscriberAt(t, proxy.Addr(), healthOptions()...)
			w := tt.waiter(t, s)

			require.Equal(t, 1, proxy.Sever())
			tt.notify(t, srv, s, w) // lost with the severed connection
			requireWokenWithin(t, w, found, "the half-open connection was not replaced")

			tt.notify(t, srv, s, w)
			requireWokenWithin(t, w, found, "the notification after the redial was not heard")
		})
	}
}

// A waiter that registers while the connection is half-open gets its
// subscription confirmed on the new connection instead of waiting forever
// for a confirmation that cannot come.
func TestAWatchOnASeveredConnectionIsConfirmedAfterTheRedial(t *testing.T) {
	srv := redistest.Start(t)
	proxy := startProxy(t, srv)
	s := newSubscriberAt(t, proxy.Addr(), healthOptions()...)
	require.Equal(t, 1, proxy.Sever())

	ctx, cancel := context.WithTimeout(context.Background(), found)
	defer cancel()
	w, err := s.Watch(ctx, subscriber.Topic{Key: "k"})
	require.NoError(t, err, "the SUBSCRIBE was never confirmed")
	defer w.Close()

	// The redial woke every waiter; once a later event has been handled,
	// that wake-up is pending for sure, and is taken here so that only the
	// release below can wake the waiter again.
	barrier(t, s, srv)
	woken(w)
	release(t, srv, "k")
	requireWoken(t, w)
}

// serveSubscribe plays Redis for a Subscriber on a fake's session: it
// answers HELLO 3, PING, SUBSCRIBE and UNSUBSCRIBE as a RESP3 server does,
// the first answer commands it reads (all of them if answer < 0), and then
// answers nothing more, as over a connection gone half-open. pings, if not
// nil, counts the PINGs it answers.
func serveSubscribe(s *redistest.Session, answer int, pings *atomic.Int64) {
	for n := 0; answer < 0 || n < answer; n++ {
		args, err := s.ReadCommand()
		if err != nil {
			return
		}
		var reply string
		switch verb := strings.ToLower(args[0]); verb {
		case "hello":
			reply = "%1\r\n" + bulk("proto") + ":3\r\n"
		case "ping":
			if pings != nil {
				pings.Add(1)
			}
			reply = "+PONG\r\n"
		case "subscribe", "unsubscribe":
			for i, channel := range args[1:] {
				reply += ">3\r\n" + bulk(verb) + bulk(channel) + ":" + strconv.Itoa(i+1) + "\r\n"
			}
		default:
			reply = "-ERR unknown command '" + args[0] + "'\r\n"
		}
		if s.Send(reply) != nil {
			return
		}
	}
	s.Stall()
}

// A server that completes the handshake and then never answers holds New
// up no longer than the caller's ctx, nor than the health check's bound on
// every reply.
func TestNewIsBoundedWhenTheServerStopsAnswering(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout time.Duration // the caller's; 0 for none
		opts    []subscriber.Option
		within  time.Duration // how long New may take, at most
	}{
		{name: "CONFIG GET unanswered, caller's ctx", timeout: healthCheck, within: found},
		{
			name: "SUBSCRIBE unanswered, caller's ctx", timeout: healthCheck, within: found,
			opts: []subscriber.Option{subscriber.WithKeyspaceEventsConfigured()},
		},
		{
			name: "CONFIG GET unanswered, health check", within: found,
			opts: []subscriber.Option{subscriber.WithHealthCheck(healthCheck)},
		},
		{
			name: "SUBSCRIBE unanswered, health check", within: found,
			opts: []subscriber.Option{subscriber.WithHealthCheck(healthCheck), subscriber.WithKeyspaceEventsConfigured()},
		},
		{
			// No PINGs, but replies are still bounded, by the default.
			name: "SUBSCRIBE unanswered, health check off", within: 5*time.Second + found,
			opts: []subscriber.Option{subscriber.WithHealthCheck(0), subscriber.WithKeyspaceEventsConfigured()},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := redistest.NewFake(t, func(s *redistest.Session) { serveSubscribe(s, 1, nil) })
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			start := time.Now()
			s, err := subscriber.New(ctx, f.Addr, tt.opts...)
			if err == nil {
				require.NoError(t, s.Close())
			}
			// Bounded by the subscriber's own reply timeout, or, where
			// that is the default 5s, by the connection's read timeout of
			// the same length, whichever fires first.
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}
			require.Less(t, time.Since(start), tt.within)
		})
	}
}

// A subscribe connection whose server stops answering is closed and
// redialled, and the waiters are woken to re-check; the new connection,
// which answers its PINGs, is kept.
func TestAStalledConnectionIsRedialled(t *testing.T) {
	var sessions, pings atomic.Int64
	f := redistest.NewFake(t, func(s *redistest.Session) {
		if sessions.Add(1) == 1 {
			serveSubscribe(s, 3, nil) // HELLO, then SUBSCRIBE and its PING
			return
		}
		serveSubscribe(s, -1, &pings)
	})
	s := newSubscriberAt(t, f.Addr, healthOptions(subscriber.WithKeyspaceEventsConfigured())...)
	w, err := s.Watch(context.Background(), subscriber.Topic{Directed: true})
	require.NoError(t, err)
	defer w.Close()

	requireWokenWithin(t, w, found, "the stalled connection was not replaced")
	require.Equal(t, 2, f.Accepted())

	// The redial's SUBSCRIBE came with a PING; three more are the health
	// checks', answered.
	redistest.Eventually(t, func() bool { return pings.Load() >= 4 }, 10*healthCheck+found, 10*time.Millisecond)
	require.Equal(t, 2, f.Accepted(), "a connection that answers was replaced")
	require.False(t, woken(w), "a connection that answers was replaced")
}
