package conn

import (
	"context"
	"fmt"
	"time"
)

// Direct reading. On a direct connection (a TCP or unix socket without a
// push handler) no goroutine reads while no reply is due. A caller waiting
// for its reply that finds no one reading takes the reading role, the
// mirror of the writing role: it reads the replies and completes the calls
// they answer, in order, its own and others', until its own has come. A
// lone caller thus takes its reply from the socket itself, with no
// goroutine to wake in between. If replies are still due when it stops, a
// reader goroutine takes the role over until none is; callers that find
// the role taken wait for their reply as on any connection.
//
// A reader whose context ends stops between two replies, so that the
// stream stays in step: it waits for a reply's first bytes with a peek
// that its context can cut short (interruptRead), and reads a reply only
// once its bytes have begun to arrive. A reply that stops half-way (a
// stalled or hostile server) cannot be left half-read: a context that ends
// then abandons the call and cuts the read short, which breaks the
// connection, as a read timeout would.

// idleCheckAfter is how long a direct connection must have been idle for a
// call to look at its socket first (idleBytes): with no reader while idle,
// that look is what notices a server that closed the connection, so that
// the call fails as not sent (and a Client redials) rather than as
// uncertain. Calls that follow each other closer than this skip the look
// and its system call; a close that races them fails them as uncertain,
// as it can on any connection.
const idleCheckAfter = time.Millisecond

// lead reads replies as the connection's reader while cl is unsettled and
// ctx lasts, if no one else is reading, then passes the role on.
func (c *Conn) lead(ctx context.Context, cl *call) {
	c.mu.Lock()
	if c.reading || c.err != nil {
		c.mu.Unlock()
		return
	}
	c.reading = true
	c.leaderCall = cl
	c.leaderTurn++
	turn := c.leaderTurn
	c.mu.Unlock()

	var stop func() bool
	if ctx.Done() != nil {
		// Bound to this turn: an interrupt that runs late, when another
		// caller reads (perhaps with this very call, back from the pool),
		// must not touch that caller's call.
		stop = context.AfterFunc(ctx, func() { c.interruptRead(turn) })
	}
	for cl.state.Load() == waiting && ctx.Err() == nil {
		if c.rd.Buffered() == 0 && !c.awaitReply() {
			break
		}
		ok := c.readOne()
		if stop != nil {
			c.mu.Lock()
			c.clearInterruptLocked()
			c.mu.Unlock()
		}
		if !ok {
			break
		}
	}
	if stop != nil {
		stop()
	}
	c.mu.Lock()
	c.leaderCall = nil
	c.mu.Unlock()
	c.passReading()
}

// awaitReply waits, holding the reading role, for the next reply's first
// bytes. It reports false when they did not come: the reader's context
// ended (the stream is in step), or the connection failed.
func (c *Conn) awaitReply() bool {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return false
	}
	c.parked = true
	var err error
	if c.opts.readTimeout > 0 {
		err = c.nc.SetReadDeadline(time.Now().Add(c.opts.readTimeout))
	}
	c.mu.Unlock()
	if err == nil {
		err = c.watch.wait()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parked = false
	interrupted := c.interrupted
	if derr := c.clearInterruptLocked(); derr != nil && err == nil {
		err = derr
	}
	switch {
	case err == nil:
		return true
	case interrupted:
		return false
	}
	c.failLocked(readFailure(err))
	return false
}

// interruptRead is run when the context of the caller who took the
// reading role at the given turn ends; it does nothing once that caller
// has given the role up. It cuts short the caller's wait for a reply's first
// bytes. A caller busy reading a reply is left to finish it, as it looks
// at its context after each one, unless its own reply is still to come:
// then it may be stuck in a reply that stops half-way, so its call is
// abandoned, for the caller to return at once, and the read is cut short
// too, which breaks the connection if the reply is unfinished.
func (c *Conn) interruptRead(turn uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.leaderCall
	if cl == nil || c.leaderTurn != turn || c.interrupted || !c.parked && !cl.abandon() {
		return
	}
	c.interrupted = true
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
}

// clearInterruptLocked takes back the deadline interruptRead set, so that
// the next read, by whoever reads next, is not cut short by it.
func (c *Conn) clearInterruptLocked() error {
	if !c.interrupted {
		return nil
	}
	c.interrupted = false
	return c.nc.SetReadDeadline(time.Time{})
}

// passReading gives up the reading role: to a reader goroutine while
// replies are still due, since their callers may be waiting for them.
func (c *Conn) passReading() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.clearInterruptLocked()
	if c.err == nil && c.pending.len() > 0 {
		c.readers.Add(1)
		go c.readWhileDue()
		return
	}
	c.reading = false
}

// readWhileDue is a reader goroutine of a direct connection: it holds the
// reading role until no reply is due, or the connection fails. Close waits
// for it.
func (c *Conn) readWhileDue() {
	defer c.readers.Done()
	for {
		c.mu.Lock()
		if c.err != nil || c.pending.len() == 0 {
			c.reading = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.readOne()
	}
}

// checkIdleLocked fails a direct connection, idle for at least after,
// whose socket has something no call explains: the server closed it, or
// sent a reply nobody asked for. Nothing of the caller's has been sent yet.
func (c *Conn) checkIdleLocked(after time.Duration) {
	if !c.direct || c.err != nil || c.reading || c.pending.len() > 0 || after > 0 && time.Since(c.idleSince) < after {
		return
	}
	if c.rd.Buffered() > 0 {
		c.failLocked(fmt.Errorf("%w: a reply arrived with no command pending", ErrBroken))
		return
	}
	switch n, err := idleBytes(c.raw); {
	case err != nil:
		c.failLocked(fmt.Errorf("%w: read: %w", ErrBroken, err))
	case n == 0:
		c.failLocked(fmt.Errorf("%w: server closed the connection", ErrBroken))
	case n > 0:
		c.failLocked(fmt.Errorf("%w: a reply arrived with no command pending", ErrBroken))
	}
}
