package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	id   string // short, for --impls
	name string // for the report
	// open connects a new instance to the server at addr. Two instances
	// stand for two processes: they share no client.
	open func(ctx context.Context, addr string) (locker, error)
	// floor is set on the bare-socket reference, which is not a lock:
	// it excludes nothing, and the exclusion check skips it.
	floor bool
	// manager is set on baton's modes, whose read-modify-write also has
	// a row through baton's manager.
	manager bool
	// replay, set on baton's modes, records one uncontended Modify of
	// the mode's manager on a key and opens its replay on a bare socket:
	// the yardstick of the manager's row.
	replay func(ctx context.Context, addr, key string) (modifier, error)
	// losesWakeUps says, for a lock whose waiter was seen to miss a
	// release now and then and wait on past it, what was seen: the
	// scenarios count such a wait as a stall, and the tests that check a
	// waiter is woken skip this lock when it happens, saying so.
	losesWakeUps string
	// watchesLoss is set on the locks whose holder can be told that the
	// server lost the lock (their locker is a lossWatcher): those that
	// scenario 7 times.
	watchesLoss bool
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
		{id: "baton-fast", name: baseline, open: openBaton(false), manager: true, replay: openModifyReplay(false), watchesLoss: true},
		{id: "baton-fair", name: "baton fair", open: openBaton(true), manager: true, replay: openModifyReplay(true), watchesLoss: true},
		{id: "rueidislock", name: "rueidislock", open: openRueidisLock, watchesLoss: true,
			losesWakeUps: "rueidislock's waiter missed a release in about one run in twenty of TestEveryLockExcludes, and once in TestRemoteWaiterTrials"},
		{id: "redsync", name: "redsync", open: openRedsync},
		{id: "redislock", name: "bsm/redislock", open: openRedisLock},
		{id: "notify-eval", name: "go-redis notify, EVAL", open: openNotify(releaseEval)},
		{id: "notify-getdel", name: "go-redis notify, GETDEL", open: openNotify(releaseGetDel)},
		{id: "notify-ping-eval", name: "go-redis notify, PING+EVAL", open: openNotify(releasePingEval)},
		{id: "floor", name: "floor (2 PINGs)", open: openFloor, floor: true},
	}
}

// selectImpls returns those of all whose ids are in the comma-separated
// list, in all's order; every implementation when list is empty.
func selectImpls(all []impl, list string) ([]impl, error) {
	if list == "" {
		return all, nil
	}
	want := map[string]bool{}
	for id := range strings.SplitSeq(list, ",") {
		want[strings.TrimSpace(id)] = true
	}
	var out []impl
	for _, im := range all {
		if want[im.id] {
			out = append(out, im)
			delete(want, im.id)
		}
	}
	if len(want) > 0 {
		var ids []string
		for _, im := range all {
			ids = append(ids, im.id)
		}
		return nil, fmt.Errorf("--impls: unknown %q; known: %s", slices.Sorted(maps.Keys(want)), strings.Join(ids, ", "))
	}
	return out, nil
}

// label is the implementation's name in the report.
func (im impl) label() string { return im.name }
func (im impl) ident() string { return im.id }

// namesOf returns the report's names of xs, in order.
func namesOf[T interface{ label() string }](xs []T) []string {
	names := make([]string, len(xs))
	for i, x := range xs {
		names[i] = x.label()
	}
	return names
}

// idsOf returns the ids of xs, in order, as --json names them.
func idsOf[T interface{ ident() string }](xs []T) []string {
	ids := make([]string, len(xs))
	for i, x := range xs {
		ids[i] = x.ident()
	}
	return ids
}

// closeEach closes every one of xs and returns their errors joined, each
// with the name of what failed to close.
func closeEach[T interface {
	label() string
	close() error
}](xs []T) error {
	var errs []error
	for _, x := range xs {
		if err := x.close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: closing: %w", x.label(), err))
		}
	}
	return errors.Join(errs...)
}
