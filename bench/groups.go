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
		key := groupKey(prefix, tag, i)
		g := lockerGroup{impl: im, key: key, counter: key + ":count"}
		for range n {
			l, err := im.open(ctx, addr)
			if err != nil {
				out = append(out, g)
				return nil, err
			}
			g.lockers = append(g.lockers, l)
			for range groupWarmupOps {
				if err := lockUnlock(ctx, l, g.key); err != nil {
					out = append(out, g)
					return nil, fmt.Errorf("%s: warming up: %w", im.name, err)
				}
			}
		}
		out = append(out, g)
	}
	return out, nil
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
