package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/observing"
	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// handoffWindow is how long a fast waiter waits for a hand-off before it
// looks again, and then watches the releases (see waitFast). A release of
// an earlier version set a lock handed to a waiter for this long, until
// the waiter confirmed.
const handoffWindow = 500 * time.Millisecond

// Locker hands out leases on named locks.
type Locker struct {
	nodes backend // the server or cluster, and the Subscribers
	owns  bool    // Open made the connections, so Close closes them
	opts  settings

	// The options in milliseconds, as sent; set once in newLocker.
	ttlArg, queueLeaseArg, retentionArg string
	// publish is the command the scripts publish with (see shared.lua),
	// and sharded says which: SPUBLISH, to shard channels, or PUBLISH.
	// Set once in newLocker.
	publish string
	sharded bool
	// waitCmd is the WAIT sent after writes (WithReplicaAck), or nil;
	// set once in newLocker.
	waitCmd []string

	// obs delivers events to the observers (WithObserver), or is nil, and
	// mode is the Locker's, as events name it; set once in newLocker.
	obs  *observing.Queue
	mode observe.Mode

	// contention remembers the locks that this Locker's releases handed
	// on lately.
	contention contention

	background sync.WaitGroup // releases that outlive their callers, watchdogs, lease timers
	// closing is done when Close begins: waiting Locks give up.
	closing context.Context
	// stopBackground ends the contexts of background work, once Close has
	// given it its time.
	bgCtx          context.Context
	stopBackground context.CancelFunc
	beginClose     context.CancelFunc

	mu     sync.Mutex
	leases map[*Lease]struct{} // guarded by mu: leases not yet released or lost
	calls  int                 // guarded by mu: public calls in progress
	idle   chan struct{}       // guarded by mu: made by Close, closed when calls reaches 0
	closed bool                // guarded by mu
	// drained is set by Close once no call is in progress: from then on
	// spawn refuses, so that the background work Close waits for gains
	// no goroutine while it waits. Until then a call in progress may
	// still hand work to the background (the release of an Unlock whose
	// context ended), which Close then waits for.
	drained bool // guarded by mu
}

// Open connects to addr (host:port or a URL, see conn.Dial) with a command
// connection and a subscriber, and returns a Locker that owns both.
//
// A cluster URL opens the Locker on a Redis Cluster:
//
//	redis+cluster://[user[:password]@]host1[:port][,host2[:port]...][/][?param=value&...]
//	rediss+cluster://...   the same, with TLS
//
// Each host is a seed (port 6379 if none; IPv6 in brackets). The user and
// password, percent-encoded, are every node's; rediss+cluster verifies
// each node's certificate against the system's roots (pass conn.WithTLS to
// WithConnOptions to trust another CA). The path may only be empty, "/" or
// "/0": a cluster has database 0 alone. The parameters, each optional, are
// protocol=2|3, client_name=NAME, and dial_timeout, read_timeout and
// write_timeout in time.ParseDuration's form, as the conn options of those
// names; anything else is an error. Each lock's commands go to the primary
// that serves its slot, following MOVED and ASK, and each primary that
// holds a lock someone waits for gets a subscriber of its own, since a
// node publishes the keyspace events of its own keys alone. A waiter whose
// key's slot moves listens on the new node from its next attempt. While a
// reshard or a failover leaves the cluster unable to serve a command
// (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN, READONLY), calls send it
// again, paced, within their context, and releases within the release
// timeout (WithReleaseTimeout).
//
// A redis+sentinel:// URL (see package conn) opens the Locker on the
// primary that Redis Sentinel names, and its connections follow a
// failover: each dials again, through the sentinels, to the new primary
// when its own breaks or the sentinels announce another, and the
// subscriber turns keyspace events on there as at Open. A call made
// while the sentinels still name a primary that cannot be reached waits,
// within its context (a release within the release timeout), for the
// promotion. A lock whose acquire had not reached the replica promoted
// is lost with the old primary, and so is one acquired on an old primary
// still alive between the promotion and the announcement (about a
// second). WithReplicaAck, with as many replicas as the primary has,
// makes every lock that Lock returns survive any promotion (an acquire on
// the old primary finds no replica to acknowledge it, and is undone), at
// the cost of Locks that fail with ErrNotAcquired until every replica
// follows the new primary. With fewer, the sentinels may promote a
// replica that had not acknowledged: they rank replicas by the
// replication offsets those last reported, which may be a second old or
// more.
//
// Where the server allows CONFIG GET, Open refuses a maxmemory-policy that
// may evict keys (an error matching ErrInvalid that names the setting):
// a server can evict a held lock to make room for other data, and a
// second owner then acquires it while the first lease is open. Set the
// policy to noeviction, or accept the risk with WithEvictionAllowed.
// Where CONFIG is refused, it is the operator's to make sure the policy
// is noeviction; and in fast mode, that keyspace events are on, which
// WithKeyspaceEventsConfigured then tells Open.
func Open(ctx context.Context, addr string, opts ...Option) (*Locker, error) {
	if ctx == nil {
		return nil, fmt.Errorf("lock: %w: nil context", ErrInvalid)
	}
	o, err := buildSettings(opts)
	if err != nil {
		return nil, err
	}
	o.queue = observing.StartFor(o.mode(), o.Observers)
	l, err := open(ctx, addr, o)
	if err != nil {
		o.queue.Close(0, errLockerClosed)
	}
	return l, err
}

