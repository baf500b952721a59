package manager

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/lock"
)

// holding is one token's lock kept between modifications (WithHold).
type holding struct {
	users int // guarded by Manager.mu: Modify calls using this entry

	slot  chan struct{} // capacity 1: taken by whoever uses lease and data, given up by leave
	lease *lock.Lease   // guarded by slot: nil when not holding
	data  []byte        // guarded by slot: the state last written
	// lastWrite is when the last modification was written, in
	// nanoseconds since the Manager's epoch: the hold runs from there.
	// The watcher reads it when its timer fires rather than being woken
	// by every modification, which would cost a goroutine wake-up each.
	lastWrite atomic.Int64
}

// modifyHolding is Modify with hold: local calls for one token take turns
// on the token's slot, and while a lease is held they skip the acquire and
// the read.
func (m *Manager[T]) modifyHolding(ctx context.Context, call uint64, token string, fn func(*T) error) error {
	h, err := m.use(token)
	if err != nil {
		return err
	}
	defer m.unuse(token, h)
	select {
	case h.slot <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("manager: modify %q: %w", token, ctx.Err())
	case <-m.closed.Done():
		// Close began while this call waited its turn, maybe on a
		// function in progress, which Close does not wait for either.
		return errClosed(token)
	}
	defer m.leave(ctx, h)
	if m.isClosing() {
		// Close began while this call waited its turn; leave lets go.
		return errClosed(token)
	}

	if h.lease != nil && (closed(h.lease.Wanted()) || closed(h.lease.Done())) {
		// Asked for while idle, or lost: the watcher is letting go.
		m.letGo(context.WithoutCancel(ctx), h)
	}
	if h.lease != nil {
		return m.modifyHeld(ctx, call, token, h, fn)
	}
	return m.modifyAndHold(ctx, call, token, h, fn)
}

// modifyHeld runs fn on the held state and writes the result back with the
// one script that also extends the lock, or hands it to an instance that
// asked for it.
func (m *Manager[T]) modifyHeld(ctx context.Context, call uint64, token string, h *holding, fn func(*T) error) (err error) {
	ok := false
	defer func() {
		if !ok {
			// fn or the codec failed or panicked: nothing written, let go.
			// A panic goes on after.
			m.letGo(context.WithoutCancel(ctx), h)
		}
	}()
	held := func(v *T) error {
		if err := m.codec.Decode(h.data, v); err != nil {
			return fmt.Errorf("manager: token %q, key %q: %w: %w", token, m.Key(token), ErrUndecodable, err)
		}
		return nil
	}
	data, err := m.apply(call, token, held, fn)
	if err != nil {
		return err
	}
	err = m.writeHeld(ctx, token, h, data, overExisting)
	if !errors.Is(err, lock.ErrStateMissing) || h.lease == nil {
		ok = true
		return err
	}
	// The state expired or was deleted since the last write: the copy
	// kept here is stale. Nothing was written; start from the zero value,
	// unless Close has begun meanwhile: then fn does not run again.
	if m.isClosing() {
		return errClosed(token)
	}
	data, err = m.apply(call, token, func(*T) error { return nil }, fn)
	if err != nil {
		return err
	}
	ok = true
	return m.writeHeld(ctx, token, h, data, overAnything)
}

// modifyAndHold acquires and loads as Modify does, and keeps the lease.
func (m *Manager[T]) modifyAndHold(ctx context.Context, call uint64, token string, h *holding, fn func(*T) error) error {
	key := m.Key(token)
	lease, replies, err := m.acquire(ctx, token, key)
	if err != nil {
		return err
	}
	h.lease = lease
	ok := false
	defer func() {
		if !ok {
			// fn failed or panicked, or the state could not be read or
			// encoded, or Close began: nothing written, let go. A panic
			// goes on after.
			m.letGo(context.WithoutCancel(ctx), h)
		}
	}()
	if m.isClosing() {
		// Close began while the acquire was on its way: fn does not run.
		return errClosed(token)
	}
	if len(replies) != 1 {
		// A bug below, not the server's doing; better said than a panic.
		return fmt.Errorf("manager: modify %q: %d replies to the state's GET, want 1", token, len(replies))
	}
	data, err := m.apply(call, token, m.loaded(token, replies[0]), fn)
	if err != nil {
		return err
	}
	ok = true
	if err := m.writeHeld(ctx, token, h, data, overAnything); err != nil || h.lease == nil {
		return err
	}
	if !m.startWatcher(token, h, lease) {
		m.letGo(context.WithoutCancel(ctx), h) // closing
	}
	return nil
}

// overwrite is what a held write-back may write over.
type overwrite int

const (
	overAnything overwrite = iota // the state, or nothing: the write starts it
	overExisting                  // only a state that still exists (lock.Write.IfExists)
)

