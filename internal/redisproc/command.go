package redisproc

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/batonlock/baton/resp"
)

// doTimeout bounds one Do, dial to reply, so that a server that stops
// answering fails the call instead of hanging it.
const doTimeout = 10 * time.Second

// Do sends one command to the server on a fresh plain TCP connection and
// returns the reply; an error reply is returned as a Value, not as an
// error, which says only that the command could not be sent or its reply
// read. If the config set requirepass, the connection authenticates first.
// Do is for setting up and inspecting a server (INFO, CONFIG GET, CLIENT
// KILL), deliberately apart from any client code under test.
func (s *Server) Do(args ...string) (resp.Value, error) {
	return Do(s.Addr, s.password, args...)
}

// Do is Server.Do for any server at addr (host:port), one this package did
// not start included: a container, say. pass, unless "", is sent with AUTH
// first.
func Do(addr, pass string, args ...string) (resp.Value, error) {
	replies, err := exchange(addr, pass, doTimeout, args)
	if err != nil {
		return resp.Value{}, fmt.Errorf("redisproc: %q to %s: %w", args, addr, err)
	}
	return replies[0], nil
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

// pingPoll is WaitPing's pause between attempts.
const pingPoll = 50 * time.Millisecond

// WaitPing dials the server at addr until it answers PING, or ctx ends:
// for a server that is starting, a container's say. It returns the last
// attempt's error once ctx has ended.
func WaitPing(ctx context.Context, addr string) error {
	for {
		timeout := doTimeout
		if deadline, ok := ctx.Deadline(); ok {
			timeout = min(timeout, time.Until(deadline))
		}
		replies, err := exchange(addr, "", timeout, []string{"PING"})
		if err == nil {
			err = replies[0].Err()
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisproc: no answer to PING from %s: %w", addr, err)
		case <-time.After(pingPoll):
		}
	}
}
