package manager

import (
	"context"
	"fmt"

	"github.com/batonlock/baton/resp"
)

// Modify runs fn on the state of token under the token's lock and writes
// the result back.
//
//   - Missing state reaches fn as T's zero value.
//   - If fn returns an error, nothing is written, the lock is released and
//     the error comes back wrapped.
//   - If fn panics, the lock is released and the panic goes on.
//   - If the lease was lost by the time of the write-back (its TTL ran out
//     while fn ran), nothing is written and the error matches
//     lock.ErrNotHeld.
//   - Undecodable state is an error naming the token and the key, and is
//     not overwritten.
//
// The lock is released even when ctx ends during fn: the release, and the
// write-back if fn succeeded, complete in the background.
//
// With WithHold, a Modify on a lock held from an earlier one may see
// another instance ask for the lock while fn runs. Its result is then not
// written: the lock goes to the other instance first, and fn runs again on
// the state as it is after that. fn must therefore only compute the new
// state from the one it is given.
func (m *Manager[T]) Modify(ctx context.Context, token string, fn func(*T) error) (err error) {
	if err := m.check(ctx, token); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalid)
	}
	if m.hold > 0 {
		return m.modifyHolding(ctx, token, fn)
	}
	return m.modifyOnce(ctx, token, fn)
}

// modifyOnce is a Modify without hold: acquire and load, fn, write back and
// release.
func (m *Manager[T]) modifyOnce(ctx context.Context, token string, fn func(*T) error) (err error) {
	key := m.Key(token)
	lease, replies, err := m.locker.LockThen(ctx, token, []string{"GET", key})
	if err != nil {
		return fmt.Errorf("manager: modify %q: %w", token, err)
	}
	written := false
	defer func() {
		if written {
			return
		}
		// fn failed, panicked, or the state could not be read or encoded:
		// give the lock back untouched. A panic goes on after this.
		if uerr := lease.Unlock(context.WithoutCancel(ctx)); uerr != nil && err == nil {
			err = fmt.Errorf("manager: modify %q: releasing: %w", token, uerr)
		}
	}()

	data, err := m.apply(token, m.loaded(token, replies[0]), fn)
	if err != nil {
		return err
	}
	written = true
	if err := lease.UnlockSetting(ctx, key, string(data), m.ttl); err != nil {
		return fmt.Errorf("manager: modify %q: write-back: %w", token, err)
	}
	return nil
}

// apply loads the state with load, runs fn on it, and encodes the result.
func (m *Manager[T]) apply(token string, load func(*T) error, fn func(*T) error) ([]byte, error) {
	var state T
	if err := load(&state); err != nil {
		return nil, err
	}
	if err := fn(&state); err != nil {
		return nil, fmt.Errorf("manager: modify %q: %w", token, err)
	}
	data, err := m.codec.Encode(&state)
	if err != nil {
		return nil, fmt.Errorf("manager: modify %q: encoding: %w", token, err)
	}
	return data, nil
}

// loaded decodes the reply of the GET sent with the acquire.
func (m *Manager[T]) loaded(token string, reply resp.Value) func(*T) error {
	return func(v *T) error {
		if err := reply.Err(); err != nil {
			return fmt.Errorf("manager: modify %q: reading %q: %w", token, m.Key(token), err)
		}
		return m.decode(token, reply, v)
	}
}
