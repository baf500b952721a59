package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/batonlock/baton/internal/replydeadline"
	"github.com/batonlock/baton/internal/urltext"
	"github.com/batonlock/baton/resp"
)

// Client is a Conn that redials: a call that finds the connection broken
// dials a new one first, waiting between failed dials as WithRedialBackoff
// says. Calls in flight when a connection breaks are not retried; they fail
// with an *UncertainError, since only the caller knows whether its command
// may run twice.
type Client struct {
	addr   urltext.Address // prints with its passwords hidden
	target target
	opts   options

	mu       sync.Mutex
	conn     *Conn        // guarded by mu: the current connection, or nil
	dialing  *dialAttempt // guarded by mu: the dial in progress, or nil
	failures int          // guarded by mu: dials failed in a row
	// nextDial is when the next dial may start, set at each failure
	// (see failedLocked): every dialler waits for the same moment, so
	// that callers whose contexts end before it do not each start the
	// wait over. Guarded by mu.
	nextDial time.Time
	closed   bool          // guarded by mu
	closing  chan struct{} // closed by Close, to end a wait for a failover
	// abortDial ends the dial in progress, for Close and Interrupt.
	// Guarded by mu.
	abortDial context.CancelCauseFunc

	// Through sentinels (sentinel_watch.go).
	primary namedPrimary // guarded by mu: what conn was dialled to, as the sentinel named it
	newest  int64        // guarded by mu: the newest epoch heard of
	// named is the primary the watcher's sentinel named last, and
	// cutDial cancels the dial in progress, if any, when it names
	// another. Guarded by mu.
	named   namedPrimary
	cutDial context.CancelCauseFunc
	// promoted and superseded are a promotion the watcher's sentinel
	// announced, heard at promotedAt, until the sentinels name the
	// promoted node (see sentinelView). Guarded by mu.
	promoted, superseded namedPrimary
	promotedAt           time.Time
	// watching is closed when the watcher returns, and stopWatching
	// stops it; both nil until the first dial starts it. Guarded by mu.
	watching     chan struct{}
	stopWatching context.CancelFunc
}

// NewClient returns a Client for addr (see Dial for its forms). It checks
// the address but does not dial until the first call.
func NewClient(addr string, opts ...Option) (*Client, error) {
	t, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	return &Client{addr: urltext.NewAddress(addr), target: t, opts: t.resolve(opts), closing: make(chan struct{})}, nil
}

// Addr is the address the Client dials, as given to NewClient but with
// its passwords hidden, as every error of the Client quotes it: for logs
// and reports, not for dialling.
func (c *Client) Addr() string { return c.addr.String() }

// Do runs one command on the current connection; see Conn.Do. A call
// that finds the connection broken before sending anything (the server
// closed it while it was idle) is made once more on a new connection.
func (c *Client) Do(ctx context.Context, args ...string) (resp.Value, error) {
	return onConn(ctx, c, func(cn *Conn) (resp.Value, error) { return cn.Do(ctx, args...) })
}

// DoMulti runs several commands in one write; see Conn.DoMulti. It is made
// once more on a new connection as Do is.
func (c *Client) DoMulti(ctx context.Context, cmds ...[]string) ([]resp.Value, error) {
	return onConn(ctx, c, func(cn *Conn) ([]resp.Value, error) { return cn.DoMulti(ctx, cmds...) })
}

// onConn runs call on the current connection, and once more on a new one
// if the first found its connection broken before it sent anything.
func onConn[T any](ctx context.Context, c *Client, call func(*Conn) (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		cn, err := c.Conn(ctx)
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := call(cn)
		if attempt == 0 && notSent(err) {
			continue
		}
		return v, err
	}
}

// notSent reports whether a call failed because its connection had broken
// before it sent anything: such a call may be made again elsewhere.
func notSent(err error) bool {
	if err == nil {
		return false // before uncertain, whose address escapes: no allocation
	}
	var uncertain *UncertainError
	return errors.Is(err, ErrBroken) && !errors.As(err, &uncertain)
}

// Current returns the current connection if it is usable, else nil. Unlike
// Conn it never dials, so it never blocks.
func (c *Client) Current() *Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && c.conn.Err() == nil {
		return c.conn
	}
	return nil
}

