package conn_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// serveOverLimit answers HELLO, PING and ECHO as Redis does, GET big with
// big, and SUBSCRIBE with refused (a refusal), until the client hangs up.
func serveOverLimit(big, refused string) func(*redistest.Session) {
	return func(s *redistest.Session) {
		for {
			cmd, err := s.ReadCommand()
			if err != nil {
				return
			}
			reply := "-ERR unexpected command\r\n"
			switch {
			case cmd[0] == "HELLO":
				reply = "%1\r\n+proto\r\n:3\r\n"
			case cmd[0] == "PING":
				reply = "+PONG\r\n"
			case cmd[0] == "ECHO" && len(cmd) == 2:
				reply = "$" + strconv.Itoa(len(cmd[1])) + "\r\n" + cmd[1] + "\r\n"
			case cmd[0] == "GET" && len(cmd) == 2 && cmd[1] == "big":
				reply = big
			case cmd[0] == "SUBSCRIBE":
				reply = refused
			}
			if s.Send(reply) != nil {
				return
			}
		}
	}
}

// bystanders runs n goroutines that each make calls on c, checking that
// each gets its own reply, until the returned stop is called, or the test
// ends. stop waits for them and returns what went wrong, if anything.
func bystanders(t *testing.T, c *conn.Conn, n int) (stop func() error) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, n)
	for g := range n {
		wg.Go(func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				want := fmt.Sprintf("bystander %d call %d", g, i)
				v, err := c.Do(ctx, "ECHO", want)
				if err == nil && v.Str != want {
					err = fmt.Errorf("ECHO %q answered %q", want, v.Str)
				}
				if err == nil && i%2 == 0 {
					v, err = c.Do(ctx, "PING")
					if err == nil && v.Str != "PONG" {
						err = fmt.Errorf("PING answered %q", v.Str)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	stop = sync.OnceValue(func() error {
		close(done)
		wg.Wait()
		close(errs)
		var all []error
		for err := range errs {
			all = append(all, err)
		}
		return errors.Join(all...)
	})
	t.Cleanup(func() { _ = stop() })
	return stop
}

// requireOverLimit checks that err is the error of a call whose reply was
// over a limit: it matches resp.ErrLimit, and says neither that the
// connection broke nor that the command's fate is unknown.
func requireOverLimit(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, resp.ErrLimit)
	require.NotErrorIs(t, err, conn.ErrBroken)
	var uncertain *conn.UncertainError
	require.False(t, errors.As(err, &uncertain), "%v is uncertain", err)
}

// TestReplyOverALimitFailsOnlyItsCall has a scripted server answer GET big
// with a valid reply over one of the reader's limits, over and over, while
// eight other goroutines share the connection. Each GET big must fail
// alone with an error matching resp.ErrLimit, and every other call must get
// its own reply.
func TestReplyOverALimitFailsOnlyItsCall(t *testing.T) {
	tests := []struct {
		name string
		big  string
		opts []resp.ReaderOption
	}{
		{name: "bulk over the length limit", big: "$2000\r\n" + strings.Repeat("x", 2000) + "\r\n", opts: opts(resp.WithMaxBulkLen(1024))},
		{name: "line over the length limit", big: "+" + strings.Repeat("x", 2000) + "\r\n", opts: opts(resp.WithMaxBulkLen(1024))},
		{name: "error over the length limit", big: "-ERR " + strings.Repeat("x", 2000) + "\r\n", opts: opts(resp.WithMaxBulkLen(1024))},
		{name: "array over the count limit", big: "*100\r\n" + strings.Repeat(":1\r\n", 100), opts: opts(resp.WithMaxAggregateLen(64))},
		{name: "nesting over the depth limit", big: strings.Repeat("*1\r\n", 1000) + ":1\r\n"},
		{name: "reply over the memory limit", big: "*50\r\n" + strings.Repeat("$10\r\n0123456789\r\n", 50), opts: opts(resp.WithMaxReplyMemory(4096))},
		{name: "attribute over the count limit", big: "|40\r\n" + strings.Repeat("+k\r\n+v\r\n", 40) + "$1\r\nv\r\n", opts: opts(resp.WithMaxAggregateLen(64))},
		{name: "element over the limit deep in a map", big: "%2\r\n+a\r\n*1\r\n*1\r\n$2000\r\n" + strings.Repeat("y", 2000) + "\r\n+b\r\n:1\r\n", opts: opts(resp.WithMaxBulkLen(1024))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := redistest.NewFake(t, serveOverLimit(tt.big, "-ERR "+strings.Repeat("z", 2000)+"\r\n"))
			c := dial(t, fake.Addr, conn.WithRESP3(), conn.WithReaderOptions(tt.opts...))
			ctx := context.Background()

			stop := bystanders(t, c, 8)
			for i := range 50 {
				if i%10 == 9 {
					// A batch with a reply over the limit fails as a
					// whole; the replies after it still go where they
					// belong.
					_, err := c.DoMulti(ctx, []string{"ECHO", "a"}, []string{"GET", "big"}, []string{"ECHO", "b"})
					requireOverLimit(t, err)
					continue
				}
				_, err := c.Do(ctx, "GET", "big")
				requireOverLimit(t, err)
			}
			require.NoError(t, stop())

			v, err := c.Do(ctx, "ECHO", "after")
			require.NoError(t, err)
			require.Equal(t, "after", v.Str)
			require.NoError(t, c.Err())
			require.Zero(t, c.Pending())
		})
	}
}

// TestRefusalOverALimitFailsOnlyItsDoPush has the server refuse a
// SUBSCRIBE with an error reply over the length limit: DoPush must fail
// with an error matching resp.ErrLimit, and take the PING's reply that
// follows with it, so that the next call gets its own reply.
func TestRefusalOverALimitFailsOnlyItsDoPush(t *testing.T) {
	fake := redistest.NewFake(t, serveOverLimit("", "-NOPERM "+strings.Repeat("z", 2000)+"\r\n"))
	c := dial(t, fake.Addr, conn.WithRESP3(), conn.WithReaderOptions(resp.WithMaxBulkLen(1024)))
	ctx := context.Background()
	requireOverLimit(t, c.DoPush(ctx, "SUBSCRIBE", "secret"))
	v, err := c.Do(ctx, "ECHO", "in step")
	require.NoError(t, err)
	require.Equal(t, "in step", v.Str)
	require.NoError(t, c.Err())
}

// TestPushFrameOverALimitIsDropped sends a push frame over a limit, and one
// within it, before a reply: the first is dropped, the second reaches the
// handler, and the reply its call.
func TestPushFrameOverALimitIsDropped(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		if !s.Expect("HELLO", "3") || s.Send("%0\r\n") != nil || !s.Expect("PING") {
			return
		}
		_ = s.Send(">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2000\r\n" + strings.Repeat("x", 2000) + "\r\n" +
			">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$5\r\nsmall\r\n" +
			"+PONG\r\n")
		s.Stall()
	})
	pushes := make(chan resp.Value, 4)
	c := dial(t, fake.Addr, conn.WithRESP3(), conn.WithReaderOptions(resp.WithMaxBulkLen(1024)),
		conn.WithPushHandler(func(v resp.Value) { pushes <- v }))
	v, err := c.Do(context.Background(), "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v.Str)
	require.Len(t, pushes, 1)
	require.Equal(t, "small", (<-pushes).Elems[2].Str)
	require.NoError(t, c.Err())
}

