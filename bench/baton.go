package main

import (
	"context"
	"fmt"

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

func (b batonLocker) Close() error { return b.l.Close() }