// Conn returns the current connection, dialing a new one if there is none
// or it broke. Only one caller dials at a time; the others wait for it. A
// reply deadline on ctx (WithReplyDeadline) bounds the dial and the wait,
// and Close cuts both short.
func (c *Client) Conn(ctx context.Context) (*Conn, error) {
	bounded := false
	redialled := false // once, for a dial the watcher passed over as it ended
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if cn := c.usableLocked(); cn != nil {
			c.mu.Unlock()
			return cn, nil
		}
		if !bounded {
			// Only now, so that a call on a live connection costs no
			// context.
			var cancel context.CancelFunc
			ctx, cancel = replydeadline.Bound(ctx)
			defer cancel()
			bounded = true
		}
		if c.dialing != nil {
			wait := c.dialing
			c.mu.Unlock()
			select {
			case <-wait.done:
				if wait.interrupted != nil {
					return nil, wait.interrupted
				}
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("conn: waiting for a redial of %s: %w", c.addr, ctx.Err())
			}
		}
		attempt := &dialAttempt{done: make(chan struct{})}
		c.dialing = attempt
		// Close cuts the dial short, as it would a connection: a dial
		// to a server that accepts and never answers lasts the dial
		// timeout, which is no bound for Close.
		dialCtx, abort := context.WithCancelCause(ctx)
		c.abortDial = abort
		broken := c.conn
		c.conn = nil
		if broken != nil {
			c.countBreakLocked(broken)
		}
		delay := time.Until(c.nextDial)
		c.mu.Unlock()

		if broken != nil {
			_ = broken.Close() // already failed; this waits for its reader
		}
		cn, primary, err := c.dial(dialCtx, delay)
		abort(nil)

		c.mu.Lock()
		dialled := err == nil
		passedOver := false
		switch {
		case c.closed:
			err = ErrClosed
		case attempt.interrupted != nil:
			err = attempt.interrupted
		case dialled && !redialled && c.passedOverLocked(primary):
			// The watcher heard of another primary as this dial
			// ended, too late to cut it: dial once more.
			passedOver, err = true, errPrimarySwitched
		}
		if dialled && err != nil {
			// Close may be waiting on done: close the new connection
			// first.
			c.mu.Unlock()
			_ = cn.Close()
			c.mu.Lock()
			cn = nil
		}
		c.dialing, c.abortDial = nil, nil
		close(attempt.done)
		switch {
		case err == nil:
			c.conn, c.primary = cn, primary
			if c.superseded.addr != "" && primary.addr != c.superseded.addr && primary.epoch >= c.superseded.epoch {
				c.promoted, c.superseded = namedPrimary{}, namedPrimary{} // the sentinels name it now
			}
			if cn.spoke() {
				c.succeededLocked() // its handshake was answered
			}
			c.newest = max(c.newest, primary.epoch)
			c.watchLocked()
		case passedOver:
			redialled = true
			c.mu.Unlock()
			continue
		case ctx.Err() == nil && !errors.Is(err, ErrClosed) && !errors.Is(err, errDialInterrupted):
			c.failedLocked() // an owner's Interrupt says nothing of the server
		}
		c.mu.Unlock()
		if err != nil {
			return nil, dialFailure(c.addr, err)
		}
		return cn, nil
	}
}

// passedOverLocked reports whether the watcher has heard, since a dial
// through sentinels began, that p is no longer the primary: a promotion
// replaced it, or a sentinel named another node at an epoch no older.
// The watcher cuts a dial in progress short, but not one that has just
// ended and whose connection is not installed yet. The caller holds mu.
func (c *Client) passedOverLocked(p namedPrimary) bool {
	if len(c.target.sentinels) == 0 {
		return false
	}
	if (sentinelView{superseded: c.superseded}).stale(p) {
		return true
	}
	return c.named.addr != "" && c.named.addr != p.addr && c.named.epoch >= p.epoch
}

// dialFailure is the error of a call whose connection could not be
// dialled: a *DialError, so that a caller can tell that nothing was sent,
// whatever the cause (through sentinels, the answers of each), unless it
// is one already, or the Client's Close or Interrupt ended the dial.
func dialFailure(addr urltext.Address, err error) error {
	var dial *DialError
	if errors.As(err, &dial) || errors.Is(err, ErrClosed) || errors.Is(err, errDialInterrupted) {
		return err
	}
	return &DialError{Addr: addr.String(), Err: err}
}

