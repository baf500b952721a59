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

	slot  chan struct{} // capacity 1: taken by whoever uses lease and data
	lease *lock.Lease   // guarded by slot: nil when not holding
	data  []byte        // guarded by slot: the state last written
	// lastWrite is when the last modification was written, in
	// nanoseconds since the Manager's epoch: the hold runs from there.
	// The watcher reads it when its timer fires rather than being woken
	// by every modification, which would cost a goroutine wake-up each.
	lastWrite atomic.Int64
	yield     atomic.Bool // a waiter asked: the next user of the slot lets go
}

// modifyHolding is Modify with hold: local calls for one token take turns
// on the token's slot, and while a lease is held they skip the acquire and
// the read.
func (m *Manager[T]) modifyHolding(ctx context.Context, token string, fn func(*T) error) error {
	h, err := m.use(token)
	if err != nil {
		return err
	}
	defer m.unuse(token, h)
	select {
	case h.slot <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("manager: modify %q: %w", token, ctx.Err())
	}
	defer func() { <-h.slot }()

	if h.lease != nil && (h.yield.Load() || !alive(h.lease)) {
		m.letGo(ctx, h)
	}
	if h.lease != nil {
		err := m.modifyHeld(ctx, token, h, fn)
		if !errors.Is(err, lock.ErrWanted) {
			return err
		}
		// Another instance asked while fn ran: nothing was written. Let
		// it go first, then do this modification again, on fresh state.
	}
	return m.modifyAndHold(ctx, token, h, fn)
}

// modifyHeld runs fn on the held state and writes the result back with the
// one script that also extends the lock.
func (m *Manager[T]) modifyHeld(ctx context.Context, token string, h *holding, fn func(*T) error) (err error) {
	ok := false
	defer func() {
		if !ok {
			m.letGo(ctx, h) // fn failed or panicked: nothing written, let go
		}
	}()
	held := func(v *T) error {
		if err := m.codec.Decode(h.data, v); err != nil {
			return fmt.Errorf("manager: token %q, key %q: %w: %w", token, m.Key(token), ErrUndecodable, err)
		}
		return nil
	}
	data, err := m.apply(token, held, fn)
	if err != nil {
		return err
	}
	return m.writeHeld(ctx, token, h, h.lease, data, true, &ok)
}

// modifyAndHold acquires and loads as Modify does, and keeps the lease.
func (m *Manager[T]) modifyAndHold(ctx context.Context, token string, h *holding, fn func(*T) error) error {
	key := m.Key(token)
	lease, replies, err := m.locker.LockThenPolitely(ctx, token, []string{"GET", key})
	if err != nil {
		return fmt.Errorf("manager: modify %q: %w", token, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = lease.Unlock(context.WithoutCancel(ctx))
		}
	}()
	data, err := m.apply(token, m.loaded(token, replies[0]), fn)
	if err != nil {
		return err
	}
	h.lease = lease
	h.yield.Store(false)
	if err := m.writeHeld(ctx, token, h, lease, data, false, &ok); err != nil || h.lease == nil {
		return err
	}
	if !m.startWatcher(token, h, lease) {
		m.letGo(ctx, h) // closing
	}
	return nil
}

// writeHeld writes data back with the lease kept, and lets go if a waiter
// asked for the lock. With refuse set (a modification on a lock held from
// before), a request makes it write nothing and return lock.ErrWanted; a
// modification right after an acquire always writes, so that every holder
// makes progress. ok is set once the lease is in h's hands for good or let
// go.
func (m *Manager[T]) writeHeld(ctx context.Context, token string, h *holding, lease *lock.Lease, data []byte, refuse bool, ok *bool) error {
	wanted, err := lease.ExtendSetting(ctx, m.Key(token), string(data), m.ttl, refuse)
	*ok = true
	if errors.Is(err, lock.ErrWanted) {
		m.letGo(ctx, h)
		return err // the caller redoes the modification
	}
	if err != nil {
		// Lost (ErrNotHeld), or unknown: give the lease up either way.
		m.letGo(ctx, h)
		return fmt.Errorf("manager: modify %q: write-back: %w", token, err)
	}
	h.data = data
	if wanted {
		m.letGo(ctx, h)
		return nil
	}
	h.lastWrite.Store(m.sinceEpoch())
	return nil
}

// letGo releases the held lease, if any. The caller has the slot.
func (m *Manager[T]) letGo(ctx context.Context, h *holding) {
	if h.lease == nil {
		return
	}
	_ = h.lease.Unlock(context.WithoutCancel(ctx)) // lost already, at worst
	h.lease, h.data = nil, nil
}

func alive(ls *lock.Lease) bool {
	select {
	case <-ls.Done():
		return false
	default:
		return true
	}
}

// use returns the token's entry, made if need be, counted as in use.
func (m *Manager[T]) use(token string) (*holding, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return nil, ErrClosed
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

// startWatcher starts the goroutine that lets go of lease when a waiter
// asks, when the hold's time passes with no modification, when the lease
// ends, or on Close. It refuses once Close has begun.
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
	var wanted <-chan struct{}
	unwatch := func() {}
	channel := m.locker.WantedChannel(token)
	if w, err := m.locker.Subscriber().WatchChannel(m.closed, channel); err == nil {
		unwatch = w.Close
		wanted = w.Wake()
		// A waiter that asked before the subscription was in place left
		// the flag; the next write would see it, but there may be none.
		if v, err := m.locker.Client().Do(m.closed, "EXISTS", channel); err == nil && v.Int == 1 {
			h.yield.Store(true)
		}
	}
	timer := time.NewTimer(m.hold)
	defer timer.Stop()
	for !h.yield.Load() {
		select {
		case <-wanted:
			h.yield.Store(true)
		case <-timer.C:
			if left := m.hold - time.Duration(m.sinceEpoch()-h.lastWrite.Load()); left > 0 {
				timer.Reset(left) // written since: the hold runs on
				continue
			}
		case <-lease.Done():
		case <-m.closed.Done():
		}
		break
	}
	// Stop listening before waiting for the slot: requests heard from now
	// on are for the next hold, whose own watcher reads the flag, and a
	// wake-up left pending here would be handed to that watcher.
	unwatch()
	// Let go after the modification in progress, if any.
	h.slot <- struct{}{}
	if h.lease == lease {
		m.letGo(context.Background(), h)
	}
	<-h.slot
	m.mu.Lock()
	m.forgetLocked(token, h)
	m.mu.Unlock()
}
