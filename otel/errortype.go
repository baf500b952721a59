package batonotel

import (
	"context"
	"errors"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// errorType classifies err for the attribute error.type and a span's
// status: one of a few words, by errors.Is and errors.As alone, never by
// the error's text, so that a series is made per kind of failure and not
// per message. An outcome left unknown is "uncertain" whatever its cause,
// since that is what an operator must know of it first.
func errorType(err error) string {
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, lock.ErrNotHeld):
		return "not_held"
	case errors.Is(err, lock.ErrClosed): // manager.ErrClosed is the same value
		return "closed"
	case errors.Is(err, lock.ErrInvalid): // and manager.ErrInvalid
		return "invalid"
	case errors.Is(err, manager.ErrUndecodable):
		return "undecodable"
	case errors.As(err, new(*conn.UncertainError)):
		return "uncertain"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "other"
}
