package observe

import (
	"context"
	"log/slog"
)

// Log is an Observer that logs, to logger, what happens where no caller
// sees an error: a lease lost while held (any Reason but Released and
// Closed, among them one that ran out before its holder unlocked it), a watchdog's failed extension, a release in the
// background that failed, a subscribe connection lost, reconnected or
// failing its health check, a release that passed over dead waiters, and
// events dropped from a full queue. Every
// record has the message "baton: " and the event's kind, and the
// attributes key, token, op, error and duration where the event has
// them. A lost lease, a failed release and dropped events are warnings;
// the rest is at info level. Calls that return their error to a caller
// are not logged: the caller has the error. lock.WithLogger uses it.
func Log(logger *slog.Logger) Observer { return logObserver{logger} }

type logObserver struct{ logger *slog.Logger }

func (o logObserver) Observe(e Event) {
	level := slog.LevelInfo
	switch e.Kind {
	case LeaseEnded:
		if e.Reason == Released || e.Reason == Closed {
			return
		}
		level = slog.LevelWarn
	case ReleaseFailed, Dropped:
		level = slog.LevelWarn
	case ExtendFailed, ConnectionLost, Reconnected, HealthCheckFailed, WaitersSkipped:
	default:
		return
	}
	ctx := context.Background()
	if !o.logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	if e.Key != "" {
		attrs = append(attrs, slog.String("key", e.Key))
	}
	if e.Token != 0 {
		attrs = append(attrs, slog.Uint64("token", e.Token))
	}
	if e.Op != 0 {
		attrs = append(attrs, slog.String("op", e.Op.String()))
	}
	if e.Reason != 0 {
		attrs = append(attrs, slog.String("reason", e.Reason.String()))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	if e.Duration != 0 {
		attrs = append(attrs, slog.Duration("duration", e.Duration))
	}
	if e.Kind == Dropped || e.Kind == WaitersSkipped {
		attrs = append(attrs, slog.Int("count", e.Count))
	}
	o.logger.LogAttrs(ctx, level, "baton: "+e.Kind.String(), attrs...)
}
