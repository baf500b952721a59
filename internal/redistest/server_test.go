package redistest_test

import (
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// ping sends PING on c and requires +PONG back.
func ping(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err := c.Write(resp.AppendCommand(nil, "PING"))
	require.NoError(t, err)
	v, err := resp.NewReader(c).Read()
	require.NoError(t, err)
	require.Equal(t, resp.Value{Type: resp.SimpleString, Str: "PONG"}, v)
}

func dialPing(t *testing.T, network, addr string) {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	ping(t, c)
}

func dialPingTLS(t *testing.T, addr string, conf *tls.Config) {
	t.Helper()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: conf}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	ping(t, c)
}

func TestStartAnswersPing(t *testing.T) {
	s := redistest.Start(t)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, s.Addr)
	require.Empty(t, s.UnixSocket)
	require.Empty(t, s.TLSAddr)
	require.Nil(t, s.TLSConfig())
	require.Equal(t, "PONG", s.Do(t, "PING").Str)
	dialPing(t, "tcp", s.Addr)
}

func TestWithConfig(t *testing.T) {
	tests := []struct {
		line, param, want string
	}{
		{`notify-keyspace-events ""`, "notify-keyspace-events", ""},
		{"notify-keyspace-events KEA", "notify-keyspace-events", "AKE"},
		{"maxmemory-policy allkeys-lru", "maxmemory-policy", "allkeys-lru"},
		{"io-threads 4", "io-threads", "4"},
		{"save 900 1", "save", "900 1"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			s := redistest.Start(t, redistest.WithConfig(tt.line))
			v := s.Do(t, "CONFIG", "GET", tt.param)
			require.NoError(t, v.Err())
			require.Len(t, v.Elems, 2, "reply %s", v)
			require.Equal(t, tt.want, v.Elems[1].Str)
		})
	}
}

func TestRequirePass(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"bare", []string{"requirepass secret"}, "secret"},
		{"double quoted", []string{`requirepass "s e\x41"`}, "s eA"},
		{"single quoted", []string{`requirepass 'secret'`}, "secret"},
		{"last wins", []string{"requirepass first", "requirepass second"}, "second"},
		{"in one multi-line argument", []string{"maxclients 100\nrequirepass secret\n"}, "secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := redistest.Start(t, redistest.WithConfig(tt.lines...))
			require.Equal(t, "PONG", s.Do(t, "PING").Str, "Do authenticates")
			v := s.Do(t, "CONFIG", "GET", "requirepass")
			require.Len(t, v.Elems, 2, "reply %s", v)
			require.Equal(t, tt.want, v.Elems[1].Str)

			// Without AUTH, the server refuses: the password is really set.
			c, err := net.Dial("tcp", s.Addr)
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Write(resp.AppendCommand(nil, "GET", "k"))
			require.NoError(t, err)
			v, err = resp.NewReader(c).Read()
			require.NoError(t, err)
			require.ErrorIs(t, v.Err(), resp.NoAuth)
		})
	}
}

func TestUnixSocketAndTLS(t *testing.T) {
	s := redistest.Start(t, redistest.WithUnixSocket(), redistest.WithTLS())
	require.NotEmpty(t, s.UnixSocket)
	require.Less(t, len(s.UnixSocket), 100)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, s.TLSAddr)
	require.NotEqual(t, s.Addr, s.TLSAddr)

	dialPing(t, "unix", s.UnixSocket)
	dialPingTLS(t, s.TLSAddr, s.TLSConfig())

	// The certificate also names localhost.
	conf := s.TLSConfig()
	conf.ServerName = "localhost"
	dialPingTLS(t, s.TLSAddr, conf)

	// And only the throwaway CA vouches for it.
	_, err := tls.Dial("tcp", s.TLSAddr, &tls.Config{MinVersion: tls.VersionTLS12})
	require.Error(t, err)
}

func TestRestartKeepsAddresses(t *testing.T) {
	s := redistest.Start(t, redistest.WithUnixSocket(), redistest.WithTLS())
	addr, sock, tlsAddr := s.Addr, s.UnixSocket, s.TLSAddr

	old, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer old.Close()
	ping(t, old)

	s.Restart(t)
	require.Equal(t, addr, s.Addr)
	require.Equal(t, sock, s.UnixSocket)
	require.Equal(t, tlsAddr, s.TLSAddr)

	// The old connection died with the old process.
	_, err = resp.NewReader(old).Read()
	require.Error(t, err)

	require.Equal(t, "PONG", s.Do(t, "PING").Str)
	dialPing(t, "unix", s.UnixSocket)
	dialPingTLS(t, s.TLSAddr, s.TLSConfig())
}

func TestStopIsIdempotent(t *testing.T) {
	s := redistest.Start(t, redistest.WithUnixSocket())
	s.Stop()
	s.Stop()
	_, err := net.Dial("tcp", s.Addr)
	require.Error(t, err, "nothing listens after Stop")

	// A stopped server can be started again; t.Cleanup stops it once more.
	s.Restart(t)
	require.Equal(t, "PONG", s.Do(t, "PING").Str)
}

func TestFailedStartQuotesLog(t *testing.T) {
	r := record(t, func(r *recorder) {
		redistest.Start(r, redistest.WithConfig("no-such-directive 1"))
		t.Error("Start returned")
	})
	r.runCleanups()
	require.Contains(t, r.fatal, "no-such-directive")
	require.Contains(t, r.fatal, "Bad directive")
}

func TestRestartOnTakenPortFails(t *testing.T) {
	tests := []struct {
		name  string
		serve func(c net.Conn) // what the process holding the port does
		want  string
	}{
		{"silent listener", func(net.Conn) {}, "already in use"},
		{
			// Looks like a healthy redis-server, but the wrong one.
			"another server", func(c net.Conn) {
				info := "# Server\r\nprocess_id:1\r\n"
				_, _ = io.WriteString(c, "+PONG\r\n$"+strconv.Itoa(len(info))+"\r\n"+info+"\r\n")
			},
			"already in use",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := redistest.Start(t)
			s.Stop()
			ln, err := net.Listen("tcp", s.Addr)
			require.NoError(t, err)
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return // closed below
					}
					tt.serve(c)
					c.Close()
				}
			})
			defer wg.Wait()
			defer ln.Close()

			r := record(t, func(r *recorder) {
				s.Restart(r)
				t.Error("Restart returned")
			})
			require.Contains(t, r.fatal, tt.want)
			require.Contains(t, r.fatal, "Address already in use", "quotes the log")
		})
	}
}

func TestMissingRedisServer(t *testing.T) {
	tests := []struct {
		name, require string
		skipped       bool
	}{
		{"skips", "", true},
		{"fails when required", "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			t.Setenv(redistest.RequireRedisEnv, tt.require)
			r := record(t, func(r *recorder) { redistest.Start(r) })
			r.runCleanups()
			msg := r.fatal
			if tt.skipped {
				require.Empty(t, r.fatal)
				msg = r.skip
			} else {
				require.Empty(t, r.skip)
			}
			require.Contains(t, msg, "apt-get install redis-server")
		})
	}
}
