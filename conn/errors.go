package conn

import (
	"errors"
	"fmt"
	"net"
)

// ErrClosed is returned for calls on a Conn or Client after Close.
var ErrClosed = errors.New("conn: connection closed")

// ErrBroken is matched by the errors of a connection that failed: an I/O
// error, a protocol error in the server's replies, or a reply nobody asked
// for (a reply over a reader limit is none of these). Nothing more can be
// sent on it; a Client dials a new one.
var ErrBroken = errors.New("conn: connection broken")

// ErrInvalid is matched by the error of an address that cannot be read
// (a malformed URL, an unknown scheme or parameter, a bad database
// number): nothing was dialled. Such an error quotes the address with its
// passwords hidden.
var ErrInvalid = errors.New("conn: invalid address")

// invalidAddress is the error of an address that cannot be read: it
// matches ErrInvalid, and wraps why.
type invalidAddress struct {
	quoted string // the address, with its passwords hidden
	why    error
}

func (e *invalidAddress) Error() string {
	return fmt.Sprintf("conn: address %q: %v", e.quoted, e.why)
}

func (e *invalidAddress) Is(target error) bool { return target == ErrInvalid }
func (e *invalidAddress) Unwrap() error        { return e.why }

// DialError is the error of a dial that failed: connecting, the TLS
// handshake, or the handshake's commands (AUTH, HELLO, SELECT, CLIENT
// SETNAME). Nothing of a caller's was sent. Addr is the address dialled,
// with its passwords hidden; Err is why, and errors.Is and errors.As see
// through it: a refused connection matches syscall.ECONNREFUSED and is a
// *net.OpError, a dial timeout matches context.DeadlineExceeded, a
// refused password is a *resp.Error (whose text is withheld where the
// command carried the password: a server may repeat it). Every dial that
// fails returns one, a Client's too; through sentinels, Addr is the
// sentinel address and Err gives each sentinel's answer, with a DialError
// of its own for a node a sentinel named.
type DialError struct {
	Addr string
	Err  error
}

func (e *DialError) Error() string {
	why := e.Err
	var op *net.OpError
	if errors.As(why, &op) && op.Op == "dial" && op.Err != nil {
		// "dial tcp host:port: connect: connection refused" would say
		// the dial and the address twice.
		why = op.Err
	}
	return fmt.Sprintf("conn: dial %s: %v", e.Addr, why)
}

func (e *DialError) Unwrap() error { return e.Err }

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
