package conn

import "net"

// Direction tells a tap whether bytes were written or read.
type Direction int

const (
	Write Direction = iota + 1
	Read
)

// tappedConn reports each Write and Read on the socket to the tap.
type tappedConn struct {
	net.Conn
	tap func(Direction, []byte)
}

func (t *tappedConn) Write(p []byte) (int, error) {
	n, err := t.Conn.Write(p)
	if n > 0 {
		t.tap(Write, p[:n])
	}
	return n, err
}

func (t *tappedConn) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if n > 0 {
		t.tap(Read, p[:n])
	}
	return n, err
}
