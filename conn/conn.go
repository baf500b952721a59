package conn

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/batonlock/baton/resp"
)

// Conn is one connection to one server, safe for concurrent use. See the
// package doc for how calls share writes and how replies are matched.
type Conn struct {
	nc   net.Conn // wrapped in the tap when there is one
	opts options
	rd   *resp.Reader // whoever holds the reading role: the reader goroutine, or see direct
	// br is rd's buffer (resp.NewReader reads through a *bufio.Reader it
	// is given), where a caller reading between frames (lead.go) looks
	// for a whole frame before it decodes one. The reading role's holder.
	br *bufio.Reader

	// direct is set for a connection read by its callers (see lead.go):
	// one with a raw socket to wait on and no push handler, whose frames
	// can come while no call waits.
	direct bool

	// raw is the socket under nc and any tap, for writes that must not
	// block (Start); nil when there is no such socket (TLS, ...). Used only
	// by whoever holds the writing role.
	raw syscall.RawConn

	mu        sync.Mutex
	wbuf      []byte    // guarded by mu: encoded commands no write has taken yet
	cuts      []int     // guarded by mu: offsets in wbuf where a write must end
	segStart  int       // guarded by mu: offset in wbuf where the last cut was made
	spare     []byte    // guarded by mu: a finished write's buffer, for reuse
	spareCuts []int     // guarded by mu
	writing   bool      // guarded by mu: some caller, or the writer goroutine, is writing for everyone
	pending   callQueue // guarded by mu: calls whose replies are due, in wire order
	err       error     // guarded by mu: why the connection stopped; set once
	// answered is set by the first reply to a call that is no error: the
	// server serves this connection, rather than accepting it and closing
	// it unread, or after an error such as "max number of clients
	// reached" (see Client.countBreakLocked). Guarded by mu.
	answered bool

	// Deadlines (deadline.go).
	withReplyBy   int       // guarded by mu: calls in flight with a reply deadline
	readDeadline  time.Time // guarded by mu: the socket's read deadline, as last set
	readFrom      time.Time // guarded by mu: when the wait for the next bytes began, for the read timeout
	resumeRead    bool      // guarded by mu: the next read goes on with a wait that was cut short (readFrom stands)
	writeDeadline time.Time // the holder of the writing role's: the socket's write deadline, as last set

	// The reading role of a direct connection, guarded by mu.
	reading   bool      // a caller, or a reader goroutine, is reading replies
	idleSince time.Time // when the last reply due was read

	// Interrupts (lead.go), guarded by mu.
	interruptible bool // the reader is a caller whose context can end
	interrupted   bool // its context ended: the read deadline is held in the past
	// interruptFunc is interrupt as a value made once, for
	// context.AfterFunc. Set by newConn.
	interruptFunc func()

	stopped    chan struct{} // closed when err is set
	readerDone chan struct{} // closed when the reader goroutine has returned; at once on a direct connection

	// readers counts a direct connection's reader goroutines (at most
	// one at a time), which Close waits for.
	readers sync.WaitGroup
	// startReader is readWhileDue as a value made once, so that starting
	// a reader goroutine allocates no closure. Set by newConn.
	startReader func()

	// writers counts the writer goroutine, started under mu only while
	// err is nil and gone once nothing is left to write; Close, which sets
	// err first, waits for it.
	writers sync.WaitGroup
}

// readBufferSize is the size of a Conn's read buffer, and so of the
// longest reply that a caller whose context can end reads itself (see
// lead.go); a longer one is left to a reader goroutine.
const readBufferSize = 16 << 10

// newConn takes over nc, which has completed any TLS handshake, and starts
// the reader goroutine, unless its callers read for themselves (direct).
func newConn(nc net.Conn, o options) *Conn {
	raw := rawConnOf(nc)
	if o.tap != nil {
		nc = &tappedConn{Conn: nc, tap: o.tap}
	}
	c := &Conn{nc: nc, raw: raw, opts: o, stopped: make(chan struct{}), readerDone: make(chan struct{}),
		direct: raw != nil && o.pushHandler == nil, idleSince: time.Now()}
	readerOpts := o.readerOptions
	if !o.resp3 {
		readerOpts = append([]resp.ReaderOption{resp.WithRESP2()}, readerOpts...)
	}
	c.br = bufio.NewReaderSize(&deadlineReader{c: c}, readBufferSize)
	c.rd = resp.NewReader(c.br, readerOpts...)
	c.startReader, c.interruptFunc = c.readWhileDue, c.interrupt
	if c.direct {
		close(c.readerDone)
	} else {
		go c.readLoop()
	}
	return c
}

