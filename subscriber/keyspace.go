package subscriber

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/keyevents"
	"github.com/batonlock/baton/resp"
)

// requiredEvents are the notify-keyspace-events flags the lock needs:
// keyspace channels (K), generic commands such as DEL (g), expiry (x) and
// eviction (e).
const requiredEvents = "Kgxe"

// ErrKeyspaceEvents is matched when the server does not publish the
// keyspace events the lock needs and they could not be turned on.
var ErrKeyspaceEvents = errors.New("subscriber: keyspace events not enabled")

// ensureKeyspaceEvents adds the required flags to notify-keyspace-events,
// keeping the ones already set.
func ensureKeyspaceEvents(ctx context.Context, c *conn.Conn) error {
	v, err := c.Do(ctx, "CONFIG", "GET", "notify-keyspace-events")
	if err != nil {
		return refused(err)
	}
	current, err := configValue(v)
	if err != nil {
		return err
	}
	missing := keyevents.Missing(current, requiredEvents)
	if missing == "" {
		return nil
	}
	if _, err := c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", current+missing); err != nil {
		return refused(err)
	}
	return nil
}

func refused(err error) error {
	var serverErr *resp.Error
	if !errors.As(err, &serverErr) {
		return fmt.Errorf("subscriber: reading notify-keyspace-events: %w", err)
	}
	return fmt.Errorf("%w: the server refused CONFIG (%w); set notify-keyspace-events to include %q on the server, then pass WithKeyspaceEventsConfigured",
		ErrKeyspaceEvents, err, requiredEvents)
}

// configValue reads the value out of a CONFIG GET reply, which is a
// two-element array in RESP2 and a map in RESP3.
func configValue(v resp.Value) (string, error) {
	if len(v.Elems) != 2 {
		return "", fmt.Errorf("subscriber: unexpected CONFIG GET reply %s", v)
	}
	return v.Elems[1].Str, nil
}