// open is Open, once the options are checked and the observers' queue,
// which the Locker will own, started.
func open(ctx context.Context, addr string, o settings) (*Locker, error) {
	if isClusterURL(addr) {
		return openCluster(ctx, addr, o)
	}
	client, err := conn.NewClient(addr, o.ConnOptions...)
	if err != nil {
		return nil, addressError(err)
	}
	if err := prepareServer(ctx, client, o); err != nil {
		_ = client.Close()
		return nil, err
	}
	sub, err := subscriber.New(ctx, addr, subscriberOptions(o, o.ConnOptions)...)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	l := newLocker(single{client, sub}, o, plainChannels)
	l.owns = true
	return l, nil
}

// addressError is the error of Open for an address conn or the cluster
// client could not read: it matches ErrInvalid, as every bad argument
// does, and conn.ErrInvalid, which it wraps.
func addressError(err error) error { return invalidAddress{fmt.Errorf("lock: %w", err)} }

type invalidAddress struct{ error }

func (e invalidAddress) Is(target error) bool { return target == ErrInvalid }
func (e invalidAddress) Unwrap() error        { return e.error }

// subscriberOptions are the options of the Subscribers Open makes, with
// connOpts for their connections.
func subscriberOptions(o settings, connOpts []conn.Option) []subscriber.Option {
	subOpts := []subscriber.Option{subscriber.WithConnOptions(connOpts...)}
	switch {
	case o.Fair:
		subOpts = append(subOpts, subscriber.WithoutKeyspaceEvents())
	case o.EventsConfigured:
		subOpts = append(subOpts, subscriber.WithKeyspaceEventsConfigured())
	}
	if o.queue != nil {
		subOpts = append(subOpts, subscriber.WithObserver(o.queue))
	}
	return append(subOpts, o.SubscriberOptions...)
}

// prepareServer connects, checks the eviction policy and loads the
// scripts.
func prepareServer(ctx context.Context, client *conn.Client, o settings) error {
	if _, err := client.Conn(ctx); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if !o.EvictionAllowed {
		if err := checkEviction(ctx, client); err != nil {
			return err
		}
	}
	loadScripts(ctx, client)
	return nil
}

// checkEviction refuses a server whose maxmemory-policy may evict keys.
// Every policy but noeviction may evict a lock: the volatile ones pick
// among keys with a TTL, which every lock key has.
func checkEviction(ctx context.Context, client commander) error {
	v, err := client.Do(ctx, "CONFIG", "GET", "maxmemory-policy")
	var refused *resp.Error
	if errors.As(err, &refused) {
		return nil // CONFIG is not ours to use here: see Open's doc
	}
	if err != nil {
		return fmt.Errorf("lock: reading maxmemory-policy: %w", err)
	}
	if len(v.Elems) != 2 || v.Elems[1].Str == "noeviction" {
		return nil
	}
	return fmt.Errorf("lock: %w: the server's maxmemory-policy is %q, which may evict a held lock and let a second owner take it; "+
		"set maxmemory-policy noeviction, or accept the risk with lock.WithEvictionAllowed", ErrInvalid, v.Elems[1].Str)
}

// New returns a Locker on a client and subscriber the caller made and
// keeps: Close leaves them open. Both must reach the same server and
// database. New makes no call to the server: the eviction check of Open is
// the caller's.
func New(c *conn.Client, s *subscriber.Subscriber, opts ...Option) (*Locker, error) {
	if c == nil || s == nil {
		return nil, fmt.Errorf("lock: %w: nil client or subscriber", ErrInvalid)
	}
	o, err := buildSettings(opts)
	if err != nil {
		return nil, err
	}
	o.queue = observing.StartFor(o.mode(), o.Observers)
	return newLocker(single{c, s}, o, plainChannels), nil
}

// channels is what the scripts publish to.
type channels int

