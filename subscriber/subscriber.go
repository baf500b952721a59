package subscriber

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/observing"
	"github.com/batonlock/baton/observe"
)

// minRedialPause is the least time between two failed redials, whatever
// backoff the connection options set.
const minRedialPause = 10 * time.Millisecond

// directedChannelPrefix begins every process's directed channel; a random
// suffix makes each unique.
const directedChannelPrefix = "baton:wake:"

// errClosed is returned by calls on a closed Subscriber.
var errClosed error = closedError{}

// closedError is the error of a call on a closed Subscriber: it matches
// conn.ErrClosed, as a call on a closed connection's does.
type closedError struct{}

func (closedError) Error() string        { return "subscriber: closed" }
func (closedError) Is(target error) bool { return target == conn.ErrClosed }

// Subscriber holds this process's subscribe-mode connection and its waiters.
//
// Three goroutines share it: the callers of its methods, the supervisor
// (supervise), and the connection's reader, which runs onPush from the
// first dial on, while New is still setting up. Every command on the
// connection is sent by New, then by the supervisor alone, through within,
// which bounds its reply by replyTimeout and closes a connection that does
// not answer in time.
type Subscriber struct {
	// Set by New before the first dial, read-only afterwards, so the
	// reader goroutine may read them from its start.
	client          *conn.Client
	channel         string // this process's directed wake-up channel
	keyspaceEvents  bool
	configureEvents bool          // turn keyspace events on at every (re)connect
	healthCheck     time.Duration // PING after this long without a reply; 0 for never
	replyTimeout    time.Duration // every reply on the connection is due within this
	linger          time.Duration // see withLinger
	// obs delivers events to the observer (WithObserver), or is nil;
	// ownsObs says that Close closes it.
	obs     *observing.Queue
	ownsObs bool

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

	// lastReply is when a command on the connection last completed.
	// Written by New before it starts the supervisor, then by the
	// supervisor alone, which reads it to skip PINGs a reply made
	// needless.
	lastReply time.Time

	// mu is never held across a call on the connection or a wait on a
	// channel: onPush takes it on the reader goroutine, which must not
	// block.
	mu         sync.Mutex
	keys       map[string][]*Waiter // guarded by mu: local waiters per channel, in arrival order
	directed   map[uint64]*Waiter   // guarded by mu
	subscribed map[string]bool      // guarded by mu: channels the current connection is confirmed subscribed to
	dirty      map[string]struct{}  // guarded by mu: channels whose subscription may need a change
	// idleSince holds the subscribed channels that have no waiter left,
	// and since when, until their linger (withLinger) has passed and the
	// supervisor marks them dirty. Guarded by mu.
	idleSince map[string]time.Time
	// shard holds the channels subscribed with SSUBSCRIBE rather than
	// SUBSCRIBE (Topic.Shard), and whether their messages are
	// directed to one waiter by ID (Topic.Directed) rather than woken in
	// arrival order. An entry lives while the channel has waiters or a
	// subscription. Guarded by mu.
	shard map[string]shardKind
	// holds are the Holdings per key, in the order they were made, and
	// due the held keys the supervisor must read (see checkHolds), with
	// how a key found gone was lost. Guarded by mu.
	holds map[string][]*Holding
	due   map[string]Loss
	// trackingRefused says that the server refused CLIENT TRACKING for
	// good on the current connection. Guarded by mu.
	trackingRefused bool
	// tracking says that the current connection has CLIENT TRACKING on,
	// and the bufs are checkHolds's, reused from pass to pass. Owned by
	// the supervisor.
	tracking bool
	checkBuf []check
	cmdBuf   [][]string
	heldBuf  []*Holding

	nextID uint64 // guarded by mu
	closed bool   // guarded by mu
}

