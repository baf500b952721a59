package subscriber

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// errChannelInUse is returned for a channel watched in one way (plain,
// shard, directed) and asked for in another.
var errChannelInUse = errors.New("subscriber: channel in use")

// Waiter is one goroutine's registration for wake-ups, made by
// [Subscriber.Watch] for a [Topic]. Close it when done waiting.
type Waiter struct {
	// Set when the waiter is made, read-only afterwards.
	s   *Subscriber
	key string // the channel watched; "" for a directed waiter on the process's channel
	// directed is set for a waiter woken by messages with its ID: on the
	// process's channel (key "") or on a shard channel.
	directed bool
	id       uint64
	wake     chan struct{} // capacity 1: a pending wake-up
	ready    chan struct{} // closed when the subscription is confirmed or failed
	// onRelease is Topic.OnRelease; onPush reads it under s.mu.
	onRelease func()
	// onMessage is Topic.OnMessage, set under s.mu when the waiter is
	// made; onDirected calls it under s.mu.
	onMessage func(text string)

	err       error // guarded by s.mu until ready is closed, then read-only
	confirmed bool  // guarded by s.mu
	left      bool  // guarded by s.mu
}

// Topic says what wakes a [Waiter]: the releases of a key, the messages
// on a channel, or the messages that name the waiter itself. Set Key, or
// Channel, or Directed with or without a Channel, as the fields say; any
// other combination is refused.
type Topic struct {
	// Key wakes the waiter on the key's releases: its del, expired and
	// evicted keyspace events. The waiters of one key are woken one at a
	// time, in arrival order. Needs keyspace events (see
	// [WithoutKeyspaceEvents]).
	Key string
	// OnRelease, with Key, is called right after a release event wakes
	// the waiter. It lets a waiter send its next acquire attempt the
	// moment the release is heard, without waiting for its own goroutine
	// to be scheduled. It is not called for the other wake-ups
	// (reconnect, Close). It runs on the connection's reader goroutine
	// and must not block: until it returns, no other message reaches any
	// waiter of the process and no subscription is confirmed. It must not
	// call Watch or Subscriber.Close, which wait for that goroutine;
	// Waiter.Close and sending on a channel that has room are safe.
	OnRelease func()

	// Channel, without Directed, wakes the waiter on each message on the
	// channel; the waiters of one channel are woken one at a time, in
	// arrival order.
	Channel string
	// Shard subscribes Channel as a shard channel (SSUBSCRIBE, Redis 7
	// and later), which hears SPUBLISH alone and, on a Redis Cluster,
	// must be subscribed on the node that serves the channel's slot: a
	// refusal there (MOVED) is returned as the server's error. When the
	// slot moves away, the server ends the subscription and every waiter
	// of the channel is woken, once; one that still needs it watches
	// anew where the slot went.
	Shard bool

	// Directed makes a waiter that only a message naming it wakes: the
	// message is its ID in decimal, optionally followed by a space and
	// text (see OnMessage); [Waiter.Address] says where to publish it. Without Channel,
	// the messages come on the process's own channel, subscribed for the
	// Subscriber's whole life, so Watch returns at once. With Shard and a
	// Channel, they come on the shard channel named Channel followed by
	// the process's channel name, so that another process's waiters never
	// share it; on a Redis Cluster a Channel with a key's hash tag keeps
	// the messages on the key's node. The directed waiters of one such
	// channel share its subscription.
	Directed bool
	// OnMessage, with Directed, is called with the text that follows the
	// ID in each message that names the waiter ("" for none), right
	// before the message wakes it: the waiter finds the text stored when
	// it wakes. It runs on the connection's reader goroutine, with the
	// Subscriber's lock held, and must not block or call the Subscriber
	// or the Waiter.
	OnMessage func(text string)
}

// Watch registers a waiter for topic and returns once the server has
// confirmed the subscription, so that every message after Watch returns
// reaches a waiter of this process: a caller can register, retry its
// acquire, and then wait, and never miss a release that falls in between.
// On a connection gone half-open the confirmation comes from the new
// connection, about two health-check intervals later (see
// [WithHealthCheck]); ctx bounds the wait.
func (s *Subscriber) Watch(ctx context.Context, topic Topic) (*Waiter, error) {
	var w *Waiter
	var err error
	switch {
	case topic.OnRelease != nil && topic.Key == "":
		err = errors.New("OnRelease is for a Key")
	case topic.OnMessage != nil && !topic.Directed:
		err = errors.New("OnMessage is for a directed waiter")
	case topic.Key != "" && (topic.Channel != "" || topic.Shard || topic.Directed):
		err = errors.New("a topic is a Key or a Channel, not both")
	case topic.Key != "" && !s.keyspaceEvents:
		return nil, fmt.Errorf("%w: the Subscriber was made WithoutKeyspaceEvents", ErrKeyspaceEvents)
	case topic.Key != "":
		w, err = s.watch(ctx, s.keyspacePrefix+topic.Key, nil, hooks{onRelease: topic.OnRelease})
	case topic.Directed && topic.Channel == "" && !topic.Shard:
		return s.directedOnProcessChannel(topic.OnMessage)
	case topic.Directed && topic.Channel != "" && topic.Shard:
		kind := shardDirected
		w, err = s.watch(ctx, topic.Channel+s.channel, &kind, hooks{onMessage: topic.OnMessage})
	case topic.Directed:
		err = errors.New("a directed waiter takes a Channel only as a shard channel")
	case topic.Channel == "":
		err = errors.New("a topic needs a Key, a Channel or Directed")
	case topic.Shard:
		kind := shardWakeNext
		w, err = s.watch(ctx, topic.Channel, &kind, hooks{})
	default:
		w, err = s.watch(ctx, topic.Channel, nil, hooks{})
	}
	if err != nil {
		return nil, fmt.Errorf("subscriber: watching %s: %w", topic.describe(), err)
	}
	return w, nil
}

