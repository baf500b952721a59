package faultproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/faultproxy"
)

// patience bounds every wait that should end long before it: generous, so
// that a loaded machine under -race does not make the tests flaky.
const patience = 5 * time.Second

// startEcho starts a TCP server on loopback that sends back every byte it
// receives and passes on the client's end of stream; the test's cleanup
// stops it and waits for its goroutines.
func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex // guards conns and closed
		conns  = map[*net.TCPConn]struct{}{}
		closed bool
	)
	wg.Go(func() {
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				_ = c.Close()
				return
			}
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Go(func() {
				// Wrapping hides ReadFrom, so that io.Copy does not try
				// to splice a socket into itself.
				_, _ = io.Copy(struct{ io.Writer }{c}, c)
				_ = c.CloseWrite()
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				_ = c.Close()
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// start starts a Proxy in front of a new echo server; the proxy is closed
// before the echo server stops.
func start(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	target := startEcho(t)
	p, err := faultproxy.Start(target)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

func dial(t *testing.T, p *faultproxy.Proxy) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), patience)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// roundTrip sends msg and requires it back within patience.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(patience)))
	_, err := io.WriteString(c, msg)
	require.NoError(t, err)
	got := make([]byte, len(msg))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, msg, string(got))
	require.NoError(t, c.SetDeadline(time.Time{}))
}

// readLine reads one line within patience.
func readLine(t *testing.T, r *bufio.Reader, c net.Conn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(patience)))
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	return line
}

// requireDropped requires a read on c to fail with a reset (SO_LINGER 0,
// not a graceful close), well within patience rather than by timing out.
func requireDropped(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(patience)))
	_, err := c.Read(make([]byte, 1))
	require.Error(t, err)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the read timed out instead of failing: %v", err)
	require.ErrorIs(t, err, syscall.ECONNRESET)
}
