package redistest

import (
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/batonlock/baton/resp"
)

// Session is one connection accepted by a Fake, as its handler sees it.
// Its methods are for the handler's goroutine, except Cut, which any
// goroutine may call.
type Session struct {
	fake *Fake
	conn net.Conn
	r    *resp.Reader
}

func newSession(f *Fake, c net.Conn) *Session {
	return &Session{fake: f, conn: c, r: resp.NewReader(c)}
}

// ReadCommand reads one command, a RESP array of bulk strings, and returns
// its arguments. It returns an error when the client hangs up, the fake is
// closed, or the bytes are not a command; the session is then unusable.
func (s *Session) ReadCommand() ([]string, error) {
	v, err := s.r.Read()
	if err != nil {
		return nil, err
	}
	if v.Type != resp.Array || len(v.Elems) == 0 {
		return nil, fmt.Errorf("%w: command is %s, not an array of bulk strings", resp.ErrProtocol, v.Type)
	}
	args := make([]string, len(v.Elems))
	for i, e := range v.Elems {
		if e.Type != resp.Bulk {
			return nil, fmt.Errorf("%w: command argument %d is %s, not a bulk string", resp.ErrProtocol, i, e.Type)
		}
		args[i] = e.Str
	}
	return args, nil
}

// Expect reads one command and reports whether it is exactly args. On a
// different command or a read error it fails the test with t.Errorf, which
// unlike t.Fatal is allowed off the test's goroutine, and returns false; a
// handler should then return. A read cut short by the fake's own closing
// is not reported: the test is over by then, and said what it had to.
func (s *Session) Expect(args ...string) bool {
	got, err := s.ReadCommand()
	switch {
	case err != nil && s.fake.isClosed():
		return false
	case err != nil:
		s.fake.t.Errorf("redistest: fake expected %q, read failed: %v", args, err)
		return false
	case !slices.Equal(got, args):
		s.fake.t.Errorf("redistest: fake expected %q, got %q", args, got)
		return false
	}
	return true
}

// Send writes raw to the client exactly as given, with no framing added:
// "+PONG\r\n", half a frame, or garbage.
func (s *Session) Send(raw string) error {
	_, err := io.WriteString(s.conn, raw)
	return err
}

// Stall blocks, answering nothing, until the client hangs up or the fake is
// closed. Whatever the client sends meanwhile is read and dropped, so that
// a client writing a lot is not held up by a full socket buffer instead.
func (s *Session) Stall() {
	_, _ = io.Copy(io.Discard, s.conn)
}

// Pause sleeps for d, or until the fake is closed if that comes first.
func (s *Session) Pause(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.fake.closed:
	}
}

// Cut closes the connection now, as a crashed server or a dropped link
// would. Later reads and writes on the session fail.
func (s *Session) Cut() {
	_ = s.conn.Close()
}

// Reset closes the connection with a reset (SO_LINGER 0) rather than an
// orderly end of stream, as a proxy that gives up on a connection may.
func (s *Session) Reset() {
	if tc, ok := s.conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = s.conn.Close()
}
