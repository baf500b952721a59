package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
)

// pingCommand and pong are a PING and its reply on the wire; a slice
// made once, so that the floor allocates nothing per round trip.
var pingCommand = []byte("*1\r\n$4\r\nPING\r\n")

const pong = "+PONG\r\n"

// floorLocker is not a lock: it is the least a Lock+Unlock can cost, two
// round trips to the server, each a PING written to a bare socket and its
// reply read by the caller itself, with no client in between. It is not
// safe for concurrent use: one connection, one exchange at a time.
type floorLocker struct {
	c net.Conn
	r *bufio.Reader
}

func openFloor(ctx context.Context, addr string) (locker, error) {
	return dialFloor(ctx, addr)
}

func dialFloor(ctx context.Context, addr string) (*floorLocker, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	return &floorLocker{c: c, r: bufio.NewReader(c)}, nil
}

func (f *floorLocker) Lock(ctx context.Context, _ string) (func(context.Context) error, error) {
	if err := f.ping(ctx); err != nil {
		return nil, err
	}
	return f.ping, nil
}

// ping is one round trip. A deadline on ctx bounds it; cancellation
// without one does not interrupt it.
func (f *floorLocker) ping(ctx context.Context) error {
	dl, _ := ctx.Deadline() // the zero time, no deadline, when there is none
	if err := f.c.SetDeadline(dl); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if _, err := f.c.Write(pingCommand); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	line, err := f.r.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if string(line) != pong {
		return fmt.Errorf("floor: PING answered %q", line)
	}
	return nil
}

func (f *floorLocker) Close() error { return f.c.Close() }
