package conn

import (
	"context"
	"fmt"
	"time"
)

// Direct reading. On a direct connection (a TCP or unix socket without a
// push handler) no goroutine reads while no reply is due. A caller whose
// context cannot end (Done is nil) and who finds no one reading takes the
// reading role, the mirror of the writing role: it reads the replies and
// completes the calls they answer, in order, its own and others', until
// its own has come. A lone caller thus takes its reply from the socket
// itself, with no goroutine to wake in between. A reply the connection
// does not read itself in this way is read by a reader goroutine, which
// holds the role until no reply is due: for callers whose context can end,
// which must be free to return at once while their reply is read and
// dropped, for batches that Start sent, and after a caller that read for
// itself, while replies are still due. Callers that find the role taken
// wait for their reply as on any connection.

// idleCheckAfter is how long a direct connection must have been idle for a
// call to look at its socket first (idleBytes): with no reader while idle,
// that look is what notices a server that closed the connection, so that
// the call fails as not sent (and a Client redials) rather than as
// uncertain. Calls that follow each other closer than this skip the look
// and its system call; a close that races them fails them as uncertain,
// as it can on any connection.
const idleCheckAfter = time.Millisecond

// lead reads replies as the connection's reader until cl is settled, if
// ctx cannot end and no one else is reading, then passes the role on.
func (c *Conn) lead(ctx context.Context, cl *call) {
	if ctx.Done() != nil {
		c.mu.Lock()
		c.ensureReaderLocked()
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	if c.reading || c.err != nil {
		c.mu.Unlock()
		return
	}
	c.reading = true
	c.mu.Unlock()
	for cl.state.Load() == waiting && c.readOne() {
	}
	c.mu.Lock()
	c.reading = false
	c.ensureReaderLocked()
	c.mu.Unlock()
}

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
func (c *Conn) checkIdleLocked(after time.Duration) {
	if !c.direct || c.err != nil || c.reading || c.pending.len() > 0 || after > 0 && time.Since(c.idleSince) < after {
		return
	}
	n, err := 1, error(nil) // bytes already buffered: a reply nobody asked for
	if c.rd.Buffered() == 0 {
		n, err = idleBytes(c.raw)
	}
	switch {
	case err != nil:
		c.failLocked(fmt.Errorf("%w: read: %w", ErrBroken, err))
	case n == 0:
		c.failLocked(fmt.Errorf("%w: server closed the connection", ErrBroken))
	case n > 0:
		c.failLocked(fmt.Errorf("%w: a reply arrived with no command pending", ErrBroken))
	}
}