// New dials addr (see conn.Dial for its forms), makes sure keyspace events
// are published, subscribes to the process's directed channel, and starts
// the supervisor.
func New(ctx context.Context, addr string, opts ...Option) (*Subscriber, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	replyTimeout := o.healthCheck
	if replyTimeout <= 0 {
		replyTimeout = defaultHealthCheck
	}
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix) // crypto/rand.Read never fails
	s := &Subscriber{
		channel:         directedChannelPrefix + hex.EncodeToString(suffix),
		keyspaceEvents:  o.keyspaceEvents,
		configureEvents: o.keyspaceEvents && !o.keyspaceConfigured,
		healthCheck:     max(o.healthCheck, 0),
		replyTimeout:    replyTimeout,
		linger:          o.linger,
		kick:            make(chan struct{}, 1),
		done:            make(chan struct{}),
		keys:            map[string][]*Waiter{},
		directed:        map[uint64]*Waiter{},
		subscribed:      map[string]bool{},
		dirty:           map[string]struct{}{},
		idleSince:       map[string]time.Time{},
		shard:           map[string]shardKind{},
		holds:           map[string][]*Holding{},
		due:             map[string]Loss{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.obs, s.ownsObs = observing.Owned(o.observer)
	connOpts := append(append([]conn.Option(nil), o.connOptions...), conn.WithRESP3(), conn.WithPushHandler(s.onPush))
	client, err := conn.NewClient(addr, connOpts...)
	if err != nil {
		s.cancel()
		s.closeObserver()
		return nil, fmt.Errorf("subscriber: %w", err)
	}
	s.client = client
	fail := func(err error) (*Subscriber, error) {
		s.cancel()
		_ = client.Close() // waits for the reader goroutine, if one started
		s.closeObserver()
		return nil, err
	}
	cn, err := client.Conn(ctx)
	if err != nil {
		return fail(fmt.Errorf("subscriber: %w", err))
	}
	s.db = cn.DB()
	s.keyspacePrefix = "__keyspace@" + strconv.Itoa(s.db) + "__:"
	// The handshake is bounded by ctx alone (and the dial timeout); the
	// commands, by ctx and the reply timeout.
	if s.configureEvents {
		if err := s.within(ctx, cn, func(ctx context.Context) error { return ensureKeyspaceEvents(ctx, cn) }); err != nil {
			return fail(err)
		}
	}
	if err := s.doPush(ctx, cn, "SUBSCRIBE", s.channel); err != nil {
		return fail(fmt.Errorf("subscriber: subscribing to %s: %w", s.channel, err))
	}
	go s.supervise(cn)
	return s, nil
}

// Close stops the supervisor and the connection and waits for them. Every
// waiter is woken, so that none sleeps on a wake-up that will not come;
// later Watch calls fail with an error that matches conn.ErrClosed.
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
	s.closeObserver()
	return err
}

// closeObserver stops the observer's queue, if the Subscriber made it.
func (s *Subscriber) closeObserver() {
	if s.ownsObs {
		s.obs.Close(defaultHealthCheck, conn.ErrClosed) // no call of its own: nothing to end
	}
}

// supervise owns the subscriptions: it applies changes for dirty keys, in
// order, ends the lingers that have run out, PINGs the connection when it
// has heard no reply for healthCheck, and reconnects when the connection
// stops, which it does too when a reply is late (see within). It waits for
// one reply at a time, for at most replyTimeout.
func (s *Subscriber) supervise(cn *conn.Conn) {
	defer close(s.done)
	var (
		timer *time.Timer
		check <-chan time.Time // nil, never ready, when the health check is off
	)
	if s.healthCheck > 0 {
		timer = time.NewTimer(s.healthCheck)
		defer timer.Stop()
		check = timer.C
	}
	lingers := time.NewTimer(time.Hour)
	lingers.Stop()
	defer lingers.Stop()
	retry := time.NewTimer(time.Hour) // reads of held keys the server put off
	retry.Stop()
	defer retry.Stop()
	var lingered <-chan time.Time // nil while nothing lingers
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
			s.syncDirty(cn)
			if s.checkHolds(cn) {
				retry.Reset(holdRetry)
			}
		case <-retry.C:
			s.mu.Lock()
			s.kickLocked()
			s.mu.Unlock()
		case <-lingered:
			s.endLingers()
			s.syncDirty(cn)
		case <-check:
			// A reply since the timer was set is as good as a PONG.
			if wait := s.healthCheck - time.Since(s.lastReply); wait > 0 {
				timer.Reset(wait)
				continue
			}
			s.ping(cn) // a late PONG closes cn: Done is ready next
			timer.Reset(s.healthCheck)
		case <-cn.Done():
			lost := time.Now()
			if s.ctx.Err() == nil {
				s.unheard()
				if s.obs != nil {
					s.obs.Observe(observe.Event{Kind: observe.ConnectionLost, Time: lost, Err: cn.Err()})
				}
			}
			if cn = s.reconnect(); cn == nil {
				return
			}
			if s.obs != nil {
				s.obs.Observe(observe.Event{Kind: observe.Reconnected, Duration: time.Since(lost)})
			}
		}
		lingered = s.nextLingerEnd(lingers)
	}
}

