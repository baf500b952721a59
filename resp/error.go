package resp

import (
	"errors"
	"fmt"
	"strings"
)

// ErrProtocol is matched by every error caused by bytes that are not valid
// RESP. The connection that produced them is out of step and must be closed.
var ErrProtocol = errors.New("resp: protocol error")

// ErrLimit is matched by the errors of replies over a Reader's limits (bulk
// length, aggregate length, nesting depth, reply memory), which are
// [*LimitError]. Nothing over a limit is allocated, and the Reader reads
// past the rest of the frame, so unlike every other error of Read it does
// not leave the stream unusable.
var ErrLimit = errors.New("resp: frame over limit")

// LimitError is the error of a frame over one of a Reader's limits. Read
// returns it only once it has read past the whole frame, in bounded memory
// and keeping none of it, so the stream is still in step: the error is not
// sticky, and the next Read returns the next frame. If the stream fails
// while the frame is being read past (it ends, or its bytes are not valid
// RESP), Read returns that failure instead, and it is sticky. LimitError
// matches ErrLimit.
type LimitError struct {
	// Type is the type of the frame that was dropped, after any
	// attributes: a Push frame over a limit is a push frame, not a reply.
	Type Type

	msg string // which limit, and by how much
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s (the %s frame was read past and dropped)", ErrLimit, e.msg, e.Type)
}

// Unwrap makes errors.Is(err, ErrLimit) hold.
func (e *LimitError) Unwrap() error { return ErrLimit }

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

// Error codes that Redis sends and that callers commonly branch on.
const (
	Err         Prefix = "ERR"
	NoScript    Prefix = "NOSCRIPT"
	WrongType   Prefix = "WRONGTYPE"
	Moved       Prefix = "MOVED"
	Ask         Prefix = "ASK"
	TryAgain    Prefix = "TRYAGAIN"
	ClusterDown Prefix = "CLUSTERDOWN"
	CrossSlot   Prefix = "CROSSSLOT"
	NoPerm      Prefix = "NOPERM"
	NoAuth      Prefix = "NOAUTH"
	WrongPass   Prefix = "WRONGPASS"
	NoProto     Prefix = "NOPROTO"
	Loading     Prefix = "LOADING"
	Busy        Prefix = "BUSY"
	ReadOnly    Prefix = "READONLY"
	MasterDown  Prefix = "MASTERDOWN"
	OOM         Prefix = "OOM"
	ExecAbort   Prefix = "EXECABORT"
)