// dialAttempt is a dial in progress, which the callers that need a
// connection meanwhile wait for.
type dialAttempt struct {
	done chan struct{} // closed when the dial ends
	// interrupted is why Interrupt cut the dial short: set under the
	// Client's mu before done closes, read by the waiters after.
	interrupted error
}

// errDialInterrupted is the error of the calls whose dial Interrupt cut
// short.
var errDialInterrupted = fmt.Errorf("%w: the dial was interrupted", ErrBroken)

// Interrupt breaks the current connection, as Close does a Conn (its
// calls in flight fail with an *UncertainError), and cuts short a dial in
// progress, whose callers fail with an error matching ErrBroken: for an
// owner that must end the calls stuck on a server that stopped answering,
// without closing the Client. The next call dials again.
func (c *Client) Interrupt() {
	c.mu.Lock()
	cn := c.conn
	if c.dialing != nil && c.dialing.interrupted == nil {
		c.dialing.interrupted = errDialInterrupted
		c.abortDial(errDialInterrupted)
	}
	c.mu.Unlock()
	if cn != nil {
		_ = cn.Close()
	}
}

// countBreakLocked takes into account the connection that broke, before
// the dial that replaces it: one on which the server answered ends the
// run of failures, so that the redial is immediate; one that broke before
// any reply counts as a failed dial. A server that accepts connections
// and closes them unread (a proxy or load balancer with no server behind
// it) otherwise has every dial succeed, and a caller that retries would
// redial thousands of times a second. The caller holds mu.
func (c *Client) countBreakLocked(broken *Conn) {
	if broken.spoke() {
		c.succeededLocked()
	} else {
		c.failedLocked()
	}
}

// usableLocked returns the current connection if it has not failed, as far
// as it knows (failed, not Err): a call notices a dead idle connection
// itself (see Do), without a look at the socket every time.
func (c *Client) usableLocked() *Conn {
	if c.conn == nil || c.conn.failed() {
		return nil
	}
	return c.conn
}

// dial waits delay, then dials; through sentinels, it returns the
// primary they named too.
func (c *Client) dial(ctx context.Context, delay time.Duration) (*Conn, namedPrimary, error) {
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, namedPrimary{}, &DialError{Addr: c.addr.String(), Err: fmt.Errorf("waiting to redial: %w", ctx.Err())}
		}
	}
	if len(c.target.sentinels) > 0 {
		return c.awaitPrimary(ctx)
	}
	cn, err := dialTarget(ctx, c.addr, c.target, c.opts)
	return cn, namedPrimary{}, err
}

// failedLocked counts a failed dial, and puts the next one off by the
// backoff. The caller holds mu.
func (c *Client) failedLocked() {
	c.failures++
	c.nextDial = time.Now().Add(c.backoff())
}

// succeededLocked ends a run of failures: the next dial is immediate.
// The caller holds mu.
func (c *Client) succeededLocked() {
	c.failures, c.nextDial = 0, time.Time{}
}

// backoff is the wait before the next dial: none after a connection on
// which the server answered, then doubling from the minimum to the
// maximum with each failed dial (or connection that broke unanswered,
// see countBreakLocked), each with up to half of it taken off at random
// so that many clients do not redial in step.
func (c *Client) backoff() time.Duration {
	if c.failures == 0 || c.opts.minBackoff <= 0 {
		return 0
	}
	d := c.opts.minBackoff
	for i := 1; i < c.failures && d < c.opts.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.opts.maxBackoff)
	return d - time.Duration(rand.Int64N(int64(d)/2+1))
}

// Close closes the current connection, cuts short a dial in progress and
// waits for it to end, and waits for the sentinel watcher to stop. Calls
// waiting on the dial fail with ErrClosed (or, where Interrupt cut it
// first, with its error), and so do calls after Close.
func (c *Client) Close() error {
	c.mu.Lock()
	if !c.closed {
		close(c.closing)
	}
	c.closed = true
	cn, dialing := c.conn, c.dialing
	c.conn = nil
	if c.abortDial != nil {
		c.abortDial(ErrClosed)
	}
	watching, stopWatching := c.watching, c.stopWatching
	c.mu.Unlock()
	if stopWatching != nil {
		stopWatching()
		<-watching
	}
	if dialing != nil {
		<-dialing.done
	}
	if cn != nil {
		return cn.Close()
	}
	return nil
}
