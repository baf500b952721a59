// Package replydeadline carries a reply deadline on a context: the moment
// by which a call on a connection of package conn must have its replies.
// conn.WithReplyDeadline puts one on a context, and conn enforces it; the
// layers above conn that wait between calls (internal/cluster's pause
// before a retry) read it with [Of], to end their waits by the same
// moment.
//
// Unlike a context deadline, a reply deadline leaves Done nil when the
// parent's is nil: it costs no timer, and a call under it no watch on its
// context.
package replydeadline

import (
	"context"
	"time"
)

// With returns a copy of ctx that carries the reply deadline t.
func With(ctx context.Context, t time.Time) context.Context {
	return &replyDeadlineCtx{Context: ctx, by: t}
}

// Bound returns ctx with a context deadline at its reply deadline, if it
// carries one, for the waits that only a context ends (a dial, a pause
// between attempts); the parent's deadline, if earlier, stays the bound.
func Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if by := Of(ctx); !by.IsZero() {
		return context.WithDeadline(ctx, by)
	}
	return ctx, func() {}
}

// Of returns the reply deadline that With put on ctx, or the zero time if
// there is none.
func Of(ctx context.Context) time.Time {
	if r, ok := ctx.Value(key{}).(*replyDeadlineCtx); ok {
		return r.by
	}
	return time.Time{}
}

type replyDeadlineCtx struct {
	context.Context
	by time.Time
}

type key struct{}

func (r *replyDeadlineCtx) Value(k any) any {
	if k == (key{}) {
		return r
	}
	return r.Context.Value(k)
}
