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
		key := fmt.Sprintf("%s%s%d", prefix, tag, i)
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
