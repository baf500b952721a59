package conn_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

func TestBadSentinelAddressesAreRefusedBeforeDialing(t *testing.T) {
	for _, addr := range []string{
		"redis+sentinel://127.0.0.1:26379",             // no master name
		"redis+sentinel://127.0.0.1:26379/",            // no master name
		"redis+sentinel://127.0.0.1:26379,/mymaster",   // an empty sentinel
		"redis+sentinel://127.0.0.1:26379/mymaster/x",  // a bad database
		"redis+sentinel://127.0.0.1:26379/mymaster/-1", // a bad database
		"redis+sentinel://127.0.0.1:26379/mymaster?timeout=3",
		"redis://127.0.0.1:6379?sentinel_password=x", // a sentinel's parameter, and no sentinel
	} {
		t.Run(addr, func(t *testing.T) {
			_, err := conn.NewClient(addr)
			require.Error(t, err)
		})
	}
}

// role is what the server a client reaches says of itself.
func role(t *testing.T, c *conn.Client) string {
	t.Helper()
	v, err := c.Do(context.Background(), "ROLE")
	require.NoError(t, err)
	return v.Elems[0].Str
}

func TestAClientThroughSentinelsFollowsAFailover(t *testing.T) {
	s := redistest.StartSentinels(t, 2, 3)
	c, err := conn.NewClient(s.URL())
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	_, err = c.Do(ctx, "SET", "k", "before")
	require.NoError(t, err)
	require.Equal(t, "before", s.Primary(t).Do(t, "GET", "k").Str, "the write reached the primary")

	promoted := s.Failover(t, 30*time.Second)
	// The sentinels kill the clients of the nodes they reconfigure: the
	// client's next calls dial again, through the sentinels, to the new
	// primary. A call in flight then may fail; later ones land there.
	redistest.Eventually(t, func() bool {
		_, err := c.Do(ctx, "SET", "k", "after")
		return err == nil && promoted.Do(t, "GET", "k").Str == "after"
	}, 30*time.Second, 20*time.Millisecond, "the client never wrote to the new primary")
	require.Equal(t, "master", role(t, c))
}

func TestASentinelThatCannotAnswerIsPassedOver(t *testing.T) {
	s := redistest.StartSentinels(t, 1, 3)
	plain := redistest.Start(t) // a server, not a sentinel: SENTINEL is refused
	url := strings.Replace(s.URL(), "redis+sentinel://", "redis+sentinel://127.0.0.1:1,"+plain.Addr+",", 1)
	c, err := conn.NewClient(url)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "master", role(t, c))
}

func TestNoSentinelThatNamesAPrimaryIsAnErrorInBoundedTime(t *testing.T) {
	plain := redistest.Start(t)
	c, err := conn.NewClient("redis+sentinel://127.0.0.1:1," + plain.Addr + "/mymaster")
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.Do(ctx, "PING")
	require.Error(t, err)
	require.ErrorContains(t, err, "no sentinel named a primary")
	require.NoError(t, ctx.Err(), "the dial gave up on its own")
}