// nextLingerEnd sets t for the first linger to run out and returns its
// channel, or nil when nothing lingers.
func (s *Subscriber) nextLingerEnd(t *time.Timer) <-chan time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.idleSince) == 0 {
		return nil
	}
	var first time.Time
	for _, since := range s.idleSince {
		if first.IsZero() || since.Before(first) {
			first = since
		}
	}
	t.Reset(time.Until(first.Add(s.linger)))
	return t.C
}

// endLingers marks dirty the channels whose linger has run out, for
// syncDirty to unsubscribe.
func (s *Subscriber) endLingers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, since := range s.idleSince {
		if time.Since(since) >= s.linger {
			delete(s.idleSince, key)
			s.markDirtyLocked(key)
		}
	}
}

// idleLocked records that key's last waiter has left: its subscription
// lingers (withLinger) if it is a key's keyspace channel, or is marked for
// syncDirty to drop.
func (s *Subscriber) idleLocked(key string) {
	if s.linger <= 0 || !s.subscribed[key] || !strings.HasPrefix(key, s.keyspacePrefix) {
		s.markDirtyLocked(key)
		return
	}
	s.idleSince[key] = time.Now()
	s.kickLocked() // the supervisor sets its timer for the linger
}

// ping checks that the connection still answers. A PING is allowed on a
// RESP3 connection in subscribe mode, and gets a normal reply. It is
// started rather than done so that not even its write can hold the
// supervisor past replyTimeout.
func (s *Subscriber) ping(cn *conn.Conn) {
	err := s.within(s.ctx, cn, func(ctx context.Context) error {
		p, err := cn.Start([]string{"PING"})
		if err != nil {
			return err
		}
		_, err = p.Wait(ctx)
		return err
	})
	if err != nil && s.obs != nil && s.ctx.Err() == nil {
		s.obs.Observe(observe.Event{Kind: observe.HealthCheckFailed, Err: err})
	}
}

// doPush runs a (UN)SUBSCRIBE on cn, bounded as within says.
func (s *Subscriber) doPush(ctx context.Context, cn *conn.Conn, args ...string) error {
	return s.within(ctx, cn, func(ctx context.Context) error { return cn.DoPush(ctx, args...) })
}

// within runs fn, which sends commands on cn, with ctx bounded by the reply
// timeout. If that bound, not ctx, ends fn, the server is taken for gone
// (a half-open connection gives no other sign): within closes cn, so that
// the supervisor reconnects, and says so in the error. A command that
// completes marks the connection as heard from. The bound is on the reply:
// a DoPush whose write the socket will not take can be held up to the
// connection's write timeout more (see conn.WithWriteTimeout), which a few
// small commands on a connection closed at the first late reply never
// come near.
func (s *Subscriber) within(ctx context.Context, cn *conn.Conn, fn func(context.Context) error) error {
	bounded, cancel := context.WithTimeout(ctx, s.replyTimeout)
	defer cancel()
	err := fn(bounded)
	switch {
	case err == nil:
		s.lastReply = time.Now()
	case ctx.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded):
		_ = cn.Close() // fails the calls in flight and waits for the reader
		err = fmt.Errorf("%w (no reply within %v; connection closed)", err, s.replyTimeout)
	}
	return err
}

// syncDirty subscribes to the dirty keys that have waiters and unsubscribes
// from those that have none left.
func (s *Subscriber) syncDirty(cn *conn.Conn) {
	s.mu.Lock()
	if len(s.dirty) == 0 { // a kick for the held keys alone
		s.mu.Unlock()
		return
	}
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
	adds := s.commandsLocked(subscribeVerbs, add, nil)
	drops := s.commandsLocked(unsubscribeVerbs, drop, nil)
	for key := range s.dirty {
		if len(s.keys[key]) == 0 && !s.subscribed[key] {
			delete(s.shard, key) // its UNSUBSCRIBE, if any, is built
		}
	}
	clear(s.dirty)
	s.mu.Unlock()

	for _, cmd := range drops {
		// A failure here is the connection's; reconnecting then leaves
		// out keys without waiters anyway.
		_ = s.doPush(s.ctx, cn, cmd...)
	}
	for _, cmd := range adds {
		err := s.doPush(s.ctx, cn, cmd...)
		if s.ctx.Err() != nil {
			err = errClosed // the failure is the closing, not the waiters'
		} else if err != nil && cn.Err() != nil {
			return // reconnect subscribes to every key with waiters
		}
		// An error reply refuses these channels alone: a shard
		// channel whose slot this node does not serve, say.
		s.settle(cmd[1:], err)
	}
}

