package faultproxy_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/faultproxy"
)

func TestBytesPassThroughUnchanged(t *testing.T) {
	for _, tt := range []struct {
		name string
		size int
	}{
		{name: "one byte", size: 1},
		{name: "one chunk", size: 32 << 10},
		{name: "1 MiB", size: 1 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t)
			c := dial(t, p)
			payload := make([]byte, tt.size)
			_, _ = rand.Read(payload)

			// The writer runs alongside the reader, as a payload larger
			// than the buffers on the way would otherwise block both.
			// Closing our half afterwards also checks that the proxy
			// passes an end of stream on in both directions.
			written := make(chan error, 1)
			go func() {
				_, err := c.Write(payload)
				if err == nil {
					err = c.CloseWrite()
				}
				written <- err
			}()
			require.NoError(t, c.SetReadDeadline(time.Now().Add(patience)))
			got, err := io.ReadAll(c)
			require.NoError(t, err)
			require.NoError(t, <-written)
			require.True(t, bytes.Equal(payload, got), "got %d bytes back, want the %d sent", len(got), len(payload))
		})
	}
}

func TestSeveralConnections(t *testing.T) {
	p := start(t)
	conns := []net.Conn{dial(t, p), dial(t, p), dial(t, p)}
	for i, c := range conns {
		roundTrip(t, c, string(rune('a'+i))+" says hello")
	}
	require.Equal(t, len(conns), p.Conns())
}

// TestCloseIsBoundedWhenThePeerNeverReads fills every buffer between a
// client that writes but never reads and the echo server, so that the
// proxy's writer towards the client is stuck in Write when Close comes.
func TestCloseIsBoundedWhenThePeerNeverReads(t *testing.T) {
	target := startEcho(t)
	p, err := faultproxy.Start(target)
	require.NoError(t, err)
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer func() { _ = c.Close() }()

	stalled := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			// A write that cannot finish within the deadline means
			// every buffer on the way is full.
			if err := c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
				stalled <- err
				return
			}
			if _, err := c.Write(buf); err != nil {
				stalled <- err
				return
			}
		}
	}()
	select {
	case err := <-stalled:
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	case <-time.After(10 * patience):
		t.Fatal("the client's writes never stalled")
	}
	require.Equal(t, 1, p.Conns())

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("Close did not return")
	}
	require.Equal(t, 0, p.Conns())
	require.NoError(t, p.Close(), "a second Close does nothing")

	_, err = net.DialTimeout("tcp", p.Addr(), patience)
	require.Error(t, err, "a closed proxy accepts nothing")
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded))
}
