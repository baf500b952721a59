package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/batonlock/baton/internal/respframe"
	"github.com/batonlock/baton/resp"
)

// Direct reading. On a direct connection (a TCP or unix socket without a
// push handler) no goroutine reads while no reply is due. A caller who
// finds no one reading takes the reading role, the mirror of the writing
// role: it reads the replies and completes the calls they answer, in
// order, its own and others', until its own has come. A lone caller thus
// takes its reply from the socket itself, with no goroutine to wake in
// between.
//
// A caller whose context can end must be free to return the moment it
// does, leaving its reply to be read and dropped. So it reads from the
// socket only between frames: it fills the buffer under the resp.Reader
// (respframe.Fill on Conn.br), decoding nothing, until the next frame is
// whole in it (respframe.Whole), and only then decodes. When its context ends, context.AfterFunc interrupts the fill
// it is waiting in, by moving the socket's read deadline into the past;
// the caller gives up the role, and nothing of the stream is lost. A frame
// longer than the read buffer, which cannot be whole in it, is left to a
// reader goroutine, as are the replies still due when the caller leaves.
//
// A reader goroutine holds the role until no reply is due: for batches
// that Start sent, and after a caller that read for itself, while replies
// are still due. Callers that find the role taken wait for their reply as
// on any connection.

// idleCheckAfter is how long a direct connection must have been idle for a
// call to look at its socket first (idleBytes): with no reader while idle,
// that look is what notices a server that closed the connection, so that
// the call fails as not sent (and a Client redials) rather than as
// uncertain. Calls that follow each other closer than this skip the look
// and its system call; a close that races them fails them as uncertain,
// as it can on any connection.
const idleCheckAfter = time.Millisecond

// lead reads replies as the connection's reader until cl is settled, or
// ctx ends, if no one else is reading, then passes the role on.
func (c *Conn) lead(ctx context.Context, cl *call) {
	cancellable := ctx.Done() != nil
	c.mu.Lock()
	if c.reading || c.err != nil {
		c.mu.Unlock()
		return
	}
	if cancellable && ctx.Err() != nil {
		// Gone already, while its command was being sent: the reply is
		// still due, and must be read.
		c.ensureReaderLocked()
		c.mu.Unlock()
		return
	}
	c.reading, c.interruptible = true, cancellable
	c.mu.Unlock()
	if cancellable {
		c.readBetweenFrames(ctx, cl)
	} else {
		for cl.state.Load() == waiting && c.readOne() {
		}
	}
	c.mu.Lock()
	c.reading = false
	c.ensureReaderLocked()
	c.mu.Unlock()
}

// readBetweenFrames reads replies until cl is settled, for a caller whose
// ctx can end: it waits on the socket only with no frame begun, where an
// interrupt (see interrupt) loses nothing.
func (c *Conn) readBetweenFrames(ctx context.Context, cl *call) {
	stop := context.AfterFunc(ctx, c.interruptFunc)
	defer func() {
		stop()
		c.mu.Lock()
		c.endInterruptLocked()
		c.interruptible = false
		c.mu.Unlock()
	}()
	for cl.state.Load() == waiting {
		if respframe.Whole(respframe.Buffered(c.br), !c.opts.resp3) {
			if !c.readOne() {
				return
			}
			continue
		}
		err := respframe.Fill(c.br)
		switch {
		case err == nil:
			continue
		case errors.Is(err, respframe.ErrBufferFull):
			return // only a reader that may stop inside a frame can go on
		}
		c.mu.Lock()
		if c.endInterruptLocked() {
			c.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
			continue // meant for a caller who read before this one
		}
		if errors.Is(err, io.EOF) && c.br.Buffered() > 0 {
			err = io.ErrUnexpectedEOF // as Read would say: a frame was begun
		}
		c.failLocked(readFailure(err))
		c.mu.Unlock()
		return
	}
}

// interrupt ends the socket wait of a reader whose context just ended. It
// runs from context.AfterFunc, and may run late, once that reader has gone:
// then it does nothing, or, if another reader whose context can end has
// come, makes that one look at its context and wait again.
func (c *Conn) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.interruptible || c.interrupted || c.err != nil {
		return
	}
	_ = c.setReadDeadlineLocked(aLongTimeAgo)
	c.interrupted = true // after: it holds the deadline it just set
}

// endInterruptLocked clears an interrupt, and reports whether there was
// one. The socket gets back the deadline it should have: an interrupt that
// came once the reply was in must not leave the idle connection a
// deadline in the past, which would fail its next look at the socket.
func (c *Conn) endInterruptLocked() bool {
	if !c.interrupted {
		return false
	}
	c.interrupted = false
	_ = c.setReadDeadlineLocked(c.readDeadlineLocked())
	return true
}

// aLongTimeAgo is a read deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// ensureReaderLocked starts a reader goroutine if replies are due and no
// one is reading them.
func (c *Conn) ensureReaderLocked() {
	if !c.direct || c.reading || c.err != nil || c.pending.len() == 0 {
		return
	}
	c.reading = true
	c.readers.Add(1)
	go c.startReader()
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
// A RESP3 push frame is no such reply: with no handler to take it, the next
// reader drops it, as readOne does.
func (c *Conn) checkIdleLocked(after time.Duration) {
	if !c.direct || c.err != nil || c.reading || c.pending.len() > 0 || after > 0 && time.Since(c.idleSince) < after {
		return
	}
	n, first, err := 1, byte(0), error(nil)
	if t, ok := respframe.NextType(c.br); ok {
		first = t // a frame already buffered
	} else {
		n, first, err = idleBytes(c.raw)
	}
	switch {
	case err != nil:
		c.failLocked(fmt.Errorf("%w: read: %w", ErrBroken, err))
	case n == 0:
		c.failLocked(fmt.Errorf("%w: server closed the connection", ErrBroken))
	case n > 0 && c.opts.resp3 && resp.Type(first) == resp.Push:
		// Left for the next reader, which drops it.
	case n > 0:
		c.failLocked(fmt.Errorf("%w: a reply arrived with no command pending", ErrBroken))
	}
}
