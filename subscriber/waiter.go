package subscriber

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrNoKeyspaceEvents is returned by Watch on a Subscriber made with
// WithoutKeyspaceEvents.
var ErrNoKeyspaceEvents = errors.New("subscriber: made without keyspace events")

// ErrChannelInUse is returned for a channel watched in one way (plain,
// shard, directed) and asked for in another.
var ErrChannelInUse = errors.New("subscriber: channel in use")

// Waiter is one goroutine's registration for wake-ups, on a key's keyspace
// events (Watch) or on its own directed ID (Directed). Close it when done
// waiting.
type Waiter struct {
	// Set when the waiter is made, read-only afterwards.
	s   *Subscriber
	key string // the channel watched; "" for a directed waiter on the process's channel
	// directed is set for a waiter woken by messages with its ID: on the
	// process's channel (key "") or on a shard channel (DirectedOn).
	directed bool
	id       uint64
	wake     chan struct{} // capacity 1: a pending wake-up
	ready    chan struct{} // closed when the subscription is confirmed or failed

	// Set by the WatchOptions before the waiter is registered under s.mu,
	// read-only afterwards; onPush reads it under s.mu.
	onRelease func()

	message   string // guarded by s.mu: the text of the last directed message
	err       error  // guarded by s.mu until ready is closed, then read-only
	confirmed bool   // guarded by s.mu
	left      bool   // guarded by s.mu
}

// WatchOption configures one Watch.
type WatchOption func(*Waiter)

// OnRelease has fn called right after a release event wakes the waiter.
// It lets a waiter send its next acquire attempt the moment the release is
// heard, without waiting for its own goroutine to be scheduled. It is not
// called for the other wake-ups (reconnect, Close).
//
// fn runs on the connection's reader goroutine, and must not block: until
// it returns, no other message reaches any waiter of the process and no
// SUBSCRIBE is confirmed. Making it non-blocking is the caller's job; the
// Subscriber does not guard against a slow fn. In particular fn must not
// call Watch, WatchChannel or Subscriber.Close, which wait for that
// goroutine; Waiter.Close, Wake and TakeMessage are safe, as is sending
// on a channel that has room.
func OnRelease(fn func()) WatchOption {
	return func(w *Waiter) { w.onRelease = fn }
}

// Watch registers a waiter for key's releases (del, expired and evicted
// events). It returns once the server has confirmed the subscription, so
// that every release after Watch returns wakes a waiter of this process.
// On a connection gone half-open the confirmation comes from the new
// connection, about two health-check intervals later (see WithHealthCheck);
// ctx bounds the wait.
func (s *Subscriber) Watch(ctx context.Context, key string, opts ...WatchOption) (*Waiter, error) {
	if !s.keyspaceEvents {
		return nil, ErrNoKeyspaceEvents
	}
	w, err := s.watch(ctx, s.keyspacePrefix+key, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("subscriber: watching %q: %w", key, err)
	}
	return w, nil
}

// WatchChannel registers a waiter woken by every message on channel. Like
// Watch, it returns once the subscription is confirmed; waiters of one
// channel are woken one at a time, in arrival order.
func (s *Subscriber) WatchChannel(ctx context.Context, channel string) (*Waiter, error) {
	w, err := s.watch(ctx, channel, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("subscriber: watching channel %q: %w", channel, err)
	}
	return w, nil
}

// watch registers a waiter on the channel key: a plain channel when shard
// is nil, else a shard channel of that kind, whose directed waiters are
// woken by messages with their ID alone.
func (s *Subscriber) watch(ctx context.Context, key string, opts []WatchOption, shard *shardKind) (*Waiter, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if err := s.claimKindLocked(key, shard); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	w := s.newWaiterLocked(key, false)
	for _, o := range opts {
		o(w)
	}
	if shard != nil && *shard == shardDirected {
		w.directed = true
		s.directed[w.id] = w
	}
	s.keys[key] = append(s.keys[key], w)
	delete(s.idleSince, key)
	if s.subscribed[key] {
		w.confirmLocked(nil)
	} else {
		s.markDirtyLocked(key)
	}
	s.mu.Unlock()

	select {
	case <-w.ready:
		if w.err != nil {
			w.Close()
			return nil, w.err
		}
		return w, nil
	case <-ctx.Done():
		w.Close()
		return nil, ctx.Err()
	case <-s.done:
		w.Close()
		return nil, ErrClosed
	}
}

// shardKind is what a shard channel's messages do (see Subscriber.shard).
type shardKind int

const (
	shardWakeNext shardKind = iota // wake the channel's waiters one at a time, in arrival order
	shardDirected                  // wake the waiter whose ID the message names
)

// WatchShardChannel is WatchChannel for a shard channel (Redis 7 and
// later): it subscribes with SSUBSCRIBE, which on a Redis Cluster must go
// to the node that serves the channel's slot, and hears SPUBLISH.
// Messages on it wake its waiters one at a time, in arrival order. When
// the slot moves away, the server ends the subscription: every waiter of
// the channel is woken, and none is woken by it again; a waiter that
// still needs it watches anew where the slot went. The error of a refused
// SSUBSCRIBE (MOVED, for a node that does not serve the slot) matches
// the server's reply.
func (s *Subscriber) WatchShardChannel(ctx context.Context, channel string) (*Waiter, error) {
	w, err := s.watchShard(ctx, channel, shardWakeNext)
	if err != nil {
		return nil, fmt.Errorf("subscriber: watching shard channel %q: %w", channel, err)
	}
	return w, nil
}

