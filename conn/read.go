package conn

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/batonlock/baton/resp"
)

// readLoop decodes replies and completes calls in order until the
// connection fails or closes. It is the connection's one goroutine on a
// connection that does not read directly (see Conn.direct).
func (c *Conn) readLoop() {
	defer close(c.readerDone)
	for c.readOne() {
	}
}

// readOne reads one frame and completes the call it answers, or hands a
// push frame to the handler. It reports false once the connection has
// failed. Only the reader of the moment calls it: the reader goroutine, or
// on a direct connection whoever holds the reading role.
//
// A reply over a reader limit has been read past by the reader, so the
// stream is still in step: it fails its own call and nothing else. A push
// frame over a limit answers no call and is dropped.
func (c *Conn) readOne() bool {
	v, err := c.rd.Read()
	var lim error // the reply was over a limit: v holds only its Type
	if err != nil {
		if !errors.Is(err, resp.ErrLimit) {
			c.mu.Lock()
			c.failLocked(readFailure(err))
			c.mu.Unlock()
			return false
		}
		lim = err
	}
	if v.Type == resp.Push {
		if lim == nil && c.opts.pushHandler != nil {
			c.opts.pushHandler(v)
		}
		return true
	}
	c.mu.Lock()
	cl := c.pending.front()
	if cl == nil {
		what := v.String()
		if lim != nil {
			what = lim.Error()
		}
		c.failLocked(fmt.Errorf("%w: a reply arrived with no command pending: %.80s", ErrBroken, what))
		c.mu.Unlock()
		return false
	}
	if lim == nil && !isErrorType(v.Type) {
		// A server that greets with an error and hangs up (at its
		// maxclients, in protected mode) has not answered.
		c.answered = true
	}
	if cl.answeredByPush && !cl.commandFailed && (v.Err() != nil || lim != nil && isErrorType(v.Type)) {
		// The command itself was refused; its PING's reply is next.
		cl.replies[0], cl.commandFailed = v, true
		if lim != nil {
			cl.replies[0], cl.overLimit = resp.Value{}, lim
		}
		c.mu.Unlock()
		return true
	}
	switch {
	case lim != nil:
		if cl.overLimit == nil {
			cl.overLimit = lim
		}
	case !cl.commandFailed:
		cl.replies[cl.got] = v
	}
	cl.got++
	finished := cl.got == cl.n
	if finished {
		c.pending.pop()
		if !cl.replyBy.IsZero() {
			c.withReplyBy--
		}
		if c.pending.len() == 0 {
			c.idleSince = time.Now()
			// No reply is due: no deadline may break the idle
			// connection, nor its look at the socket.
			_ = c.setReadDeadlineLocked(time.Time{})
			c.resumeRead = false
		}
	}
	c.mu.Unlock()
	if finished {
		cl.complete(cl.overLimit)
	}
	return true
}

func isErrorType(t resp.Type) bool { return t == resp.ErrorReply || t == resp.BulkError }

func readFailure(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: server closed the connection", ErrBroken)
	}
	return fmt.Errorf("%w: read: %w", ErrBroken, err)
}

// deadlineReader gives every socket read a deadline while replies are due
// (see readDeadlineLocked), and none while the connection is idle. It
// starts no read while an interrupt is pending (see Conn.interrupt), and
// reports a read that one cut short as errInterrupted.
type deadlineReader struct{ c *Conn }

// errInterrupted is a socket read cut short, or not started, because the
// context of the caller reading ended.
var errInterrupted = errors.New("conn: read interrupted")

func (d *deadlineReader) Read(p []byte) (int, error) {
	c := d.c
	c.mu.Lock()
	if c.interrupted {
		c.mu.Unlock()
		return 0, errInterrupted
	}
	if !c.resumeRead && c.opts.readTimeout > 0 {
		c.readFrom = time.Now()
	}
	c.resumeRead = false
	err := c.setReadDeadlineLocked(c.readDeadlineLocked())
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := c.nc.Read(p)
	if err != nil && n == 0 {
		c.mu.Lock()
		if c.interrupted {
			// The wait goes on in the next read, whoever makes it, with
			// the deadline this one had: a hand-over of the reading role
			// does not restart the read timeout.
			c.resumeRead, err = true, errInterrupted
		}
		c.mu.Unlock()
	}
	return n, err
}
