package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// redisLockRetry is the step of bsm/redislock's linear backoff: a waiter
// tries again every 10ms. It has no way to hear of a release, so this
// step bounds how late it may be; shorter steps cost the server more
// SETs per wait.
const redisLockRetry = 10 * time.Millisecond

// redisLocker is bsm/redislock with a linear backoff retry.
type redisLocker struct {
	client *redis.Client
	rl     *redislock.Client
}

func openRedisLock(ctx context.Context, addr string) (locker, error) {
	client, err := newGoRedis(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("bsm/redislock: %w", err)
	}
	return redisLocker{client: client, rl: redislock.New(client)}, nil
}

func (r redisLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	l, err := r.rl.Obtain(ctx, key, lockTTL, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(redisLockRetry),
	})
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

func (r redisLocker) Close() error { return r.client.Close() }
