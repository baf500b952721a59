package redistest_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// dialFake connects a raw client to f, closed at the end of the test.
func dialFake(t *testing.T, f *redistest.Fake) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.Addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	return c
}

func send(t *testing.T, c net.Conn, args ...string) {
	t.Helper()
	_, err := c.Write(resp.AppendCommand(nil, args...))
	require.NoError(t, err)
}

func TestFakeExpectAndSend(t *testing.T) {
	f := redistest.NewFake(t, func(s *redistest.Session) {
		if s.Expect("PING") {
			_ = s.Send("+PONG\r\n")
		}
	})
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, f.Addr)
	require.Zero(t, f.Accepted())

	for range 2 {
		c := dialFake(t, f)
		send(t, c, "PING")
		v, err := resp.NewReader(c).Read()
		require.NoError(t, err)
		require.Equal(t, resp.Value{Type: resp.SimpleString, Str: "PONG"}, v)
	}
	require.Equal(t, 2, f.Accepted())
}

func TestFakeSendsRawBytes(t *testing.T) {
	const garbage = "+OK\r\n$5\r\nhel" // a frame, then half of one
	f := redistest.NewFake(t, func(s *redistest.Session) {
		_ = s.Send(garbage)
		s.Cut()
	})
	got, err := io.ReadAll(dialFake(t, f))
	require.NoError(t, err)
	require.Equal(t, garbage, string(got))
}

func TestFakeCut(t *testing.T) {
	f := redistest.NewFake(t, func(s *redistest.Session) {
		if s.Expect("GET", "k") {
			s.Cut()
		}
	})
	c := dialFake(t, f)
	send(t, c, "GET", "k")
	_, err := resp.NewReader(c).Read()
	require.ErrorIs(t, err, io.EOF, "the client sees the server hang up")
}

func TestFakeReadCommand(t *testing.T) {
	tests := []struct {
		name  string
		write string
		want  []string
		ok    bool
	}{
		{"command", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", []string{"GET", "k"}, true},
		{"binary argument", "*2\r\n$4\r\nECHO\r\n$3\r\na\r\x00\r\n", []string{"ECHO", "a\r\x00"}, true},
		{"not an array", "+PING\r\n", nil, false},
		{"empty array", "*0\r\n", nil, false},
		{"integer argument", "*2\r\n$4\r\nECHO\r\n:1\r\n", nil, false},
		{"not RESP", "PING\r\n", nil, false},
		{"hang-up", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type result struct {
				args []string
				err  error
			}
			got := make(chan result, 1)
			f := redistest.NewFake(t, func(s *redistest.Session) {
				args, err := s.ReadCommand()
				got <- result{args, err}
			})
			c := dialFake(t, f)
			_, err := io.WriteString(c, tt.write)
			require.NoError(t, err)
			require.NoError(t, c.(*net.TCPConn).CloseWrite())
			r := <-got
			if tt.ok {
				require.NoError(t, r.err)
				require.Equal(t, tt.want, r.args)
			} else {
				require.Error(t, r.err)
			}
		})
	}
}

func TestFakeExpectReports(t *testing.T) {
	tests := []struct {
		name   string
		client func(t *testing.T, c net.Conn)
		want   []string // in the one error reported
	}{
		{"other command", func(t *testing.T, c net.Conn) { send(t, c, "GET", "k") }, []string{`["PING"]`, `["GET" "k"]`}},
		{"hang-up", func(_ *testing.T, c net.Conn) { c.Close() }, []string{`["PING"]`, "EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f *redistest.Fake
			ok := make(chan bool, 1)
			r := record(t, func(r *recorder) {
				f = redistest.NewFake(r, func(s *redistest.Session) { ok <- s.Expect("PING") })
			})
			defer r.runCleanups()
			tt.client(t, dialFake(t, f))
			require.False(t, <-ok)
			errs := r.Errors()
			require.Len(t, errs, 1)
			for _, w := range tt.want {
				require.Contains(t, errs[0], w)
			}
		})
	}
}

func TestFakeHandlerPanicFailsTest(t *testing.T) {
	var f *redistest.Fake
	r := record(t, func(r *recorder) {
		f = redistest.NewFake(r, func(*redistest.Session) { panic("boom") })
	})
	c := dialFake(t, f)
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the connection is closed when the handler ends")
	r.runCleanups()
	require.Len(t, r.Errors(), 1)
	require.Contains(t, r.Errors()[0], "boom")
}

// The fake's cleanup must end handlers that are blocked on the connection,
// and promptly, or every test with a stalled fake would hang.
func TestFakeCleanupEndsBlockedHandlers(t *testing.T) {
	tests := []struct {
		name    string
		write   string // what the client sends first
		handler func(s *redistest.Session)
	}{
		{"Stall", "", func(s *redistest.Session) { s.Stall() }},
		{"Stall after a command", "*1\r\n$4\r\nPING\r\n", func(s *redistest.Session) { s.Stall() }},
		{"ReadCommand", "", func(s *redistest.Session) { _, _ = s.ReadCommand() }},
		{"ReadCommand of half a command", "*2\r\n$3\r\nGET\r\n", func(s *redistest.Session) { _, _ = s.ReadCommand() }},
		{"Expect", "", func(s *redistest.Session) { s.Expect("PING") }},
		{"Pause", "", func(s *redistest.Session) { s.Pause(time.Hour) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entered := make(chan struct{})
			var client net.Conn
			start := time.Now()
			passed := t.Run("inner", func(t *testing.T) {
				f := redistest.NewFake(t, func(s *redistest.Session) {
					close(entered)
					tt.handler(s)
				})
				// A raw dial, not dialFake: the client must outlive the
				// inner test, so that only the fake's cleanup can end
				// the handler.
				var err error
				client, err = net.Dial("tcp", f.Addr)
				require.NoError(t, err)
				_, err = io.WriteString(client, tt.write)
				require.NoError(t, err)
				<-entered
			})
			elapsed := time.Since(start)
			if client != nil {
				client.Close()
			}
			require.True(t, passed, "a handler ended by cleanup reports nothing")
			require.Less(t, elapsed, time.Second)
		})
	}
}

func TestFakeClose(t *testing.T) {
	f := redistest.NewFake(t, func(s *redistest.Session) { s.Stall() })
	c := dialFake(t, f)
	require.Eventually(t, func() bool { return f.Accepted() == 1 }, 5*time.Second, time.Millisecond)

	f.Close()
	f.Close()
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the fake hung up")
	_, err = net.Dial("tcp", f.Addr)
	require.Error(t, err, "nothing listens after Close")
}
