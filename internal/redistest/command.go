package redistest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/batonlock/baton/resp"
)

// doTimeout bounds one Do, dial to reply, so that a server that stops
// answering fails the test instead of hanging it until go test's timeout.
const doTimeout = 10 * time.Second

// Do sends one command to the server on a fresh plain TCP connection and
// returns the reply; an error reply is returned as a Value, not a failure.
// If the config set requirepass, the connection authenticates first. Do is
// for setting up and inspecting a server from a test (INFO, CONFIG GET,
// CLIENT KILL), deliberately apart from the client code under test. It
// calls t.Fatal if the command cannot be sent or its reply read, so it
// must run on the test's goroutine.
func (s *Server) Do(t testing.TB, args ...string) resp.Value {
	t.Helper()
	replies, err := exchange(s.Addr, s.password, doTimeout, args)
	if err != nil {
		t.Fatalf("redistest: %q to %s: %v", args, s.Addr, err)
	}
	return replies[0]
}

// exchange dials addr, sends AUTH pass (unless pass is "") and the commands
// in one write, and returns the commands' replies in order. A refused AUTH
// is an error wrapping the server's *resp.Error. timeout bounds the whole
// exchange.
func exchange(addr, pass string, timeout time.Duration, cmds ...[]string) ([]resp.Value, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	var buf []byte
	if pass != "" {
		buf = resp.AppendCommand(buf, "AUTH", pass)
	}
	for _, args := range cmds {
		buf = resp.AppendCommand(buf, args...)
	}
	if _, err := c.Write(buf); err != nil {
		return nil, err
	}
	r := resp.NewReader(c)
	if pass != "" {
		v, err := r.Read()
		if err != nil {
			return nil, err
		}
		if err := v.Err(); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	replies := make([]resp.Value, len(cmds))
	for i := range replies {
		if replies[i], err = r.Read(); err != nil {
			return nil, err
		}
	}
	return replies, nil
}
