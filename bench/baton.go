package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/lock"
)

// batonLocker is baton's lock, in fast or fair mode, through its public
// API alone.
type batonLocker struct {
	l *lock.Locker
}

// openBaton opens baton in fair mode when fair is set, else in fast mode.
func openBaton(fair bool) func(context.Context, string) (locker, error) {
	return func(ctx context.Context, addr string) (locker, error) {
		opts := []lock.Option{lock.WithTTL(lockTTL)}
		if fair {
			opts = append(opts, lock.WithFair())
		}
		l, err := lock.Open(ctx, addr, opts...)
		if err != nil {
			return nil, fmt.Errorf("baton: %w", err)
		}
		return batonLocker{l}, nil
	}
}

func (b batonLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	lease, err := b.l.Lock(ctx, key)
	if err != nil {
		return nil, err
	}
	return lease.Unlock, nil
}

// LockWatched takes key, asks for the lease's context, and returns once
// the server tracks the lock's key for the Subscriber, whose read of it
// the first Context sends from its own goroutine: from then on a change
// of the key reaches the Subscriber as an invalidation.
func (b batonLocker) LockWatched(ctx context.Context, key string, admin *redis.Client) (watchedLock, error) {
	lease, err := b.l.Lock(ctx, key)
	if err != nil {
		return watchedLock{}, err
	}
	release := func(ctx context.Context) error {
		// A lease whose lock was lost has nothing to release.
		if err := lease.Unlock(ctx); err != nil && !errors.Is(err, lock.ErrNotHeld) {
			return err
		}
		return nil
	}
	// Counted after the Lock: its SET took the key out of the table,
	// where the read that heard the last loss of the key had left it.
	before, err := trackedKeys(ctx, admin)
	if err != nil {
		return watchedLock{}, errors.Join(err, release(ctx))
	}
	leaseCtx := lease.Context(ctx)
	if err := awaitTracking(ctx, admin, before); err != nil {
		return watchedLock{}, errors.Join(err, release(ctx))
	}
	return watchedLock{ctx: leaseCtx, key: b.l.Key(key), release: release}, nil
}

func (b batonLocker) Close() error { return b.l.Close() }