// settle records the outcome of a SUBSCRIBE or SSUBSCRIBE of channels and
// confirms their waiters with it.
func (s *Subscriber) settle(channels []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range channels {
		if err == nil {
			s.subscribed[key] = true
		}
		for _, w := range s.keys[key] {
			w.confirmLocked(err)
		}
	}
}

// The commands that subscribe and unsubscribe, for plain and for shard
// channels.
var (
	subscribeVerbs   = [2]string{"SUBSCRIBE", "SSUBSCRIBE"}
	unsubscribeVerbs = [2]string{"UNSUBSCRIBE", "SUNSUBSCRIBE"}
)

// commandsLocked builds the commands that (un)subscribe channels, with
// extra plain channels added to the plain command: one command for every
// plain channel, then one per shard channel, since on a cluster the
// channels of one SSUBSCRIBE must share a slot.
func (s *Subscriber) commandsLocked(verbs [2]string, channels, extra []string) [][]string {
	var cmds [][]string
	plain := append([]string{verbs[0]}, extra...)
	for _, ch := range channels {
		if _, ok := s.shard[ch]; ok {
			cmds = append(cmds, []string{verbs[1], ch})
		} else {
			plain = append(plain, ch)
		}
	}
	if len(plain) > 1 {
		cmds = append([][]string{plain}, cmds...)
	}
	return cmds
}

// reconnect gets a new connection, subscribes to the directed channel and
// to every key that has waiters, confirms them, and wakes every waiter so
// that each re-checks its lock: releases may have gone unheard. Its
// commands are bounded as within says, so a new connection that does not
// answer is closed and replaced in turn. A shard channel the server
// refuses (its slot has moved) is left out, and its waiters are woken
// with the rest. It returns nil once the Subscriber is closing.
func (s *Subscriber) reconnect() *conn.Conn {
	s.mu.Lock()
	clear(s.subscribed)
	clear(s.idleSince) // the new connection subscribes to channels with waiters alone
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
			// A restarted server has forgotten a CONFIG SET. A CONFIG
			// left unanswered closes cn, and the next dial replaces it.
			if err := s.within(s.ctx, cn, func(ctx context.Context) error { return ensureKeyspaceEvents(ctx, cn) }); err != nil {
				if s.ctx.Err() != nil {
					return nil
				}
				s.pause(time.Second)
				continue
			}
		}
		if !s.resubscribe(cn) {
			if s.ctx.Err() != nil {
				return nil
			}
			continue
		}
		s.mu.Lock()
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
		// Changes to held keys went unheard meanwhile, and the new
		// connection tracks nothing yet.
		s.tracking, s.trackingRefused = false, false
		for key := range s.holds {
			s.dueLocked(key, Vanished)
		}
		s.mu.Unlock()
		return cn
	}
}

// resubscribe subscribes a new connection to the directed channel and to
// every channel with waiters. It reports false when cn must be replaced:
// it broke, or the server refused the plain SUBSCRIBE (after a pause, so
// as not to ask again at once).
func (s *Subscriber) resubscribe(cn *conn.Conn) bool {
	s.mu.Lock()
	keys := make([]string, 0, len(s.keys))
	for key := range s.keys {
		keys = append(keys, key)
	}
	clear(s.dirty)
	cmds := s.commandsLocked(subscribeVerbs, keys, []string{s.channel})
	s.mu.Unlock()

	for i, cmd := range cmds {
		err := s.doPush(s.ctx, cn, cmd...)
		switch {
		case err != nil && (s.ctx.Err() != nil || cn.Err() != nil):
			return false
		case err != nil && i == 0: // the plain SUBSCRIBE, with the directed channel
			s.pause(time.Second)
			return false
		}
		channels := cmd[1:]
		if i == 0 {
			channels = cmd[2:] // the directed channel has no waiters of its own
		}
		s.settle(channels, err)
	}
	return true
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
	s.kickLocked()
}

// kickLocked has the supervisor look at the dirty keys and the lingers.
func (s *Subscriber) kickLocked() {
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
