package subscriber

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
)

// minRedialPause is the least time between two failed redials, whatever
// backoff the connection options set.
const minRedialPause = 10 * time.Millisecond

// ErrClosed is returned by calls on a closed Subscriber.
var ErrClosed = errors.New("subscriber: closed")

// Subscriber holds this process's subscribe-mode connection and its waiters.
//
// Three goroutines share it: the callers of its methods, the supervisor
// (supervise), and the connection's reader, which runs onPush from the
// first dial on, while New is still setting up.
type Subscriber struct {
	// Set by New before the first dial, read-only afterwards, so the
	// reader goroutine may read them from its start.
	client          *conn.Client
	channel         string // this process's directed wake-up channel
	keyspaceEvents  bool
	configureEvents bool // turn keyspace events on at every (re)connect

	ctx    context.Context // ends at Close; bounds the supervisor's calls
	cancel context.CancelFunc
	kick   chan struct{} // capacity 1: dirty keys await the supervisor
	done   chan struct{} // closed when the supervisor has returned

	// Set by New after the first dial, since only the handshake settles
	// the database (an address URL or a conn.WithDB option may name it),
	// and before New starts the supervisor or returns; read-only
	// afterwards. The reader goroutine is running by then, so onPush must
	// never read them.
	db             int
	keyspacePrefix string // "__keyspace@<db>__:"

	// mu is never held across a call on the connection or a wait on a
	// channel: onPush takes it on the reader goroutine, which must not
	// block.
	mu         sync.Mutex
	keys       map[string][]*Waiter // guarded by mu: local waiters per channel, in arrival order
	directed   map[uint64]*Waiter   // guarded by mu
	subscribed map[string]bool      // guarded by mu: channels the current connection is confirmed subscribed to
	dirty      map[string]struct{}  // guarded by mu: channels whose subscription may need a change
	nextID     uint64               // guarded by mu
	closed     bool                 // guarded by mu
}

// New dials addr (see conn.Dial for its forms), makes sure keyspace events
// are published, subscribes to the process's directed channel, and starts
// the supervisor.
func New(ctx context.Context, addr string, opts ...Option) (*Subscriber, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix) // crypto/rand.Read never fails
	s := &Subscriber{
		channel:         o.directedChannelRoot + hex.EncodeToString(suffix),
		keyspaceEvents:  o.keyspaceEvents,
		configureEvents: o.keyspaceEvents && !o.keyspaceConfigured,
		kick:            make(chan struct{}, 1),
		done:            make(chan struct{}),
		keys:            map[string][]*Waiter{},
		directed:        map[uint64]*Waiter{},
		subscribed:      map[string]bool{},
		dirty:           map[string]struct{}{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	connOpts := append(append([]conn.Option(nil), o.connOptions...), conn.WithRESP3(), conn.WithPushHandler(s.onPush))
	client, err := conn.NewClient(addr, connOpts...)
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("subscriber: %w", err)
	}
	s.client = client
	fail := func(err error) (*Subscriber, error) {
		s.cancel()
		_ = client.Close() // waits for the reader goroutine, if one started
		return nil, err
	}
	cn, err := client.Conn(ctx)
	if err != nil {
		return fail(fmt.Errorf("subscriber: %w", err))
	}
	s.db = cn.DB()
	s.keyspacePrefix = "__keyspace@" + strconv.Itoa(s.db) + "__:"
	if s.configureEvents {
		if err := ensureKeyspaceEvents(ctx, cn); err != nil {
			return fail(err)
		}
	}
	if err := cn.DoPush(ctx, "SUBSCRIBE", s.channel); err != nil {
		return fail(fmt.Errorf("subscriber: subscribing to %s: %w", s.channel, err))
	}
	go s.supervise(cn)
	return s, nil
}

// Channel is this process's directed wake-up channel: PUBLISH a waiter's ID
// (see Waiter.ID) in decimal to it to wake that waiter.
func (s *Subscriber) Channel() string { return s.channel }

// DB is the database whose keyspace events the Subscriber hears.
func (s *Subscriber) DB() int { return s.db }

// Close stops the supervisor and the connection and waits for them. Every
// waiter is woken, so that none sleeps on a wake-up that will not come;
// later Watch and Directed calls fail with ErrClosed.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	<-s.done
	err := s.client.Close()
	s.mu.Lock()
	s.wakeAllLocked()
	s.mu.Unlock()
	return err
}

