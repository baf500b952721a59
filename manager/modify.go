package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/resp"
)

// Modify runs fn on the state of token under the token's lock and writes
// the result back.
//
//   - Missing state reaches fn as T's zero value.
//   - If fn returns an error, nothing is written, the lock is released and
//     the error comes back wrapped.
//   - If fn, or the codec's Encode, panics, nothing is written, the lock is
//     released (with WithHold too, held or just acquired) and the panic
//     goes on.
//   - If the lease was lost by the time of the write-back (its TTL ran out
//     while fn ran), nothing is written and the error matches
//     lock.ErrNotHeld.
//   - Undecodable state is an error naming the token and the key, and is
//     not overwritten.
//   - A result that encodes to more than the state size limit
//     (WithMaxStateSize) is refused with an error matching ErrInvalid:
//     nothing is written, as a read could not take it back.
//   - An error is returned only when the write did not land, or when its
//     outcome is unknown (an error matching conn.UncertainError): the
//     server's reply decides, so retrying on ErrNotHeld never applies a
//     change twice. An error that does not match conn.UncertainError
//     means that nothing was written.
//   - If ctx ends while the write-back is on its way (sent, or queued to
//     be), the error matches conn.UncertainError and ctx's error: the
//     write may land yet. With WithHold the lock is let go then, by a
//     release sent after the write-back, in the background.
//   - Once Close has begun, no write-back starts, fn runs no more, and
//     the error matches ErrClosed. A Modify that starts afterwards sends
//     nothing. One that waits for the lock (held by another instance, or
//     its turn after a local Modify with WithHold) stops waiting: what
//     its acquire may have taken is released, in the Locker's background
//     (see lock.Locker.Lock on a context that ends). One that takes the
//     lock as Close begins releases it and does not run fn. One whose fn
//     runs fails when fn returns, and releases the lock first. So fn runs
//     only if Close had not begun when the lock was taken. A write-back
//     already on its way goes on, and its Modify returns what the server
//     said: Close waits for it, for a second at most (see Close).
//
// The lock is released even when ctx ends during fn, with or without
// WithHold: the write-back if fn succeeded, and the release, are sent in
// one and complete in the background, and the error matches
// conn.UncertainError and ctx's error. A hold ends then.
//
// With WithHold, fn may run twice for one Modify: when the state kept
// from the last write turns out to be gone from Redis (it expired or was
// deleted), nothing is written and fn runs again on T's zero value. fn
// must therefore only compute the new state from the one it is given.
func (m *Manager[T]) Modify(ctx context.Context, token string, fn func(*T) error) (err error) {
	if err := m.check(ctx, token); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("manager: %w: nil function", ErrInvalid)
	}
	if m.isClosing() {
		return errClosed(token)
	}
	call, start := observe.NewCall(), time.Now()
	m.locker.Observe(observe.Event{Kind: observe.CallBegan, Time: start, Call: call, Op: observe.Modify, Key: token, Context: ctx})
	defer func() {
		m.locker.Observe(observe.Event{Kind: observe.CallEnded, Call: call, Op: observe.Modify, Key: token, Duration: time.Since(start), Err: err})
	}()
	if m.hold > 0 {
		return m.modifyHolding(ctx, call, token, fn)
	}
	return m.modifyOnce(ctx, call, token, fn)
}

// modifyOnce is a Modify without hold: acquire and load, fn, write back and
// release.
func (m *Manager[T]) modifyOnce(ctx context.Context, call uint64, token string, fn func(*T) error) (err error) {
	key := m.Key(token)
	lease, replies, err := m.acquire(ctx, token, key)
	if err != nil {
		return err
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

	if m.isClosing() {
		// Close began while the acquire was on its way: fn does not run,
		// and the deferred Unlock gives the lock back untouched.
		return errClosed(token)
	}
	if len(replies) != 1 {
		// A bug below, not the server's doing; better said than a panic.
		err = fmt.Errorf("manager: modify %q: %d replies to the state's GET, want 1", token, len(replies))
		return err
	}
	data, err := m.apply(call, token, m.loaded(token, replies[0]), fn)
	if err != nil {
		return err
	}
	if !m.beginWrite() {
		// Close began while fn ran: the deferred Unlock gives the lock
		// back untouched.
		return errClosed(token)
	}
	defer m.endWrite()
	written = true
	if _, err := lease.Commit(ctx, lock.Write{Key: key, Value: string(data), TTL: m.ttl, Unlock: true}); err != nil {
		// Refused before anything was sent (New and check refuse what it
		// would refuse, so this is a backstop): the lease is still held.
		written = !errors.Is(err, lock.ErrInvalid)
		return fmt.Errorf("manager: modify %q: write-back: %w", token, err)
	}
	return nil
}

// acquire takes the lock of token and reads its state, at key, in the
// same write. Close ends a wait for the lock (see untilClose): the error
// then matches ErrClosed, and nothing is held.
func (m *Manager[T]) acquire(ctx context.Context, token, key string) (*lock.Lease, []resp.Value, error) {
	c, ok := m.untilClose(ctx)
	if !ok {
		return nil, nil, errClosed(token)
	}
	lease, replies, err := m.locker.LockAndDo(c.ctx, token, []string{"GET", key})
	m.endCut(c)
	switch {
	case err == nil:
		return lease, replies, nil
	case m.cutByClose(ctx, err):
		return nil, nil, errClosed(token)
	}
	return nil, nil, fmt.Errorf("manager: modify %q: %w", token, err)
}

// apply loads the state with load, runs fn on it, and encodes the result,
// which the Modify numbered call then writes back.
func (m *Manager[T]) apply(call uint64, token string, load func(*T) error, fn func(*T) error) ([]byte, error) {
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
	if len(data) > m.maxState {
		return nil, fmt.Errorf("manager: %w: modify %q: the state encodes to %d bytes, over the %d-byte limit (WithMaxStateSize); nothing written",
			ErrInvalid, token, len(data), m.maxState)
	}
	m.locker.Observe(observe.Event{Kind: observe.WritingBack, Call: call, Key: token})
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
