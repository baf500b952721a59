package conn

import (
	"context"
	"time"

	"github.com/batonlock/baton/internal/replydeadline"
)

// WithReplyDeadline returns a copy of ctx under which a call must have its
// replies by t. A call that would be sent at or after t fails, unsent,
// with an error matching context.DeadlineExceeded. One still waiting for a
// reply at t breaks its connection, as [WithReadTimeout] does: the socket
// read gives up, and every call in flight on the connection fails with an
// [*UncertainError]. The same deadline bounds the write of the call's
// commands, and a Client's dial or redial made for it.
//
// Unlike a context deadline, a reply deadline leaves Done nil when ctx's is
// nil, so the bound costs no timer, and the call no watch on its context
// (see the package doc). It suits a caller that needs an upper bound on a
// call rather than the freedom to walk away from it: a reply cut off at the
// deadline costs the connection.
func WithReplyDeadline(ctx context.Context, t time.Time) context.Context {
	return replydeadline.With(ctx, t)
}

// replyBy is the reply deadline ctx carries, or the zero time.
func replyBy(ctx context.Context) time.Time { return replydeadline.Of(ctx) }

// earlier returns the earlier of two deadlines, where the zero time is none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// replyByLocked is the earliest reply deadline of the calls in flight, or
// the zero time.
func (c *Conn) replyByLocked() time.Time {
	var by time.Time
	if c.withReplyBy == 0 {
		return by
	}
	for _, cl := range c.pending.items[c.pending.head:] {
		by = earlier(by, cl.replyBy)
	}
	return by
}

// readDeadlineLocked is the deadline for the next socket read: none while
// no reply is due, else the read timeout from when the read began (see
// readFrom), or the earliest reply deadline if sooner.
func (c *Conn) readDeadlineLocked() time.Time {
	if c.pending.len() == 0 {
		return time.Time{}
	}
	var d time.Time
	if c.opts.readTimeout > 0 {
		d = c.readFrom.Add(c.opts.readTimeout)
	}
	return earlier(d, c.replyByLocked())
}

// setReadDeadlineLocked gives the socket the read deadline d, unless it has
// it already, or an interrupt holds it in the past. A read blocked
// meanwhile sees the new deadline.
func (c *Conn) setReadDeadlineLocked(d time.Time) error {
	if d.Equal(c.readDeadline) || c.interrupted {
		return nil
	}
	c.readDeadline = d
	return c.nc.SetReadDeadline(d)
}

// writeDeadlineLocked is the deadline for a write: the write timeout from
// now, or the earliest reply deadline if sooner.
func (c *Conn) writeDeadlineLocked() time.Time {
	var d time.Time
	if c.opts.writeTimeout > 0 {
		d = time.Now().Add(c.opts.writeTimeout)
	}
	return earlier(d, c.replyByLocked())
}
