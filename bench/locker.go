package main

import (
	"context"
	"time"
)

// locker is what every implementation offers the scenarios: a blocking
// Lock that waits until the key is free or ctx is done, and gives back the
// function that releases it.
type locker interface {
	Lock(ctx context.Context, key string) (unlock func(context.Context) error, err error)
	Close() error
}

// impl is one implementation under measurement.
type impl struct {
	name string
	// open connects a new instance to the server at addr. Two instances
	// stand for two processes: they share no client.
	open func(ctx context.Context, addr string) (locker, error)
	// floor is set on the bare-socket reference, which is not a lock:
	// it excludes nothing, and the exclusion check skips it.
	floor bool
}

// lockTTL is the expiry every lock is taken with. It is far above any
// operation the scenarios time, so no lock expires under measurement, and
// short enough that keys left by an interrupted run go soon.
const lockTTL = 10 * time.Second

// baseline names the implementation that ratios are taken against.
const baseline = "baton fast"

// impls returns every implementation, baseline first, in the order of the
// report's rows.
func impls() []impl {
	return []impl{
		{name: baseline, open: openBaton(false)},
		{name: "baton fair", open: openBaton(true)},
		{name: "rueidislock", open: openRueidisLock},
		{name: "redsync", open: openRedsync},
		{name: "bsm/redislock", open: openRedisLock},
		{name: "go-redis notify, EVAL", open: openNotify(releaseEval)},
		{name: "floor (2 PINGs)", open: openFloor, floor: true},
	}
}
