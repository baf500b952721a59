package faultproxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLatencyDelaysARoundTrip(t *testing.T) {
	const delay = 50 * time.Millisecond
	p := start(t)
	c := dial(t, p)
	roundTrip(t, c, "warm up")

	p.SetLatency(delay)
	began := time.Now()
	roundTrip(t, c, "ping")
	// The delay applies once each way; no upper bound but patience, as a
	// loaded machine may add any amount.
	require.GreaterOrEqual(t, time.Since(began), 2*delay)
}

func TestLatencyKeepsOrder(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	r := bufio.NewReader(c)

	// The latency changes between lines, so that a later line gets a
	// shorter delay than an earlier one and must still not overtake it.
	// The pause only makes it likely that the proxy reads each line under
	// its own latency; the order must hold whenever it reads them.
	var want []string
	for i, d := range []time.Duration{200 * time.Millisecond, 0, 50 * time.Millisecond, 0} {
		p.SetLatency(d)
		line := fmt.Sprintf("line %d\n", i)
		want = append(want, line)
		_, err := io.WriteString(c, line)
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
	}
	var got []string
	for range want {
		got = append(got, readLine(t, r, c))
	}
	require.Equal(t, want, got)
}

func TestReset(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d connections", n), func(t *testing.T) {
			p := start(t)
			var conns []net.Conn
			for range n {
				c := dial(t, p)
				roundTrip(t, c, "before")
				conns = append(conns, c)
			}
			require.Equal(t, n, p.Conns())

			require.Equal(t, n, p.Reset())
			require.Equal(t, 0, p.Conns())
			for _, c := range conns {
				requireDropped(t, c)
			}

			c := dial(t, p)
			roundTrip(t, c, "after")
			require.Equal(t, 1, p.Conns())
		})
	}
}

func TestBlackhole(t *testing.T) {
	for _, tt := range []struct {
		name string
		// dialledBefore says whether the connection exists before the
		// blackhole begins or is made during it.
		dialledBefore bool
	}{
		{name: "existing connection", dialledBefore: true},
		{name: "new connection", dialledBefore: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t)
			var c net.Conn
			if tt.dialledBefore {
				c = dial(t, p)
				roundTrip(t, c, "before\n")
			}
			p.Blackhole(true)
			if !tt.dialledBefore {
				c = dial(t, p)
			}

			_, err := io.WriteString(c, "held\n")
			require.NoError(t, err)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
			_, err = c.Read(make([]byte, 1))
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			require.Eventually(t, func() bool { return p.Conns() == 1 }, patience, time.Millisecond,
				"the connection stays open")

			p.Blackhole(false)
			_, err = io.WriteString(c, "back\n")
			require.NoError(t, err)
			// Held, not dropped: both come through, in order, as over a
			// TCP link whose partition healed.
			r := bufio.NewReader(c)
			require.Equal(t, "held\n", readLine(t, r, c))
			require.Equal(t, "back\n", readLine(t, r, c))
		})
	}
}

func TestRefuse(t *testing.T) {
	p := start(t)
	existing := dial(t, p)
	roundTrip(t, existing, "before")

	p.Refuse(true)
	began := time.Now()
	// The reset may beat the dial's own check of the handshake, failing the
	// dial itself; otherwise the first read sees it.
	c, err := net.DialTimeout("tcp", p.Addr(), patience)
	if err != nil {
		require.ErrorIs(t, err, syscall.ECONNRESET)
	} else {
		defer func() { _ = c.Close() }()
		requireDropped(t, c)
	}
	require.Less(t, time.Since(began), patience)
	roundTrip(t, existing, "untouched")
	require.Equal(t, 1, p.Conns())

	p.Refuse(false)
	roundTrip(t, dial(t, p), "accepted again")
	require.Equal(t, 2, p.Conns())
}

// TestFaultsAfterClose checks that the fault setters stay harmless once
// the proxy is gone, since a test's cleanup may run them in any order.
func TestFaultsAfterClose(t *testing.T) {
	p := start(t)
	roundTrip(t, dial(t, p), "x")
	require.NoError(t, p.Close())
	require.Equal(t, 0, p.Reset())
	p.SetLatency(time.Second)
	p.Blackhole(true)
	p.Refuse(true)
	require.Equal(t, 0, p.Conns())
	require.True(t, strings.HasPrefix(p.Addr(), "127.0.0.1:"))
	require.NoError(t, p.Close())
}

func TestSever(t *testing.T) {
	p := start(t)
	severed := dial(t, p)
	roundTrip(t, severed, "before")
	require.Equal(t, 1, p.Sever())

	_, err := io.WriteString(severed, "lost\n")
	require.NoError(t, err)
	require.NoError(t, severed.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = severed.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "no reply, and no close either")

	fresh := dial(t, p)
	roundTrip(t, fresh, "a new connection is forwarded")
	require.Equal(t, 2, p.Conns(), "the severed connection stays open")

	// Only Reset ends it.
	require.Equal(t, 2, p.Reset())
	requireDropped(t, severed)
}