func TestASentinelNamingAReplicaIsPassedOver(t *testing.T) {
	s := redistest.StartSentinels(t, 1, 1)
	// The lone sentinel is told the replica is the master: a sentinel
	// that lags behind a failover names a node that is not a primary.
	sentinel := &redistest.Server{Server: s.Sentinels.Sentinels[0]}
	replica := s.Nodes[1]
	host, port := "127.0.0.1", strings.TrimPrefix(replica.Addr, "127.0.0.1:")
	sentinel.Do(t, "SENTINEL", "REMOVE", "mymaster")
	sentinel.Do(t, "SENTINEL", "MONITOR", "mymaster", host, port, "1")
	c, err := conn.NewClient(s.URL())
	require.NoError(t, err)
	defer c.Close()
	// A failover may be under way: the call asks again until its
	// context ends, and then says what the sentinel answered.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = c.Do(ctx, "PING")
	require.ErrorContains(t, err, "its role is slave, not master")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestSentinelAddressErrorsQuoteNoPassword(t *testing.T) {
	_, err := conn.NewClient("redis+sentinel://user:s3cret@127.0.0.1:1/")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")

	c, err := conn.NewClient("redis+sentinel://user:s3cret@127.0.0.1:1/mymaster")
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Do(context.Background(), "PING")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

func TestASentinelThatNeverAnswersIsPassedOverWithinTheDialTimeout(t *testing.T) {
	s := redistest.StartSentinels(t, 1, 1)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	defer func() {
		silent.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	url := strings.Replace(s.URL(), "redis+sentinel://", "redis+sentinel://"+silent.Addr().String()+",", 1)
	c, err := conn.NewClient(url, conn.WithDialTimeout(300*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "master", role(t, c), "the next sentinel answered")
}

func TestSentinelsWithAPasswordTakeTheirOwn(t *testing.T) {
	s := redistest.StartSentinels(t, 1, 3, "requirepass sentinel-s3cret", "sentinel sentinel-pass sentinel-s3cret")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	without, err := conn.NewClient(s.URL())
	require.NoError(t, err)
	defer without.Close()
	_, err = without.Do(ctx, "PING")
	require.ErrorIs(t, err, resp.NoAuth, "the sentinels refuse a client without their password")

	with, err := conn.NewClient(s.URL() + "?sentinel_password=sentinel-s3cret")
	require.NoError(t, err)
	defer with.Close()
	require.Equal(t, "master", role(t, with))

	wrong, err := conn.NewClient(s.URL() + "?sentinel_password=wrong-s3cret")
	require.NoError(t, err)
	defer wrong.Close()
	_, err = wrong.Do(ctx, "PING")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

func TestAClientFollowsAFailoverAfterItsFirstSentinelDied(t *testing.T) {
	s := redistest.StartSentinels(t, 1, 3)
	c, err := conn.NewClient(s.URL())
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	require.Equal(t, "master", role(t, c))

	s.Sentinels.Sentinels[0].Stop() // the first the client asks
	promoted := s.Failover(t, 30*time.Second)
	redistest.Eventually(t, func() bool {
		_, err := c.Do(ctx, "SET", "k", "after")
		return err == nil && promoted.Do(t, "GET", "k").Str == "after"
	}, 30*time.Second, 20*time.Millisecond, "the client never wrote to the new primary")
}

// A call made while the sentinels still name a primary that died waits,
// within its context, for them to promote a replica, and lands there: a
// failover costs a wait, not an error.
func TestACallDuringAFailoverWaitsForTheNewPrimary(t *testing.T) {
	s := redistest.StartSentinels(t, 1, 3)
	c, err := conn.NewClient(s.URL())
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "master", role(t, c))

	s.KillPrimary(t)
	killed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The connection to the dead primary may take this call with it.
	if _, err := c.Do(ctx, "PING"); err != nil {
		var uncertain *conn.UncertainError
		require.ErrorAs(t, err, &uncertain)
	}
	_, err = c.Do(ctx, "SET", "k", "after")
	require.NoError(t, err, "the call did not wait for the promotion")
	require.Equal(t, "master", role(t, c))
	t.Logf("the write landed on the new primary %v after the kill", time.Since(killed).Round(time.Millisecond))
}

// Close ends a call's wait for a failover that never comes (the primary
// died, and has no replica to promote).
func TestCloseEndsAWaitForAFailover(t *testing.T) {
	s := redistest.StartSentinels(t, 0, 1)
	c, err := conn.NewClient(s.URL())
	require.NoError(t, err)
	require.Equal(t, "master", role(t, c))
	s.KillPrimary(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background(), "SET", "k", "v")
		if err != nil {
			var uncertain *conn.UncertainError
			if errors.As(err, &uncertain) { // the dead connection took it
				_, err = c.Do(context.Background(), "SET", "k", "v")
			}
		}
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // into the wait
	closed := time.Now()
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, conn.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("the call still waits after Close")
	}
	t.Logf("the call returned %v after Close", time.Since(closed).Round(time.Millisecond))
}
