package main

import (
	"context"
	"errors"
	"fmt"
)

// groupWarmupOps is how many Lock+Unlock each locker of a group does,
// unmeasured, after it opens.
const groupWarmupOps = 10

// lockerGroup is one implementation's lockers on one key, each an
// instance of its own, as separate processes would be: the scenarios in
// which lockers contend.
type lockerGroup struct {
	impl
	lockers []locker
	key     string // the lock's
	counter string // a key of the group's own for the scenario's writes
}

func (g lockerGroup) close() error { return closeLockers(g.lockers) }

// openGroups opens n instances of every implementation but the floor,
// which is not a lock, and warms each up. tag tells the scenarios' keys
// apart. On error it closes those it opened.
func openGroups(ctx context.Context, addr, prefix, tag string, n int, all []impl) (_ []lockerGroup, err error) {
	var out []lockerGroup
	defer func() {
		if err != nil {
			err = errors.Join(err, closeEach(out))
		}
	}()
	for i, im := range all {
		if im.floor {
			continue
		}
		g, err := openGroup(ctx, im, groupKey(prefix, tag, i), n, func(ctx context.Context) (locker, error) {
			return im.open(ctx, addr)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// openGroup opens n lockers of im with open, on key, and warms each up.
// On error it closes those it opened.
func openGroup(ctx context.Context, im impl, key string, n int, open func(context.Context) (locker, error)) (_ lockerGroup, err error) {
	g := lockerGroup{impl: im, key: key, counter: key + ":count"}
	defer func() {
		if err != nil {
			err = errors.Join(err, g.close())
		}
	}()
	for range n {
		l, err := open(ctx)
		if err != nil {
			return lockerGroup{}, err
		}
		g.lockers = append(g.lockers, l)
		for range groupWarmupOps {
			if err := lockUnlock(ctx, l, key); err != nil {
				return lockerGroup{}, fmt.Errorf("%s: warming up: %w", im.name, err)
			}
		}
	}
	return g, nil
}

// openHandoffGroups opens scenario 3's groups: openGroups', and, when the
// floor is among all, a group of floor lockers taking turns
// (floorTurnLocker), last, where the floor's row is.
func openHandoffGroups(ctx context.Context, addr, prefix string, all []impl) ([]lockerGroup, error) {
	const tag = "h"
	groups, err := openGroups(ctx, addr, prefix, tag, handoffLockers, all)
	if err != nil {
		return nil, err
	}
	for i, im := range all {
		if !im.floor {
			continue
		}
		g, err := openFloorGroup(ctx, addr, im, groupKey(prefix, tag, i), handoffLockers)
		if err != nil {
			return nil, errors.Join(err, closeEach(groups))
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// groupKey is the key of the group of all[i].
func groupKey(prefix, tag string, i int) string {
	return fmt.Sprintf("%s%s%d", prefix, tag, i)
}

// baselineIndex returns the baseline's index in names, or -1, for no
// ratios, where it is not there.
func baselineIndex(names []string) int {
	for i, name := range names {
		if name == baseline {
			return i
		}
	}
	return -1
}
