package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/subscriber"
)

// proxied starts a fault proxy in front of srv, closed when the test ends.
func proxied(t *testing.T, srv *redistest.Server) *faultproxy.Proxy {
	t.Helper()
	proxy, err := faultproxy.Start(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	return proxy
}

// TestAReleaseRetriedOnAServerThatAcceptsAndClosesIsPaced: behind a
// load balancer with no healthy server, every connection is accepted and
// cut at once. A release sent again until the release timeout, on an
// address without a password (no handshake to fail), must pace itself
// and its redials rather than storm the address: in either mode, and
// for Unlock as for Close's releases.
func TestAReleaseRetriedOnAServerThatAcceptsAndClosesIsPaced(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		for _, by := range []string{"unlock", "close"} {
			t.Run(mode+"/"+by, func(t *testing.T) {
				srv := redistest.Start(t)
				proxy := proxied(t, srv)
				const releaseTimeout = 2 * time.Second
				l, err := lock.Open(context.Background(), proxy.Addr(), modeOptions(mode, lock.WithReleaseTimeout(releaseTimeout))...)
				require.NoError(t, err)
				ls := mustLock(t, l, "k")
				proxy.Refuse(true) // a new connection is cut as soon as it is accepted
				proxy.Reset()
				before, start := proxy.Accepted(), time.Now()
				if by == "unlock" {
					require.Error(t, ls.Unlock(context.Background()))
				}
				// Close's own release of the lease, in "close", fails
				// like the Unlock's.
				t.Logf("Close: %v", l.Close())
				took, dials := time.Since(start), proxy.Accepted()-before
				perSecond := float64(dials) / took.Seconds()
				t.Logf("%d dials in %v: %.1f a second", dials, took.Round(time.Millisecond), perSecond)
				require.Less(t, perSecond, 20.0)
			})
		}
	}
}

// TestCloseIsBoundedWhileACallRedials: a server that requires a password
// and freezes (its kernel still accepts connections, AUTH is never
// answered) holds a redial for the whole dial timeout. Close still ends
// within about twice the release timeout, as its doc says: the dial is
// cut like a connection.
func TestCloseIsBoundedWhileACallRedials(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithConfig("requirepass s3cret"))
			proxy := proxied(t, srv)
			const releaseTimeout = time.Second
			l, err := lock.Open(context.Background(), "redis://:s3cret@"+proxy.Addr(), modeOptions(mode, lock.WithReleaseTimeout(releaseTimeout))...)
			require.NoError(t, err)
			mustLock(t, l, "held")
			proxy.Blackhole(true) // accepted, and never answered
			proxy.Reset()
			// The first call finds the connection reset; the next redials.
			_, err = l.TryLock(context.Background(), "first")
			require.Error(t, err)
			locked := make(chan error, 1)
			go func() {
				_, err := l.Lock(context.Background(), "other")
				locked <- err
			}()
			time.Sleep(300 * time.Millisecond) // the Lock waits on its redial's AUTH
			start := time.Now()
			err = l.Close() // the release of "held" cannot reach the frozen server either
			took := time.Since(start)
			t.Logf("Close took %v: %v", took.Round(time.Millisecond), err)
			require.Less(t, took, 2*releaseTimeout+500*time.Millisecond)
			lerr := <-locked
			t.Logf("Lock: %v", lerr)
			require.Error(t, lerr)
			proxy.Blackhole(false)
		})
	}
}

// TestACallOnTheCallersClientIsBoundedOnASilentServer: a Locker made
// with New, on a client and subscriber the caller made with no option,
// and a call whose context cannot end: a server that freezes (its kernel
// still takes the commands) fails the call within the connection's
// default read timeout, rather than holding it until the link is reset.
func TestACallOnTheCallersClientIsBoundedOnASilentServer(t *testing.T) {
	srv := redistest.Start(t)
	c, err := conn.NewClient(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	sub, err := subscriber.New(context.Background(), srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	l, err := lock.New(c, sub, lock.WithReleaseTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	mustUnlock(t, mustLock(t, l, "k")) // connected, scripts loaded
	srv.Pause(t, 30*time.Second)
	start := time.Now()
	_, err = l.TryLock(context.Background(), "k")
	took := time.Since(start)
	t.Logf("TryLock gave up after %v: %v", took.Round(time.Millisecond), err)
	require.ErrorAs(t, err, new(*conn.UncertainError))
	require.Less(t, took, 10*time.Second)
	srv.Server.Resume()
}

// TestAReleaseWhoseRedialIsRefusedIsSentAgain: a server at its client
// limit, or still loading, accepts a connection and answers its
// handshake with an error reply. Nothing of the release was sent then,
// so the release is no verdict and is sent again within the release
// timeout, rather than leaving the lock held for its TTL.
func TestAReleaseWhoseRedialIsRefusedIsSentAgain(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithConfig("requirepass s3cret"))
			addr := "redis://:s3cret@" + srv.Addr
			l, err := lock.Open(context.Background(), addr, modeOptions(mode, lock.WithTTL(time.Minute), lock.WithReleaseTimeout(5*time.Second))...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			ls := mustLock(t, l, "k")
			admin, err := conn.Dial(context.Background(), addr)
			require.NoError(t, err)
			defer admin.Close()
			_, err = admin.DoMulti(context.Background(), []string{"CONFIG", "SET", "maxclients", "1"}, []string{"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"})
			require.NoError(t, err)
			time.AfterFunc(time.Second, func() { _, _ = admin.Do(context.Background(), "CONFIG", "SET", "maxclients", "10000") })
			start := time.Now()
			require.NoError(t, ls.Unlock(context.Background()))
			t.Logf("released %v after the refusals began", time.Since(start).Round(time.Millisecond))
			require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "the lock is still held")
		})
	}
}
