package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/subscriber"
)

// Locker hands out leases on named locks.
type Locker struct {
	client *conn.Client
	sub    *subscriber.Subscriber
	owns   bool // Open made client and sub, so Close closes them
	opts   options
	ttlArg string // opts.ttl in milliseconds, as sent
	// queueLeaseArg is opts.queueLease in milliseconds, as sent
	queueLeaseArg string

	background sync.WaitGroup // releases that outlive their callers, and watchdogs
	calls      sync.WaitGroup // Lock, TryLock, Unlock and Extend calls in progress
	closing    chan struct{}  // closed when Close begins: waiting Locks give up

	mu     sync.Mutex
	leases map[*Lease]struct{} // guarded by mu: leases not yet released or lost
	closed bool                // guarded by mu
}

// Open connects to addr (host:port or a URL, see conn.Dial) with a command
// connection and a subscriber, and returns a Locker that owns both.
func Open(ctx context.Context, addr string, opts ...Option) (*Locker, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalid)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	client, err := conn.NewClient(addr, o.connOptions...)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if _, err := client.Conn(ctx); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	loadScripts(ctx, client)
	subOpts := []subscriber.Option{subscriber.WithConnOptions(o.connOptions...)}
	if o.fair {
		subOpts = append(subOpts, subscriber.WithoutKeyspaceEvents())
	}
	subOpts = append(subOpts, o.subscriberOptions...)
	sub, err := subscriber.New(ctx, addr, subOpts...)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	l := newLocker(client, sub, o)
	l.owns = true
	return l, nil
}

// New returns a Locker on a client and subscriber the caller made and
// keeps: Close leaves them open. Both must reach the same server and
// database.
func New(c *conn.Client, s *subscriber.Subscriber, opts ...Option) (*Locker, error) {
	if c == nil || s == nil {
		return nil, fmt.Errorf("%w: nil client or subscriber", ErrInvalid)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	return newLocker(c, s, o), nil
}

func newLocker(c *conn.Client, s *subscriber.Subscriber, o options) *Locker {
	return &Locker{
		client: c,
		sub:    s,
		opts:   o,
		ttlArg: strconv.FormatInt(o.ttl.Milliseconds(), 10),

		queueLeaseArg: strconv.FormatInt(o.queueLease.Milliseconds(), 10),
		leases:        map[*Lease]struct{}{},
		closing:       make(chan struct{}),
	}
}

// Client is the Locker's command connection, for callers who want to run
// their own commands beside the lock's.
func (l *Locker) Client() *conn.Client { return l.client }

func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return o, o.check()
}

func (o options) check() error {
	if err := checkMillis("TTL", o.ttl); err != nil {
		return err
	}
	switch {
	case o.queueLease < 3*time.Millisecond:
		return fmt.Errorf("%w: queue lease %v, want at least 3ms", ErrInvalid, o.queueLease)
	case o.politeGrace < 0:
		return fmt.Errorf("%w: polite grace %v, want 0 or more", ErrInvalid, o.politeGrace)
	case o.releaseTimeout <= 0:
		return fmt.Errorf("%w: release timeout %v, want more than 0", ErrInvalid, o.releaseTimeout)
	case o.releaseStyle < ReleasePingEval || o.releaseStyle > ReleaseGetDel:
		return fmt.Errorf("%w: release style %d", ErrInvalid, o.releaseStyle)
	}
	return nil
}

// Close makes waiting Locks return ErrClosed, waits for the Lock, TryLock,
// Unlock and Extend calls in progress (later ones fail with ErrClosed), releases every lease still held, stops the watchdogs,
// waits for releases still in progress, and closes the connections Open
// made. A Lock whose command is in flight holds Close up until its reply
// comes, which its own context bounds.
func (l *Locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.closing)
	l.mu.Unlock()

	// Waiting Locks give up at once; a call whose command is in flight
	// ends when its reply comes (a lease it won is refused and released).
	l.calls.Wait()

	l.mu.Lock()
	held := make([]*Lease, 0, len(l.leases))
	for ls := range l.leases {
		held = append(held, ls)
	}
	l.mu.Unlock()

	var errs []error
	for _, ls := range held {
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.releaseTimeout)
		if err := ls.unlock(ctx, nil); err != nil && !errors.Is(err, ErrNotHeld) {
			errs = append(errs, err)
		}
		cancel()
	}
	l.background.Wait()
	if l.owns {
		errs = append(errs, l.sub.Close(), l.client.Close())
	}
	return errors.Join(errs...)
}

// enter counts a public call in, so that Close waits for it, unless Close
// has begun. The caller must call l.calls.Done when it returns.
func (l *Locker) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.calls.Add(1)
	return true
}

// spawn runs f in a goroutine that Close waits for. Once Close has begun
// it refuses, and the caller runs f itself: a WaitGroup must not gain
// goroutines while someone waits on it.
func (l *Locker) spawn(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.background.Add(1)
	go func() {
		defer l.background.Done()
		f()
	}()
	return true
}