// Do sends one command and returns its reply. An error reply from the
// server comes back as the value and as an error matching *resp.Error.
func (c *Conn) Do(ctx context.Context, args ...string) (resp.Value, error) {
	if len(args) == 0 {
		return resp.Value{}, errEmptyCommand
	}
	cl := newCall(nil)
	if err := c.send(ctx, cl, args); err != nil {
		cl.release()
		return resp.Value{}, fmt.Errorf("conn: %s: %w", args[0], err)
	}
	if err := c.wait(ctx, cl); err != nil {
		return resp.Value{}, fmt.Errorf("conn: %s: %w", args[0], err)
	}
	v := cl.one[0]
	cl.release()
	if err := v.Err(); err != nil {
		return v, fmt.Errorf("conn: %s: %w", args[0], err)
	}
	return v, nil
}

// DoMulti sends several commands contiguously, in one write, and returns
// their replies in order. Error replies stay values (see resp.Value.Err); the
// error is for the call as a whole: a context that ended, or a connection
// that failed.
func (c *Conn) DoMulti(ctx context.Context, cmds ...[]string) ([]resp.Value, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	p, err := c.start(ctx, cmds)
	if err != nil {
		return nil, err
	}
	return p.Wait(ctx)
}

// wait blocks until the call is settled or ctx ends. A caller that gives up
// leaves its call queued: the reader still consumes and drops its replies.
func (c *Conn) wait(ctx context.Context, cl *call) error {
	if c.direct {
		c.lead(ctx, cl)
	}
	if c.opts.spinWait > 0 {
		spinUntilSettled(ctx, cl, c.opts.spinWait)
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		if cl.abandon() {
			return ctx.Err()
		}
		<-cl.done // the reply won the race; take it
	}
	return cl.err
}

// Err returns why the connection stopped (wrapping ErrBroken, or ErrClosed),
// or nil while it is usable. On a connection read by its callers (see the
// package doc), an idle one has no reader to notice that the server closed
// it: Err looks at the socket, without waiting, and notices it then.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkIdleLocked(0)
	return c.err
}

// failed reports whether the connection has stopped, as far as it knows,
// without Err's look at the socket.
func (c *Conn) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// spoke reports whether the server has answered on the connection (see
// answered).
func (c *Conn) spoke() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered
}

// DoPush runs a command whose answers come as push frames rather than as a
// reply: SUBSCRIBE, UNSUBSCRIBE and their kin under RESP3. It sends the
// command and a PING in one write and returns once the PING is answered, by
// which time the server has run the command; the push frames themselves go
// to the WithPushHandler handler. An error reply to the command is returned
// as the error. It needs RESP3 (WithRESP3).
func (c *Conn) DoPush(ctx context.Context, args ...string) error {
	if len(args) == 0 {
		return errEmptyCommand
	}
	if !c.opts.resp3 {
		return fmt.Errorf("conn: %s: DoPush needs a RESP3 connection (WithRESP3)", args[0])
	}
	cl := newCall(nil)
	cl.answeredByPush = true
	if err := c.send(ctx, cl, args, pingCommand); err != nil {
		cl.release()
		return fmt.Errorf("conn: %s: %w", args[0], err)
	}
	if err := c.wait(ctx, cl); err != nil {
		return fmt.Errorf("conn: %s: %w", args[0], err)
	}
	v := cl.one[0]
	cl.release()
	if err := v.Err(); err != nil {
		return fmt.Errorf("conn: %s: %w", args[0], err)
	}
	return nil
}

var pingCommand = []string{"PING"}

// Done is closed when the connection stops, broken or closed; Err then
// says why. An idle connection read by its callers notices that the server
// closed it only when a call or Err looks (see Err).
func (c *Conn) Done() <-chan struct{} { return c.stopped }

// inFlight returns how many calls are waiting for replies, abandoned ones
// included: their replies are still to be read and dropped.
func (c *Conn) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending.len()
}

// DB is the logical database the connection selected during the handshake.
func (c *Conn) DB() int { return c.opts.db }

// RemoteAddr is the server's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Close closes the connection, fails the calls in flight with an
// *UncertainError, and waits for the reader and writer goroutines to
// return.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.failLocked(ErrClosed)
	c.mu.Unlock()
	<-c.readerDone
	c.readers.Wait()
	c.writers.Wait()
	return nil
}

// abort stops the connection with err, as a failure does, without
// waiting for its goroutines: its Client's next call closes it and dials.
func (c *Conn) abort(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

// failLocked stops the connection for good with err: it closes the socket,
// which ends the reader and any write in progress (so the writer goroutine
// returns), and settles every call in flight.
func (c *Conn) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err, c.withReplyBy = err, 0
	close(c.stopped)
	_ = c.nc.Close() // the connection is done either way
	uncertain := &UncertainError{Cause: err}
	for _, cl := range c.pending.drain() {
		cl.complete(uncertain)
	}
	c.wbuf, c.cuts, c.spare, c.spareCuts = nil, nil, nil, nil
}
