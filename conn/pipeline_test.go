package conn_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

const releaseScript = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`

func TestConcurrentCallsGetTheirOwnReplies(t *testing.T) {
	srv := redistest.Start(t)
	forWaits(t, func(t *testing.T, opts ...conn.Option) {
		concurrentCalls(t, dial(t, srv.Addr, opts...))
	})
}

func concurrentCalls(t *testing.T, c *conn.Conn) {
	ctx := context.Background()

	// The goroutines report with assert, which unlike require may be
	// called off the test's goroutine, and stop at their first failure.
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 300 {
				want := strconv.Itoa(g*1000 + i)
				if i%3 == 0 {
					replies, err := c.DoMulti(ctx, []string{"ECHO", want}, []string{"ECHO", want + "b"})
					if !assert.NoError(t, err) ||
						!assert.Equal(t, want, replies[0].Str) || !assert.Equal(t, want+"b", replies[1].Str) {
						return
					}
					continue
				}
				v, err := c.Do(ctx, "ECHO", want)
				if !assert.NoError(t, err) || !assert.Equal(t, want, v.Str) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed(), "a goroutine failed")
	require.Zero(t, c.Pending())
}

func TestMultiCommandCallLeavesInOneWrite(t *testing.T) {
	srv := redistest.Start(t)
	var wire wireLog
	c := dial(t, srv.Addr, conn.WithTap(wire.tap))
	ctx := context.Background()

	ping := []string{"PING"}
	eval := []string{"EVAL", releaseScript, "1", "lock:{a}", "token-1"}
	want := resp.AppendCommand(resp.AppendCommand(nil, ping...), eval...)

	// Other goroutines keep the connection busy so that writes are shared.
	// They are stopped and waited for however the test ends.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopAll := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopAll()
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Do(ctx, "ECHO", strings.Repeat("x", 100)); !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	for range 200 {
		replies, err := c.DoMulti(ctx, ping, eval)
		require.NoError(t, err)
		require.Equal(t, "PONG", replies[0].Str)
		require.Equal(t, int64(0), replies[1].Int)
	}
	stopAll()
	require.False(t, t.Failed(), "a goroutine failed")

	found := 0
	for _, w := range wire.Writes() {
		if i := bytes.Index(w, want); i >= 0 {
			found += bytes.Count(w, want)
		}
		// No write may hold a part of the pair without the whole of it.
		require.Equal(t, bytes.Count(w, []byte("$4\r\nEVAL\r\n")), bytes.Count(w, want))
	}
	require.Equal(t, 200, found)
}

// TestMultiCommandCallDoesNotStraddleAReadWindow checks that a pair queued
// behind nearly 16 KiB of other commands starts a write of its own, so that
// Redis reads the pair in one pass.
func TestMultiCommandCallDoesNotStraddleAReadWindow(t *testing.T) {
	srv := redistest.Start(t)
	var wire wireLog
	held, hold := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	var once sync.Once
	c := dial(t, srv.Addr, conn.WithTap(func(dir conn.Direction, p []byte) {
		wire.tap(dir, p)
		if dir == conn.Write && bytes.Contains(p, []byte("first")) {
			// Keep the writing caller busy, so that what follows queues.
			once.Do(func() { close(held); <-hold })
		}
	}))
	ctx := context.Background()
	big := strings.Repeat("v", 16<<10-100) // SET and the pair together pass 16 KiB

	// However the test ends, the writer is let go and the callers are
	// waited for.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer release()
	wg.Go(func() {
		_, err := c.Do(ctx, "ECHO", "first")
		assert.NoError(t, err)
	})
	<-held
	wg.Go(func() {
		_, err := c.Do(ctx, "SET", "big", big)
		assert.NoError(t, err)
	})
	// The SET's caller, having queued it, reads the first reply while the
	// first caller writes.
	require.Eventually(t, func() bool { return bytes.Contains(wire.ReadBytes(), []byte("first")) && c.Pending() == 1 }, 5*time.Second, time.Millisecond)
	wg.Go(func() {
		_, err := c.DoMulti(ctx, []string{"PING"}, []string{"EVAL", releaseScript, "1", "lock:{a}", "t"})
		assert.NoError(t, err)
	})
	waitPending(t, c, 2)
	release()
	wg.Wait()
	require.False(t, t.Failed(), "a goroutine failed")

	writes := wire.Writes()
	var sizes []int
	for _, w := range writes {
		sizes = append(sizes, len(w))
	}
	require.Equal(t, 3, len(writes), "want the first write, the big SET, then the pair on its own; got writes of %v bytes", sizes)
	require.True(t, bytes.HasPrefix(writes[1], []byte("*3\r\n$3\r\nSET\r\n")))
	require.True(t, bytes.HasPrefix(writes[2], []byte("*1\r\n$4\r\nPING\r\n")))
	require.Less(t, len(writes[2]), 16<<10)
}

func waitPending(t *testing.T, c *conn.Conn, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Pending() == n }, 5*time.Second, time.Millisecond)
}

// Large values round trip, for callers whose context can end too: a reply
// longer than the read buffer is never whole in it (see lead.go).
func TestLargeValuesRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, ctx := range map[string]context.Context{"background": context.Background(), "cancellable": cancellable} {
		t.Run(name, func(t *testing.T) { roundTripLargeValues(t, ctx, dial(t, srv.Addr)) })
	}
}

func roundTripLargeValues(t *testing.T, ctx context.Context, c *conn.Conn) {
	for _, n := range []int{0, 1, 511, 512, 513, 16 << 10, 64<<10 + 3, 3 << 20} {
		val := strings.Repeat("z", n)
		_, err := c.Do(ctx, "SET", "k", val)
		require.NoError(t, err)
		v, err := c.Do(ctx, "GET", "k")
		require.NoError(t, err)
		require.Equal(t, resp.Bulk, v.Type)
		require.Equal(t, val, v.Str)
	}
	v, err := c.Do(ctx, "GET", "missing")
	require.NoError(t, err)
	require.True(t, v.IsNull())
}

func TestEmptyCommandsAreRefused(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv.Addr)
	_, err := c.Do(context.Background())
	require.ErrorIs(t, err, conn.ErrEmptyCommand)
	_, err = c.DoMulti(context.Background(), []string{"PING"}, nil)
	require.ErrorIs(t, err, conn.ErrEmptyCommand)
	require.Zero(t, c.Pending())
}

func TestPushFramesReachTheHandler(t *testing.T) {
	srv := redistest.Start(t)
	pushes := make(chan resp.Value, 4)
	tracked := dial(t, srv.Addr, conn.WithRESP3(), conn.WithPushHandler(func(v resp.Value) { pushes <- v }))
	ctx := context.Background()
	_, err := tracked.Do(ctx, "CLIENT", "TRACKING", "on")
	require.NoError(t, err)
	_, err = tracked.Do(ctx, "GET", "watched")
	require.NoError(t, err)

	other := dial(t, srv.Addr)
	_, err = other.Do(ctx, "SET", "watched", "1")
	require.NoError(t, err)
	msg := <-pushes
	require.Equal(t, resp.Push, msg.Type)
	require.Equal(t, "invalidate", msg.Elems[0].Str)
	require.Equal(t, "watched", msg.Elems[1].Elems[0].Str)
	// Replies after the push still match their calls.
	v, err := tracked.Do(ctx, "ECHO", "after")
	require.NoError(t, err)
	require.Equal(t, "after", v.Str)
}