// DirectedOn registers a waiter woken, as Directed's are, by a message
// with its ID, but on the shard channel channel (as WatchShardChannel
// hears it) rather than on the process's channel. Waiters of the process
// that name one channel share its subscription, which is dropped when the
// last of them leaves. It returns once the subscription is confirmed.
// On a Redis Cluster a channel that shares a key's hash tag keeps a
// directed message on the key's node, where PUBLISH would be sent to every
// node of the cluster.
func (s *Subscriber) DirectedOn(ctx context.Context, channel string) (*Waiter, error) {
	w, err := s.watchShard(ctx, channel, shardDirected)
	if err != nil {
		return nil, fmt.Errorf("subscriber: directed waiter on shard channel %q: %w", channel, err)
	}
	return w, nil
}

func (s *Subscriber) watchShard(ctx context.Context, channel string, kind shardKind) (*Waiter, error) {
	return s.watch(ctx, channel, nil, &kind)
}

// claimKindLocked checks that channel is watched the way shard says (nil
// for a plain channel, else a shard channel of that kind), or not at all,
// and records a shard channel's kind. The kind stays while the channel
// has waiters or a subscription; syncDirty forgets it after.
func (s *Subscriber) claimKindLocked(channel string, shard *shardKind) error {
	had, isShard := s.shard[channel]
	inUse := len(s.keys[channel]) > 0 || s.subscribed[channel]
	switch {
	case shard == nil && isShard:
		return fmt.Errorf("%w: it is watched as a shard channel", ErrChannelInUse)
	case shard != nil && inUse && (!isShard || had != *shard):
		return fmt.Errorf("%w: it is already watched another way", ErrChannelInUse)
	case shard != nil:
		s.shard[channel] = *shard
	}
	return nil
}

// Waiting reports whether this process has a waiter on key. A caller that
// finds none may try to acquire at once without jumping a local line.
func (s *Subscriber) Waiting(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys[s.keyspacePrefix+key]) > 0
}

// Watched reports whether key's releases are heard already: the
// connection is subscribed to its keyspace channel, for waiters or
// lingering after them (WithLinger). A Watch of such a key is confirmed at
// once, without a command.
func (s *Subscriber) Watched(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subscribed[s.keyspacePrefix+key]
}

// Directed registers a waiter woken by a message with its ID on the
// process's channel (see Channel): the message is the ID in decimal,
// optionally followed by a space and text that TakeMessage returns. The channel is subscribed for the
// Subscriber's whole life, so the waiter is ready at once.
func (s *Subscriber) Directed() (*Waiter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	w := s.newWaiterLocked("", true)
	w.directed = true
	s.directed[w.id] = w
	return w, nil
}

// newWaiterLocked makes a waiter on key. One made confirmed is on a
// channel subscribed already (the process's, for a directed waiter), and
// shares one ready channel, closed once, rather than making and closing
// one of its own.
func (s *Subscriber) newWaiterLocked(key string, confirmed bool) *Waiter {
	s.nextID++
	w := &Waiter{s: s, key: key, id: s.nextID, wake: make(chan struct{}, 1), ready: alreadyReady, confirmed: confirmed}
	if !confirmed {
		w.ready = make(chan struct{})
	}
	return w
}

// alreadyReady is the ready channel of waiters confirmed when made.
var alreadyReady = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// Wake delivers a value when the waiter should re-check: a release of its
// key, a directed message, a reconnect, or the Subscriber closing.
func (w *Waiter) Wake() <-chan struct{} { return w.wake }

// ID identifies the waiter in directed messages.
func (w *Waiter) ID() uint64 { return w.id }

// TakeMessage returns the text that followed the ID in the last directed
// message to the waiter, and forgets it; "" if there was none since the
// last call.
func (w *Waiter) TakeMessage() string {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	m := w.message
	w.message = ""
	return m
}

// Close takes the waiter out of its key's line. A wake-up it received but
// did not take passes to the next waiter of the key, so that a release is
// never lost with a leaving waiter. When the key has no waiter left, its
// subscription is dropped.
func (w *Waiter) Close() {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.left {
		return
	}
	w.left = true
	if w.directed {
		delete(s.directed, w.id)
	}
	if w.key == "" {
		return
	}
	waiters := slices.DeleteFunc(s.keys[w.key], func(o *Waiter) bool { return o == w })
	if len(waiters) == 0 {
		delete(s.keys, w.key)
		s.idleLocked(w.key)
	} else {
		s.keys[w.key] = waiters
	}
	if w.directed {
		return // a directed wake-up is this waiter's alone
	}
	select {
	case <-w.wake:
		// Its release hook, if any, has run for it; the next waiter is
		// only signalled, as after any other hand-on.
		s.wakeNextLocked(w.key)
	default:
	}
}

// signal leaves a wake-up pending, unless one already is.
func (w *Waiter) signal() bool {
	select {
	case w.wake <- struct{}{}:
		return true
	default:
		return false
	}
}

func (w *Waiter) confirmLocked(err error) {
	if w.confirmed {
		return
	}
	w.confirmed, w.err = true, err
	close(w.ready)
}

// wakeNextLocked wakes the first waiter of key that has no wake-up pending:
// waiters are served one at a time, in arrival order. It returns the waiter
// woken, or nil.
func (s *Subscriber) wakeNextLocked(key string) *Waiter {
	for _, w := range s.keys[key] {
		if w.signal() {
			return w
		}
	}
	return nil
}
