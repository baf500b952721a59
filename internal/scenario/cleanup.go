package scenario

import (
	"context"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/runkeys"
)

// cleanupTimeout bounds the deletion, which runs after the run's context
// may have ended (an interrupted demo cleans up too).
const cleanupTimeout = 5 * time.Second

// removeKeys deletes every key of the run. They all expire on their own;
// deleting them leaves a server the demo ran against as it found it, an
// hour sooner.
func removeKeys(addr, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	c, err := conn.Dial(ctx, addr)
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = runkeys.Remove(ctx, c, prefix)
}
