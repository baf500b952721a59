package conn_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
)

func TestCallsInFlightFailAsUncertainWhenTheServerHangsUp(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		s.Expect("INCR", "n")
		s.Cut()
	})
	c := dial(t, fake.Addr)
	_, err := c.Do(context.Background(), "INCR", "n")
	var uncertain *conn.UncertainError
	require.ErrorAs(t, err, &uncertain)
	require.ErrorIs(t, err, conn.ErrBroken)
	require.ErrorContains(t, err, "may or may not have run")
}

func TestCloseFailsCallsInFlightAndLaterCalls(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) { s.Stall() })
	c, err := conn.Dial(context.Background(), fake.Addr)
	require.NoError(t, err)
	errs := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background(), "BLPOP", "q", "0")
		errs <- err
	}()
	waitPending(t, c, 1)
	require.NoError(t, c.Close())
	err = <-errs
	var uncertain *conn.UncertainError
	require.ErrorAs(t, err, &uncertain)
	require.ErrorIs(t, err, conn.ErrClosed)

	_, err = c.Do(context.Background(), "PING")
	require.ErrorIs(t, err, conn.ErrClosed)
	require.NoError(t, c.Close(), "Close is idempotent")
}

func TestReadTimeoutBreaksAStalledConnectionButNotAnIdleOne(t *testing.T) {
	srv := redistest.Start(t)
	idle := dial(t, srv.Addr, conn.WithReadTimeout(200*time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	_, err := idle.Do(context.Background(), "PING")
	require.NoError(t, err)

	fake := redistest.NewFake(t, func(s *redistest.Session) {
		s.Expect("PING")
		s.Stall()
	})
	stalled := dial(t, fake.Addr, conn.WithReadTimeout(200*time.Millisecond))
	_, err = stalled.Do(context.Background(), "PING")
	require.ErrorIs(t, err, conn.ErrBroken)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

func TestClientRedialsAfterTheConnectionIsKilled(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client, err := conn.NewClient(srv.Addr, conn.WithClientName("victim"))
	require.NoError(t, err)
	defer client.Close()

	first, err := client.Conn(ctx)
	require.NoError(t, err)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	require.Eventually(t, func() bool { return first.Err() != nil }, 5*time.Second, time.Millisecond)

	v, err := client.Do(ctx, "CLIENT", "GETNAME")
	require.NoError(t, err)
	require.Equal(t, "victim", v.Str, "the new connection ran the handshake")
	second, err := client.Conn(ctx)
	require.NoError(t, err)
	require.NotSame(t, first, second)
}

func TestClientRedialsAfterARestart(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client, err := conn.NewClient(srv.Addr, conn.WithRedialBackoff(5*time.Millisecond, 50*time.Millisecond))
	require.NoError(t, err)
	defer client.Close()
	_, err = client.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)

	srv.Restart(t)
	require.Eventually(t, func() bool {
		_, err := client.Do(ctx, "PING")
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
}

func TestClientBacksOffBetweenFailedDials(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) { s.Cut() })
	client, err := conn.NewClient(fake.Addr, conn.WithClientName("x"),
		conn.WithRedialBackoff(100*time.Millisecond, 400*time.Millisecond))
	require.NoError(t, err)
	defer client.Close()
	ctx := context.Background()

	_, err = client.Do(ctx, "PING")
	require.ErrorIs(t, err, conn.ErrBroken, "the handshake met a closed connection")

	// After one failure the wait is 100ms less up to half: at least 50ms.
	start := time.Now()
	_, err = client.Do(ctx, "PING")
	require.Error(t, err)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)

	// A context that ends during the wait ends the call at once.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = client.Do(short, "PING")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 2, fake.Accepted())
}

func TestClientDialsOnceForManyCallers(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		for {
			cmd, err := s.ReadCommand()
			if err != nil {
				return
			}
			assert.Equal(t, []string{"PING"}, cmd)
			_ = s.Send("+PONG\r\n")
		}
	})
	client, err := conn.NewClient(fake.Addr)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_, err := client.Do(context.Background(), "PING")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, 1, fake.Accepted())
	require.NoError(t, client.Close())
	_, err = client.Do(context.Background(), "PING")
	require.True(t, errors.Is(err, conn.ErrClosed))
}
