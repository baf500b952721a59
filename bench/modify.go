package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/manager"
)

// modifier is one row of the read-modify-write table: a counter in Redis
// read, incremented and written back under the lock of key.
type modifier interface {
	Modify(ctx context.Context, key string) error
	Close() error
}

// lockModifier is a lock with the state read and written through a
// go-redis client of its own between Lock and Unlock: four round trips,
// what a user of any of the locks writes by hand.
type lockModifier struct {
	l     locker
	state *redis.Client
}

func (m lockModifier) Modify(ctx context.Context, key string) error {
	unlock, err := m.l.Lock(ctx, key)
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	n, err := m.state.Get(ctx, key+":state").Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return errors.Join(fmt.Errorf("get: %w", err), unlock(ctx))
	}
	if err := m.state.Set(ctx, key+":state", strconv.Itoa(n+1), lockTTL).Err(); err != nil {
		return errors.Join(fmt.Errorf("set: %w", err), unlock(ctx))
	}
	if err := unlock(ctx); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

func (m lockModifier) Close() error { return errors.Join(m.l.Close(), m.state.Close()) }

// floorModifier is the floor: two round trips, the least a
// read-modify-write under a lock can cost when the state is read with
// the acquire and written with the release.
type floorModifier struct{ l locker }

func (f floorModifier) Modify(ctx context.Context, key string) error {
	return lockUnlock(ctx, f.l, key)
}
func (f floorModifier) Close() error { return f.l.Close() }

// counter is the state the managers keep.
type counter struct{ N int }

// managerModifier is baton's manager: the state is loaded with the
// acquire and written back with the release, two round trips.
type managerModifier struct {
	b batonLocker
	m *manager.Manager[counter]
}

func (m managerModifier) Modify(ctx context.Context, key string) error {
	return m.m.Modify(ctx, key, func(c *counter) error { c.N++; return nil })
}

func (m managerModifier) Close() error { return errors.Join(m.m.Close(), m.b.Close()) }

// modifyRow is a modifier opened, with its row's id (the
// implementation's, "+manager" for a manager row), name and key.
type modifyRow struct {
	id, name string
	m        modifier
	key      string
}

func (r modifyRow) label() string { return r.name }
func (r modifyRow) ident() string { return r.id }
func (r modifyRow) close() error  { return r.m.Close() }

// openModifiers opens a row per implementation of all, and after each of
// baton's a row with its manager and one with the replay of its Modify's
// bytes. On error it closes those it opened.
func openModifiers(ctx context.Context, addr, prefix string, all []impl) (_ []modifyRow, err error) {
	var out []modifyRow
	defer func() {
		if err != nil {
			err = errors.Join(err, closeEach(out))
		}
	}()
	nextKey := func() string { return prefix + "m" + strconv.Itoa(len(out)) }
	add := func(id, name string, m modifier) error {
		row := modifyRow{id: id, name: name, m: m, key: nextKey()}
		out = append(out, row)
		for range warmupOps {
			if err := m.Modify(ctx, row.key); err != nil {
				return fmt.Errorf("%s: warming up: %w", name, err)
			}
		}
		return nil
	}
	for _, im := range all {
		l, err := im.open(ctx, addr)
		if err != nil {
			return nil, err
		}
		if im.floor {
			if err := add(im.id, im.name, floorModifier{l}); err != nil {
				return nil, err
			}
			continue
		}
		state, err := newGoRedis(ctx, addr)
		if err != nil {
			return nil, errors.Join(err, l.Close())
		}
		if err := add(im.id, im.name, lockModifier{l: l, state: state}); err != nil {
			return nil, err
		}
		if im.manager {
			l, err := im.open(ctx, addr)
			if err != nil {
				return nil, err
			}
			b, ok := l.(batonLocker)
			if !ok {
				return nil, errors.Join(fmt.Errorf("%s: a manager row needs baton's lock, not %T", im.name, l), l.Close())
			}
			if err := add(im.id+"+manager", im.name+" + manager", managerModifier{b: b, m: manager.New[counter](b.l)}); err != nil {
				return nil, err
			}
		}
		if im.replay != nil {
			r, err := im.replay(ctx, addr, nextKey())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", im.name, err)
			}
			if err := add(im.id+"+manager"+replayIdent, im.name+" + manager, replayed", r); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// runModify is scenario 1's second table: ops read-modify-writes back to
// back per row per round, interleaved. It returns samples[round][row].
func runModify(ctx context.Context, rows []modifyRow, admin *redis.Client, rounds, ops int, progress io.Writer) ([][]sample, error) {
	return interleave(ctx, "read-modify-write", namesOf(rows), rounds, progress, func(ctx context.Context, i int) (sample, error) {
		return measureOps(ctx, admin, ops, func(ctx context.Context) error { return rows[i].m.Modify(ctx, rows[i].key) })
	})
}