// supervise owns the subscriptions: it applies changes for dirty keys, in
// order, and reconnects when the connection stops.
func (s *Subscriber) supervise(cn *conn.Conn) {
	defer close(s.done)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
			s.syncDirty(cn)
		case <-cn.Done():
			if cn = s.reconnect(); cn == nil {
				return
			}
		}
	}
}

// syncDirty subscribes to the dirty keys that have waiters and unsubscribes
// from those that have none left.
func (s *Subscriber) syncDirty(cn *conn.Conn) {
	s.mu.Lock()
	var add, drop []string
	for key := range s.dirty {
		want, have := len(s.keys[key]) > 0, s.subscribed[key]
		switch {
		case want && !have:
			add = append(add, key)
		case !want && have:
			drop = append(drop, key)
			// From now on a new waiter must wait for a new SUBSCRIBE,
			// which goes out after this UNSUBSCRIBE.
			delete(s.subscribed, key)
		}
	}
	clear(s.dirty)
	s.mu.Unlock()

	if len(drop) > 0 {
		// A failure here is the connection's; reconnecting then leaves
		// out keys without waiters anyway.
		_ = cn.DoPush(s.ctx, s.command("UNSUBSCRIBE", drop)...)
	}
	if len(add) > 0 {
		err := cn.DoPush(s.ctx, s.command("SUBSCRIBE", add)...)
		if s.ctx.Err() != nil {
			err = ErrClosed // the failure is the closing, not the waiters'
		} else if err != nil && cn.Err() != nil {
			return // reconnect subscribes to every key with waiters
		}
		s.mu.Lock()
		for _, key := range add {
			if err == nil {
				s.subscribed[key] = true
			}
			for _, w := range s.keys[key] {
				w.confirmLocked(err)
			}
		}
		s.mu.Unlock()
	}
}

// command builds a (UN)SUBSCRIBE for channels.
func (s *Subscriber) command(verb string, channels []string) []string {
	return append([]string{verb}, channels...)
}

// reconnect gets a new connection, subscribes to the directed channel and
// to every key that has waiters, confirms them, and wakes every waiter so
// that each re-checks its lock: releases may have gone unheard. It returns
// nil once the Subscriber is closing.
func (s *Subscriber) reconnect() *conn.Conn {
	s.mu.Lock()
	clear(s.subscribed)
	s.mu.Unlock()
	for {
		cn, err := s.client.Conn(s.ctx) // waits out the client's backoff
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			// The client's backoff may be zero: never spin.
			s.pause(minRedialPause)
			continue
		}
		if s.configureEvents {
			// A restarted server has forgotten a CONFIG SET.
			if err := ensureKeyspaceEvents(s.ctx, cn); err != nil {
				if s.ctx.Err() != nil {
					return nil
				}
				s.pause(time.Second)
				continue
			}
		}
		s.mu.Lock()
		keys := make([]string, 0, len(s.keys))
		for key := range s.keys {
			keys = append(keys, key)
		}
		clear(s.dirty)
		s.mu.Unlock()

		args := append(s.command("SUBSCRIBE", keys), s.channel)
		if err := cn.DoPush(s.ctx, args...); err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			if cn.Err() == nil {
				// Refused by the server, not lost with the connection:
				// pause rather than ask again at once.
				s.pause(time.Second)
			}
			continue
		}
		s.mu.Lock()
		for _, key := range keys {
			s.subscribed[key] = true
			for _, w := range s.keys[key] {
				w.confirmLocked(nil)
			}
		}
		// Keys that gained or lost waiters meanwhile are dirty again.
		for key := range s.keys {
			if !s.subscribed[key] {
				s.markDirtyLocked(key)
			}
		}
		for key := range s.subscribed {
			if len(s.keys[key]) == 0 {
				s.markDirtyLocked(key)
			}
		}
		s.wakeAllLocked()
		s.mu.Unlock()
		return cn
	}
}

func (s *Subscriber) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx.Done():
	}
}

func (s *Subscriber) markDirtyLocked(key string) {
	s.dirty[key] = struct{}{}
	select {
	case s.kick <- struct{}{}:
	default: // a kick is already pending
	}
}

func (s *Subscriber) wakeAllLocked() {
	for _, waiters := range s.keys {
		for _, w := range waiters {
			w.signal()
		}
	}
	for _, w := range s.directed {
		w.signal()
	}
}