// TestReplyOverALimitFromRedis does the same against a real server: a value
// over a lowered bulk limit is stored, and every GET of it fails alone
// while bystanders' calls succeed; a pub/sub message over the limit is
// dropped, and the next one is delivered.
func TestReplyOverALimitFromRedis(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	limit := conn.WithReaderOptions(resp.WithMaxBulkLen(1024))
	big := strings.Repeat("b", 2000)

	t.Run("GET", func(t *testing.T) {
		c := dial(t, srv.Addr, limit)
		_, err := c.Do(ctx, "SET", "big", big)
		require.NoError(t, err)

		stop := bystanders(t, c, 8)
		for range 100 {
			_, err := c.Do(ctx, "GET", "big")
			requireOverLimit(t, err)
		}
		_, err = c.DoMulti(ctx, []string{"PING"}, []string{"GET", "big"}, []string{"PING"})
		requireOverLimit(t, err)
		require.NoError(t, stop())
		require.NoError(t, c.Err())
		require.Zero(t, c.Pending())
	})

	t.Run("push", func(t *testing.T) {
		pushes := make(chan resp.Value, 8)
		sub := dial(t, srv.Addr, limit, conn.WithRESP3(), conn.WithPushHandler(func(v resp.Value) { pushes <- v }))
		pub := dial(t, srv.Addr)
		require.NoError(t, sub.DoPush(ctx, "SUBSCRIBE", "news"))
		require.Equal(t, "subscribe", (<-pushes).Elems[0].Str)
		for _, msg := range []string{big, "small"} {
			n, err := pub.Do(ctx, "PUBLISH", "news", msg)
			require.NoError(t, err)
			require.Equal(t, int64(1), n.Int)
		}
		select {
		case v := <-pushes:
			require.Equal(t, "small", v.Elems[2].Str, "the message over the limit was dropped")
		case <-time.After(5 * time.Second):
			t.Fatal("the message within the limit never came")
		}
		v, err := sub.Do(ctx, "PING")
		require.NoError(t, err)
		require.Equal(t, "PONG", v.Str)
		require.NoError(t, sub.Err())
	})
}

func opts(o ...resp.ReaderOption) []resp.ReaderOption { return o }
