package redisproc_test

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redisproc"
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
	s := start(t)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, s.Addr)
	require.Empty(t, s.UnixSocket)
	require.Empty(t, s.TLSAddr)
	require.Nil(t, s.TLSConfig())
	require.Equal(t, "PONG", do(t, s, "PING").Str)
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
			s := start(t, redisproc.WithConfig(tt.line))
			v := do(t, s, "CONFIG", "GET", tt.param)
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
			s := start(t, redisproc.WithConfig(tt.lines...))
			require.Equal(t, "PONG", do(t, s, "PING").Str, "Do authenticates")
			v := do(t, s, "CONFIG", "GET", "requirepass")
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
	s := start(t, redisproc.WithUnixSocket(), redisproc.WithTLS())
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
	s := start(t, redisproc.WithUnixSocket(), redisproc.WithTLS())
	addr, sock, tlsAddr := s.Addr, s.UnixSocket, s.TLSAddr

	old, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer old.Close()
	ping(t, old)

	require.NoError(t, s.Restart())
	require.Equal(t, addr, s.Addr)
	require.Equal(t, sock, s.UnixSocket)
	require.Equal(t, tlsAddr, s.TLSAddr)

	// The old connection died with the old process.
	_, err = resp.NewReader(old).Read()
	require.Error(t, err)

	require.Equal(t, "PONG", do(t, s, "PING").Str)
	dialPing(t, "unix", s.UnixSocket)
	dialPingTLS(t, s.TLSAddr, s.TLSConfig())
}

// Stop, however often and from however many goroutines, leaves nothing
// behind, and the server cannot be brought back.
func TestStopRemovesEverything(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := start(t, redisproc.WithUnixSocket())
	require.Equal(t, "PONG", do(t, s, "PING").Str)

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(s.Stop)
	}
	wg.Wait()
	s.Stop()
	_, err := net.Dial("tcp", s.Addr)
	require.Error(t, err, "nothing listens after Stop")
	requireEmpty(t, tmp)

	require.ErrorIs(t, s.Restart(), redisproc.ErrStopped)
	require.ErrorIs(t, s.Pause(time.Hour), redisproc.ErrStopped)
	_, err = s.Do("PING")
	require.Error(t, err)
}

// A start that fails says why, quoting the log, and leaves nothing behind.
func TestFailedStartRemovesEverything(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s, err := redisproc.Start(redisproc.WithConfig("no-such-directive 1"))
	redistest.SkipIfNoBinary(t, err)
	require.Nil(t, s)
	require.ErrorContains(t, err, "no-such-directive")
	require.ErrorContains(t, err, "Bad directive")
	requireEmpty(t, tmp)
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
			s := start(t)
			s.Halt()
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

			err = s.Restart()
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, "Address already in use", "quotes the log")
		})
	}
}

func TestMissingBinary(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("PATH", t.TempDir())
	s, err := redisproc.Start()
	require.Nil(t, s)
	require.ErrorIs(t, err, redisproc.ErrNoBinary)
	requireEmpty(t, tmp)
}

// TestWithBinary runs the binary it names, found by path or in PATH, and
// fails with ErrNoBinary, leaving nothing behind, for one that is not
// there.
func TestWithBinary(t *testing.T) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server in PATH")
	}
	for _, bin := range []string{path, "redis-server"} {
		s, err := redisproc.Start(redisproc.WithBinary(bin))
		require.NoError(t, err, bin)
		_, err = s.Do("PING")
		require.NoError(t, err, bin)
		s.Stop()
	}

	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s, err := redisproc.Start(redisproc.WithBinary(filepath.Join(t.TempDir(), "valkey-server")))
	require.Nil(t, s)
	require.ErrorIs(t, err, redisproc.ErrNoBinary)
	requireEmpty(t, tmp)
}

// TestStartRemovesTheDirectoriesOfDeadProcesses plants the directory a
// killed test process would leave behind, and one of a live process:
// Start removes the first and keeps the second.
func TestStartRemovesTheDirectoriesOfDeadProcesses(t *testing.T) {
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	orphan, err := os.MkdirTemp("", "redisproc-"+strconv.Itoa(dead.Process.Pid)+"-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(orphan) })
	live, err := os.MkdirTemp("", "redisproc-1-") // init never goes away
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(live) })

	s, err := redisproc.Start()
	redistest.SkipIfNoBinary(t, err)
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	require.NoDirExists(t, orphan)
	require.DirExists(t, live)
}
