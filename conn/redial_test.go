package conn_test

import (
	"context"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// TestRedialErrorsQuoteNoPassword: the errors of a Client that cannot
// reach its server (the dial refused, the wait before the redial cut
// short by the context, a call that waits for another's redial) reach
// every caller and its logs: none says the password.
func TestRedialErrorsQuoteNoPassword(t *testing.T) {
	const secret = "s3cret"
	addr := "redis://app:" + secret + "@" + redistest.ClosedAddr(t)
	c, err := conn.NewClient(addr, conn.WithRedialBackoff(time.Minute, time.Minute))
	require.NoError(t, err)
	defer c.Close()
	require.NotContains(t, c.Addr(), secret)

	_, err = c.Do(context.Background(), "PING")
	var dialErr *conn.DialError
	require.ErrorAs(t, err, &dialErr, "a refused dial")
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.NotContains(t, dialErr.Error(), "dial tcp", "the dial is said once")
	redistest.RequireNoSecret(t, err, secret)

	// The next dial waits a minute: a call whose context ends first
	// gives up in the wait, and one that comes meanwhile waits for it.
	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.Do(ctx, "PING")
		waiting <- err
	}()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = c.Do(ctx, "PING")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	redistest.RequireNoSecret(t, err, secret)
	err = <-waiting
	require.ErrorIs(t, err, context.DeadlineExceeded)
	redistest.RequireNoSecret(t, err, secret)
}

// TestRedialsToAServerThatAcceptsAndClosesArePaced: a proxy or load
// balancer with no server behind it accepts every connection and closes
// it. Each dial succeeds, so only the connections' breaking before any
// reply can pace the redials; a caller that retries at once must not make
// the Client redial thousands of times a second.
func TestRedialsToAServerThatAcceptsAndClosesArePaced(t *testing.T) {
	for name, hangUp := range map[string]func(*redistest.Session){
		"closes":           func(s *redistest.Session) {},
		"reads and resets": func(s *redistest.Session) { _, _ = s.ReadCommand(); s.Reset() },
		// A server at its maxclients, or in protected mode, greets a
		// connection with an error and closes it.
		"greets with an error": func(s *redistest.Session) { _ = s.Send("-ERR max number of clients reached\r\n") },
	} {
		t.Run(name, func(t *testing.T) {
			fake := redistest.NewFake(t, hangUp)
			c, err := conn.NewClient(fake.Addr) // the default backoff: 50ms doubling to 2s
			require.NoError(t, err)
			defer c.Close()
			const span = 2 * time.Second
			calls := 0
			for start := time.Now(); time.Since(start) < span; calls++ {
				_, err := c.Do(context.Background(), "PING")
				require.Error(t, err)
			}
			dials := fake.Accepted()
			t.Logf("%d calls, %d dials in %v", calls, dials, span)
			// 50ms doubling to 2s, with at most half off at random:
			// at least 25+50+100+200+400+800ms between the first seven
			// dials, and 1s before the eighth, which only the last call,
			// begun before the span ended, can make. 50 runs: 7 or 8.
			require.LessOrEqual(t, dials, 8, "dials in %v", span)
		})
	}
}

// TestCloseCutsADialShort: a server that accepts and never answers (a
// frozen process, whose kernel still accepts) holds a dial's handshake
// for the whole dial timeout. Close cuts it short, as it cuts a
// connection, and the call waiting on the dial fails with ErrClosed.
func TestCloseCutsADialShort(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) { s.Stall() })
	c, err := conn.NewClient("redis://:pw@"+fake.Addr, conn.WithDialTimeout(time.Minute))
	require.NoError(t, err)
	var wg sync.WaitGroup
	defer wg.Wait()
	errs := make(chan error, 2)
	for range 2 { // the one dialling, and one waiting for it
		wg.Go(func() {
			_, err := c.Do(context.Background(), "PING")
			errs <- err
		})
	}
	redistest.Eventually(t, func() bool { return fake.Accepted() == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // both calls wait now
	start := time.Now()
	require.NoError(t, c.Close())
	took := time.Since(start)
	require.Less(t, took, time.Second, "Close waited for the dial")
	for range 2 {
		require.ErrorIs(t, <-errs, conn.ErrClosed)
	}
}

// TestAHandshakeErrorDoesNotRepeatThePassword: a server that does not
// know HELLO (or AUTH) answers with an error that repeats the command's
// arguments, the password among them. The dial's error keeps the reply's
// code, for errors.Is, and not its text.
func TestAHandshakeErrorDoesNotRepeatThePassword(t *testing.T) {
	const secret = "s3cret"
	for _, resp3 := range []bool{false, true} {
		fake := redistest.NewFake(t, func(s *redistest.Session) {
			cmd, err := s.ReadCommand()
			if err != nil {
				return
			}
			echo := "-ERR unknown command `" + cmd[0] + "`, with args beginning with: "
			for _, arg := range cmd[1:] {
				echo += "`" + arg + "`, "
			}
			_ = s.Send(echo + "\r\n")
		})
		opts := []conn.Option{conn.WithPassword(secret)}
		if resp3 {
			opts = append(opts, conn.WithRESP3())
		}
		_, err := conn.Dial(context.Background(), fake.Addr, opts...)
		require.ErrorAs(t, err, new(*conn.DialError))
		require.ErrorIs(t, err, resp.Prefix("ERR"))
		redistest.RequireNoSecret(t, err, secret)
	}
}

// TestNoCallWaitsForAReplyWithoutABound: a caller whose context cannot
// end, on a Client made with no option, is not held for ever by a server
// that takes its command and never answers: the default read timeout
// breaks the connection, and the call fails as uncertain.
func TestNoCallWaitsForAReplyWithoutABound(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) { s.Stall() })
	c, err := conn.NewClient(fake.Addr)
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	_, err = c.Do(context.Background(), "PING")
	took := time.Since(start)
	t.Logf("gave up after %v", took.Round(time.Millisecond))
	require.ErrorAs(t, err, new(*conn.UncertainError))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Less(t, took, 10*time.Second)
}

// TestCallersThatGiveUpDoNotPutTheRedialOff: after a run of failed dials
// the next dial waits its backoff, and every caller that needs a
// connection meanwhile waits for the same moment. Callers whose contexts
// are shorter than the backoff must not each start the wait over, or a
// service whose calls all have short deadlines would never dial again
// once the server is back.
func TestCallersThatGiveUpDoNotPutTheRedialOff(t *testing.T) {
	srv := redistest.Start(t)
	proxy, err := faultproxy.Start(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	const backoff = 400 * time.Millisecond
	c, err := conn.NewClient(proxy.Addr(), conn.WithRedialBackoff(backoff, backoff))
	require.NoError(t, err)
	defer c.Close()
	proxy.Refuse(true)
	for range 3 {
		_, err := c.Do(context.Background(), "PING")
		require.Error(t, err)
	}
	proxy.Refuse(false)
	back := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), backoff/4)
		_, err := c.Do(ctx, "PING")
		cancel()
		if err == nil {
			break
		}
		require.Less(t, time.Since(back), 5*backoff, "no call got through: %v", err)
	}
	t.Logf("a call got through %v after the server came back", time.Since(back).Round(time.Millisecond))
}
