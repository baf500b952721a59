package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidisKeyPrefix is rueidislock's key prefix, its default, given
// here because scenario 7 deletes the lock's key by name: rueidislock
// keeps the lock called name on the keys "<prefix>:<i>:<name>", one for
// each i below 2*KeyMajority-1, so on "<prefix>:0:<name>" alone here.
const rueidisKeyPrefix = "rueidislock"

// rueidisLocker is rueidislock on one key per lock (KeyMajority 1), the
// setting that compares with a single-server lock; its default, 2 of 3
// keys, does three times the work for a quorum on one server.
type rueidisLocker struct {
	l rueidislock.Locker
}

func openRueidisLock(_ context.Context, addr string) (locker, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
		KeyPrefix:    rueidisKeyPrefix,
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

// LockWatched takes key with WithContext, whose context ends when the
// lock is lost. Its acquire script reads the key right after its SET, in
// the same command, on a connection with client tracking on: the watch
// is in place when WithContext returns, and admin is not needed. Told
// of a change, rueidislock runs its extend script, which finds the key
// gone and ends the context.
func (r rueidisLocker) LockWatched(ctx context.Context, key string, _ *redis.Client) (watchedLock, error) {
	lockCtx, cancel, err := r.l.WithContext(ctx, key)
	if err != nil {
		return watchedLock{}, err
	}
	return watchedLock{
		ctx: lockCtx, key: rueidisKeyPrefix + ":0:" + key,
		// cancel releases the lock where it is still held, and returns
		// once rueidislock's goroutines for it have ended.
		release: func(context.Context) error { cancel(); return nil },
	}, nil
}

func (r rueidisLocker) Close() error {
	r.l.Close()
	return nil
}
