package main

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// newGoRedis returns a go-redis client of the server at addr (host:port),
// after a PING, so that a wrong address fails at open rather than in the
// first measured operation.
func newGoRedis(ctx context.Context, addr string) (*redis.Client, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}
