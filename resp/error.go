package resp

import (
	"errors"
	"fmt"
	"strings"
)

// ErrProtocol is matched by every error caused by bytes that are not valid
// RESP. The connection that produced them is out of step and must be closed.
var ErrProtocol = errors.New("resp: protocol error")

// ErrLimit is matched by the error of a reply over one of a Reader's limits
// (bulk length, aggregate length, nesting depth, reply memory). Nothing
// over a limit is allocated, and the Reader reads past the rest of the
// frame, so unlike every other error of Read it does not leave the stream
// unusable; see [Reader.Read].
var ErrLimit = errors.New("resp: frame over limit")

// limitError is the error of a frame over one of a Reader's limits, which
// Read returns once it has read past the frame (see skipRest).
type limitError struct {
	// typ is the type of the frame that was dropped, after any
	// attributes: a Push frame over a limit is a push frame, not a reply.
	// Set once known: when the limit was met in the frame's value, or, for
	// one met in its attributes, by skipRest.
	typ Type

	msg string // which limit, and by how much
}

func (e *limitError) Error() string {
	return fmt.Sprintf("%v: %s (the %s frame was read past and dropped)", ErrLimit, e.msg, e.typ)
}

// Unwrap makes errors.Is(err, ErrLimit) hold.
func (e *limitError) Unwrap() error { return ErrLimit }

// Error is an error reply from the server.
//
// Prefix is the reply's first word ("ERR", "NOSCRIPT", "MOVED", ...), which
// Redis uses as an error code. Test it with errors.Is and a [Prefix]:
//
//	if errors.Is(err, resp.NoScript) { ... }
type Error struct {
	Prefix  string
	Message string // the whole reply as sent, prefix included
}

func newError(msg string) *Error {
	prefix, _, _ := strings.Cut(msg, " ")
	return &Error{Prefix: prefix, Message: msg}
}

func (e *Error) Error() string { return "server error: " + e.Message }

// Is reports whether target is the Prefix of e, so errors.Is matches server
// errors by their code and never by their text.
func (e *Error) Is(target error) bool {
	p, ok := target.(Prefix)
	return ok && string(p) == e.Prefix
}

// Prefix is the error code that starts a server error reply. It is an error
// only so that it can be the target of errors.Is.
type Prefix string

func (p Prefix) Error() string { return string(p) + " error reply" }

// Error codes that Redis sends and that callers commonly branch on. Any
// other code is matched by its own Prefix: errors.Is(err,
// resp.Prefix("TRYAGAIN")).
const (
	// NoScript: EVALSHA of a script the server does not have; send EVAL.
	NoScript Prefix = "NOSCRIPT"
	// WrongType: the key holds another kind of value.
	WrongType Prefix = "WRONGTYPE"
	// Moved: Redis Cluster, the key's slot is served by another node.
	Moved Prefix = "MOVED"
	// Ask: Redis Cluster, the key's slot is being migrated; ask the
	// other node once.
	Ask Prefix = "ASK"
	// ReadOnly: a write sent to a replica, often a former primary after a
	// failover.
	ReadOnly Prefix = "READONLY"
	// Loading: the server is still loading its data set; the command did
	// not run.
	Loading Prefix = "LOADING"
	// Busy: a script or function is running past its time limit.
	Busy Prefix = "BUSY"
	// OOM: the server is at maxmemory and refuses writes.
	OOM Prefix = "OOM"
	// NoPerm: the ACL user may not run the command or touch the key.
	NoPerm Prefix = "NOPERM"
	// NoAuth: the server wants authentication first.
	NoAuth Prefix = "NOAUTH"
	// WrongPass: the username or password is wrong.
	WrongPass Prefix = "WRONGPASS"
)
