package main

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidisLocker is rueidislock on one key per lock (KeyMajority 1), the
// setting that compares with a single-server lock; its default, 2 of 3
// keys, does three times the work for a quorum on one server.
type rueidisLocker struct {
	l rueidislock.Locker
}

func openRueidisLock(_ context.Context, addr string) (locker, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:  1,
		KeyValidity:  lockTTL,
		// Its documented setting for Redis 7.0.5 and later: the client is
		// not told of invalidations caused by its own writes.
		NoLoopTracking: true,
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	return rueidisLocker{l}, nil
}

func (r rueidisLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	_, cancel, err := r.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	// The cancel function rueidislock returns releases the lock and
	// returns once the release is done.
	return func(context.Context) error { cancel(); return nil }, nil
}

func (r rueidisLocker) Close() error {
	r.l.Close()
	return nil
}
