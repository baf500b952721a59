package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// turnstile hands one turn at a time to its takers, in the order they
// came: the least a fair lock can do, with no server in between. A turn
// passes by closing the next taker's channel.
type turnstile struct {
	mu     sync.Mutex
	taken  bool            // guarded by mu
	queued []chan struct{} // guarded by mu: the takers waiting, first first
}

// take waits for the turn, or for ctx to end.
func (t *turnstile) take(ctx context.Context) error {
	t.mu.Lock()
	if !t.taken {
		t.taken = true
		t.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	t.queued = append(t.queued, turn)
	t.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-turn:
		// Given the turn as ctx ended: give it on, as a fair lock must.
		t.passLocked()
	default:
		t.queued = slices.DeleteFunc(t.queued, func(c chan struct{}) bool { return c == turn })
	}
	return ctx.Err()
}

// pass gives the turn to the first taker waiting, or frees it.
func (t *turnstile) pass() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.passLocked()
}

func (t *turnstile) passLocked() {
	if len(t.queued) == 0 {
		t.taken = false
		return
	}
	close(t.queued[0])
	t.queued = t.queued[1:]
}

// floorTurnLocker is scenario 3's floor: bare sockets taking turns, in
// arrival order, on a turnstile they share. Its Lock waits for the turn
// and then makes one PING round trip, its unlock another before it passes
// the turn on: two round trips per acquisition, and a hand-off that costs
// no message. It is not a lock: it excludes only the lockers of its own
// group, in this process.
type floorTurnLocker struct {
	socket *floorLocker
	turns  *turnstile
}

func (f *floorTurnLocker) Lock(ctx context.Context, _ string) (func(context.Context) error, error) {
	if err := f.turns.take(ctx); err != nil {
		return nil, fmt.Errorf("floor: waiting for the turn: %w", err)
	}
	if err := f.socket.ping(ctx); err != nil {
		f.turns.pass()
		return nil, err
	}
	return f.unlock, nil
}

func (f *floorTurnLocker) unlock(ctx context.Context) error {
	defer f.turns.pass()
	return f.socket.ping(ctx)
}

func (f *floorTurnLocker) Close() error { return f.socket.Close() }

// openFloorGroup opens n floor lockers on one turnstile, for scenario 3.
func openFloorGroup(ctx context.Context, addr string, im impl, key string, n int) (lockerGroup, error) {
	turns := &turnstile{}
	return openGroup(ctx, im, key, n, func(ctx context.Context) (locker, error) {
		socket, err := dialFloor(ctx, addr)
		if err != nil {
			return nil, err
		}
		return &floorTurnLocker{socket: socket, turns: turns}, nil
	})
}
