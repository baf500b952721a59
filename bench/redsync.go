package main

import (
	"context"
	"fmt"
	"math"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsyncLocker is redsync with one pool, one server: no quorum to reach.
type redsyncLocker struct {
	client *redis.Client
	rs     *redsync.Redsync
}

func openRedsync(ctx context.Context, addr string) (locker, error) {
	client, err := newGoRedis(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("redsync: %w", err)
	}
	return redsyncLocker{client: client, rs: redsync.New(goredis.NewPool(client))}, nil
}

func (r redsyncLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	// Tries without bound: like the other locks, Lock waits until the key
	// is free or ctx is done, rather than failing after redsync's default
	// 32 tries. The retry delay stays redsync's default.
	m := r.rs.NewMutex(key, redsync.WithExpiry(lockTTL), redsync.WithTries(math.MaxInt32))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		ok, err := m.UnlockContext(ctx)
		if err == nil && !ok {
			err = fmt.Errorf("redsync: %q was not held at release", key)
		}
		return err
	}, nil
}

func (r redsyncLocker) Close() error { return r.client.Close() }
