package main

import (
	"context"
	"fmt"
	"strconv"
)

// instance is an implementation opened on the server, with the key it
// locks in the uncontended scenario.
type instance struct {
	impl
	l    locker
	key  string
	addr string // the server's, for scenarios that open more instances
}

func (in instance) close() error { return in.l.Close() }

// warmupOps is how many Lock+Unlock each instance does, unmeasured, after
// it opens: connections are dialled, scripts loaded and the code paths
// warm before the first round.
const warmupOps = 100

// openAll opens every implementation once on addr and warms it up. Each
// gets a key of its own under prefix. On error it closes those it opened.
func openAll(ctx context.Context, addr, prefix string, all []impl) (_ []instance, err error) {
	var out []instance
	defer func() {
		if err != nil {
			_ = closeEach(out)
		}
	}()
	for i, im := range all {
		l, err := im.open(ctx, addr)
		if err != nil {
			return nil, err
		}
		in := instance{impl: im, l: l, key: prefix + strconv.Itoa(i), addr: addr}
		out = append(out, in)
		for range warmupOps {
			if err := lockUnlock(ctx, l, in.key); err != nil {
				return nil, fmt.Errorf("%s: warming up: %w", im.name, err)
			}
		}
	}
	return out, nil
}

// lockUnlock takes key and releases it.
func lockUnlock(ctx context.Context, l locker, key string) error {
	unlock, err := l.Lock(ctx, key)
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if err := unlock(ctx); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}