// describe names the topic in errors.
func (t Topic) describe() string {
	switch {
	case t.Key != "":
		return fmt.Sprintf("key %q", t.Key)
	case t.Directed && t.Channel == "" && !t.Shard:
		return "the process's directed channel"
	case t.Directed:
		return fmt.Sprintf("directed channel %q", t.Channel)
	case t.Shard:
		return fmt.Sprintf("shard channel %q", t.Channel)
	}
	return fmt.Sprintf("channel %q", t.Channel)
}

// hooks are a waiter's Topic.OnRelease and Topic.OnMessage.
type hooks struct {
	onRelease func()
	onMessage func(text string)
}

// watch registers a waiter on the channel key: a plain channel when shard
// is nil, else a shard channel of that kind, whose directed waiters are
// woken by messages with their ID alone.
func (s *Subscriber) watch(ctx context.Context, key string, shard *shardKind, h hooks) (*Waiter, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	if err := s.claimKindLocked(key, shard); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	w := s.newWaiterLocked(key, awaitingConfirmation)
	w.onRelease, w.onMessage = h.onRelease, h.onMessage
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
		return nil, errClosed
	}
}

// shardKind is what a shard channel's messages do (see Subscriber.shard).
type shardKind int

const (
	shardWakeNext shardKind = iota // wake the channel's waiters one at a time, in arrival order
	shardDirected                  // wake the waiter whose ID the message names
)

// claimKindLocked checks that channel is watched the way shard says (nil
// for a plain channel, else a shard channel of that kind), or not at all,
// and records a shard channel's kind. The kind stays while the channel
// has waiters or a subscription; syncDirty forgets it after.
func (s *Subscriber) claimKindLocked(channel string, shard *shardKind) error {
	had, isShard := s.shard[channel]
	inUse := len(s.keys[channel]) > 0 || s.subscribed[channel]
	switch {
	case shard == nil && isShard:
		return fmt.Errorf("%w: it is watched as a shard channel", errChannelInUse)
	case shard != nil && inUse && (!isShard || had != *shard):
		return fmt.Errorf("%w: it is already watched another way", errChannelInUse)
	case shard != nil:
		s.shard[channel] = *shard
	}
	return nil
}

// Hears reports whether this process hears key's releases: it has a
// waiter on key, or the subscription lingers a moment after the last one
// left, for the next. A Lock that finds it so waits in line behind the
// local waiters rather than jumping it, and its Watch is confirmed at
// once, without a command. It never sends a command.
func (s *Subscriber) Hears(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	channel := s.keyspacePrefix + key
	return len(s.keys[channel]) > 0 || s.subscribed[channel]
}

// directedOnProcessChannel registers a directed waiter on the process's
// channel, which is subscribed for the Subscriber's whole life.
func (s *Subscriber) directedOnProcessChannel(onMessage func(string)) (*Waiter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	w := s.newWaiterLocked("", subscribedAlready)
	w.directed, w.onMessage = true, onMessage
	s.directed[w.id] = w
	return w, nil
}

// subscription says whether a new waiter's channel is subscribed yet.
type subscription int

const (
	awaitingConfirmation subscription = iota // the server has yet to confirm the subscription
	subscribedAlready                        // the process's channel, for a directed waiter
)

// newWaiterLocked makes a waiter on key. One whose channel is subscribed
// already shares one ready channel, closed once, rather than making and
// closing one of its own.
func (s *Subscriber) newWaiterLocked(key string, sub subscription) *Waiter {
	s.nextID++
	confirmed := sub == subscribedAlready
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
// key, a message for it, a reconnect, or the Subscriber closing.
func (w *Waiter) Wake() <-chan struct{} { return w.wake }

// Address is where a message must go to wake a directed waiter: PUBLISH
// (SPUBLISH for a shard channel) its ID in decimal to channel.
func (w *Waiter) Address() (channel string, id uint64) {
	if w.key == "" {
		return w.s.channel, w.id
	}
	return w.key, w.id
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