const (
	plainChannels channels = iota // PUBLISH, heard everywhere
	shardChannels                 // SPUBLISH, heard on the node that holds the channel's slot
)

func newLocker(nodes backend, o settings, ch channels) *Locker {
	l := &Locker{
		publish:       "PUBLISH",
		sharded:       ch == shardChannels,
		nodes:         nodes,
		opts:          o,
		ttlArg:        millis(o.TTL),
		queueLeaseArg: millis(o.QueueLease),
		retentionArg:  millis(o.FenceRetention),
		waitCmd:       waitCommand(o),
		leases:        map[*Lease]struct{}{},
		obs:           o.queue,
		mode:          o.mode(),
	}
	if ch == shardChannels {
		l.publish = "SPUBLISH"
	}
	l.closing, l.beginClose = context.WithCancel(context.Background())
	l.bgCtx, l.stopBackground = context.WithCancel(context.Background())
	return l
}

// Close makes waiting Locks return ErrClosed and later calls fail with
// ErrClosed, waits for the calls in progress, releases every lease still
// held, waits for the releases going on in the background, stops the
// watchdogs, and closes the connections Open made. The background
// releases are those of Unlocks whose context ended, of leases that ran
// out, and the undoing of Locks that gave up (cancelled, or ended by
// Close) while their acquire was on its way and may have taken the lock:
// a service that cancels its work and then closes its Locker leaves no
// lock held.
//
// Close ends in bounded time, even on a server that stopped answering:
// calls in progress get the release timeout (5s) to finish;
// then the command connection is closed under them, so that they fail (a
// command in flight fails with a conn.UncertainError). The leases still
// held, and the background releases, get another release timeout
// together, after which any release still in flight is abandoned: the
// lock's TTL frees it. Last, the events queued for observers
// (WithObserver) are delivered, within another release timeout; a call
// they were told of that is still going on (a Manager's Modify whose
// function runs) ends for them there, with ErrClosed. On a
// Locker made with New, closing the connection under a stuck call closes
// the caller's client's current connection, which the client redials,
// and cuts short a dial it has in progress (whose callers fail with an
// error matching conn.ErrBroken).
func (l *Locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.beginClose()
	var idle chan struct{}
	if l.calls > 0 {
		idle = make(chan struct{})
		l.idle = idle
	}
	l.mu.Unlock()

	if idle != nil {
		timer := time.NewTimer(l.opts.ReleaseTimeout)
		select {
		case <-idle:
		case <-timer.C:
			// A call is stuck on the server: break the connection it
			// waits on.
			l.nodes.interrupt()
			<-idle
		}
		timer.Stop()
	}

	l.mu.Lock()
	l.drained = true
	held := make([]*Lease, 0, len(l.leases))
	for ls := range l.leases {
		held = append(held, ls)
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.ReleaseTimeout)
	var errs []error
	for _, ls := range held {
		if err := ls.unlock(ctx, nil, observe.Closed); err != nil && !errors.Is(err, ErrNotHeld) && ctx.Err() == nil {
			errs = append(errs, err)
		}
	}
	// The releases and withdrawals already going on in the background
	// (a Lock cancelled with its acquire on its way, a lease that ran
	// out, an Unlock whose caller left) finish within the same time:
	// cut short, they would leave a lock held for its TTL by an owner
	// nobody knows.
	l.awaitBackground(ctx)
	cancel()
	l.stopBackground()
	l.background.Wait()
	if l.owns {
		errs = append(errs, l.nodes.close())
	}
	// After the subscribers, which report to it; a Modify still running
	// (a Manager's, whose fn Close does not wait for) ends for the
	// observers here, with ErrClosed.
	l.obs.Close(l.opts.ReleaseTimeout, errLockerClosed)
	return errors.Join(errs...)
}

// awaitBackground waits for the Locker's background work until ctx ends.
// Close calls it once drained, so that nothing adds to the work while it
// waits; the goroutine it starts ends when the work does, which Close
// waits for in any case.
func (l *Locker) awaitBackground(ctx context.Context) {
	finished := make(chan struct{})
	go func() {
		l.background.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
	}
}

// enter counts a public call in, so that Close waits for it, unless Close
// has begun. A true return must be matched by exit.
func (l *Locker) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.calls++
	return true
}

func (l *Locker) exit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls--
	if l.calls == 0 && l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
}

// spawn runs f in a goroutine that Close waits for. Once Close has
// drained the calls in progress it refuses, and the caller runs f itself
// or drops it: a WaitGroup must not gain goroutines while someone waits on
// it.
func (l *Locker) spawn(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drained {
		return false
	}
	l.background.Add(1)
	go func() {
		defer l.background.Done()
		f()
	}()
	return true
}