// writeHeld writes data back with the lease kept, unless another instance
// asked for the lock, which the same script then hands it to. With
// overExisting, a missing state writes nothing and returns an error matching
// lock.ErrStateMissing, with the lease still held. Once Close has begun it
// writes nothing, lets go, and returns errClosed.
//
// If ctx has ended (fn may have cancelled it), it writes back and releases
// in one, as Modify without hold does, which completes in the background
// (an error matching conn.UncertainError says so), and the hold ends: a
// write with the lease kept could not be sent, and would be uncertain.
func (m *Manager[T]) writeHeld(ctx context.Context, token string, h *holding, data []byte, over overwrite) error {
	if !m.beginWrite() {
		m.letGo(context.WithoutCancel(ctx), h)
		return errClosed(token)
	}
	defer m.endWrite()
	w := lock.Write{Key: m.Key(token), Value: string(data), TTL: m.ttl, IfExists: over == overExisting}
	if ctx.Err() != nil {
		// The usual outcome is an error matching conn.UncertainError:
		// the write-back and release go on in the background, and the
		// lease has ended. letGo lets go of a lease that a refusal
		// before sending left held, and forgets it either way.
		w.Unlock = true
		_, err := h.lease.Commit(ctx, w)
		m.letGo(ctx, h)
		if err != nil {
			return fmt.Errorf("manager: modify %q: write-back: %w", token, err)
		}
		return nil
	}
	held, err := h.lease.Commit(ctx, w)
	if errors.Is(err, lock.ErrStateMissing) {
		return err
	}
	if err != nil {
		// Lost (ErrNotHeld: nothing written), or unknown (an error
		// matching conn.UncertainError, ctx's end in flight included):
		// give the lease up either way.
		m.letGo(ctx, h)
		return fmt.Errorf("manager: modify %q: write-back: %w", token, err)
	}
	if !held {
		// Written, and then handed over (or the lease ran out locally).
		h.lease, h.data = nil, nil
		return nil
	}
	h.data = data
	h.lastWrite.Store(m.sinceEpoch())
	return nil
}

// letGo releases the held lease, if any. The caller has the slot. If ctx
// has ended, or ends first, the release completes in the background (the
// Locker's): after a write-back whose ctx ended, as without hold, rather
// than keep a caller who left. Where fn failed or panicked, the caller
// passes a ctx without cancel, so that the lock is free once Modify
// returns, as without hold.
func (m *Manager[T]) letGo(ctx context.Context, h *holding) {
	if h.lease == nil {
		return
	}
	_ = h.lease.Unlock(ctx) // lost already, at worst
	h.lease, h.data = nil, nil
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// takeSlot takes h's slot for a watcher, waiting for the Modify that has
// it, unless Close begins meanwhile. Then it does not wait for that
// Modify's function: it returns false if the slot is still taken, and
// whoever has it lets go on leaving (see leave). It looks under mu, as
// leave gives the slot up under mu once it has seen that Close has not
// begun: so either the slot's holder sees closing, or the slot is free
// here.
func (m *Manager[T]) takeSlot(h *holding) bool {
	select {
	case h.slot <- struct{}{}:
		return true
	case <-m.closed.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case h.slot <- struct{}{}:
		return true
	default:
		return false
	}
}

// leave gives up h's slot, which the caller has. Once Close has begun it
// first lets go of the lease held, if any, with ctx's values and not its
// end: Close does not wait for a Modify in progress, and a watcher that
// found the slot taken left the lease to whoever had it (see takeSlot).
func (m *Manager[T]) leave(ctx context.Context, h *holding) {
	m.mu.Lock()
	for m.closing && h.lease != nil {
		m.mu.Unlock()
		m.letGo(context.WithoutCancel(ctx), h)
		m.mu.Lock()
	}
	<-h.slot
	m.mu.Unlock()
}

// use returns the token's entry, made if need be, counted as in use.
func (m *Manager[T]) use(token string) (*holding, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return nil, errClosed(token)
	}
	h := m.holds[token]
	if h == nil {
		h = &holding{slot: make(chan struct{}, 1)}
		m.holds[token] = h
	}
	h.users++
	return h, nil
}

// unuse drops the entry once nobody uses it and it holds nothing.
func (m *Manager[T]) unuse(token string, h *holding) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h.users--
	m.forgetLocked(token, h)
}

func (m *Manager[T]) forgetLocked(token string, h *holding) {
	if h.users > 0 || m.holds[token] != h {
		return
	}
	select {
	case h.slot <- struct{}{}: // nobody is inside
		idle := h.lease == nil
		<-h.slot
		if idle {
			delete(m.holds, token)
		}
	default:
	}
}

// startWatcher starts the goroutine that lets go of lease when another
// instance asks, when the hold's time passes with no modification, when
// the lease ends, or on Close. It refuses once Close has begun.
func (m *Manager[T]) startWatcher(token string, h *holding, lease *lock.Lease) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return false
	}
	m.watchers.Add(1)
	go m.watch(token, h, lease)
	return true
}

func (m *Manager[T]) watch(token string, h *holding, lease *lock.Lease) {
	defer m.watchers.Done()
	timer := time.NewTimer(m.hold)
	defer timer.Stop()
wait:
	for {
		select {
		case <-lease.Wanted():
			break wait
		case <-timer.C:
			if left := m.hold - time.Duration(m.sinceEpoch()-h.lastWrite.Load()); left > 0 {
				timer.Reset(left) // written since: the hold runs on
				continue
			}
			break wait
		case <-lease.Done():
			break wait
		case <-m.closed.Done():
			break wait
		}
	}
	// Let go after the modification in progress, if any, unless Close
	// begins meanwhile: then that Modify lets go as it leaves.
	if !m.takeSlot(h) {
		return // the Modify that has the slot forgets the entry too (unuse)
	}
	if h.lease == lease {
		m.letGo(context.Background(), h)
	}
	m.leave(context.Background(), h)
	m.mu.Lock()
	m.forgetLocked(token, h)
	m.mu.Unlock()
}
