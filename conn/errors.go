package conn

import (
	"errors"
	"fmt"
)

// ErrClosed is returned for calls on a Conn or Client after Close.
var ErrClosed = errors.New("conn: connection closed")

// ErrBroken is matched by the errors of a connection that failed: an I/O
// error, a protocol error in the server's replies, or a reply nobody asked
// for (a reply over a reader limit is none of these). Nothing more can be
// sent on it; a Client dials a new one.
var ErrBroken = errors.New("conn: connection broken")

// UncertainError is the error of a call that was in flight when its
// connection failed or was closed: its command may or may not have run on
// the server. Cause says why the connection failed and matches ErrBroken or
// ErrClosed.
type UncertainError struct {
	Cause error
}

func (e *UncertainError) Error() string {
	return fmt.Sprintf("command may or may not have run: %v", e.Cause)
}

func (e *UncertainError) Unwrap() error { return e.Cause }

// errEmptyCommand is returned for a command with no arguments: a mistake
// of the caller's, which no caller branches on.
var errEmptyCommand = errors.New("conn: empty command")
