package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// trackGrace is how long awaitTracking waits for the server to track one
// more key.
const trackGrace = 2 * time.Second

// trackedKeys returns how many keys the server tracks for client-side
// caching, all clients together (INFO stats, tracking_total_keys).
func trackedKeys(ctx context.Context, admin *redis.Client) (int64, error) {
	info, err := admin.Info(ctx, "stats").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO stats: %w", err)
	}
	v, ok := infoFields(info)["tracking_total_keys"]
	if !ok {
		return 0, fmt.Errorf("INFO stats: no tracking_total_keys: the server has no client-side caching (Redis 6 and later)")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO stats: tracking_total_keys: %w", err)
	}
	return n, nil
}

// awaitTracking returns once the server tracks more keys than before: a
// read of a key by a client that asked for tracking has reached the
// server, and the server will tell that client when the key changes.
//
// It waits for a count to grow, not for one above zero, since keys stay
// tracked after the scenarios are done with them: a read that found a
// key gone tracks it all the same (baton's Subscriber makes one when it
// hears of a loss), and an entry leaves the table only when its key is
// written again or its client stops tracking. On a server given with
// --addr, another client's reads and writes move the count too: the wait
// can end early, or run out.
func awaitTracking(ctx context.Context, admin *redis.Client, before int64) error {
	deadline := time.Now().Add(trackGrace)
	for {
		// No pause between polls: each is a round trip, and the watch
		// is in place one round trip after it was asked for.
		n, err := trackedKeys(ctx, admin)
		if err != nil {
			return err
		}
		if n > before {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server tracked no more keys %s after the watch was asked for (%d before, %d now)", trackGrace, before, n)
		}
	}
}
