package conn

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/batonlock/baton/resp"
)

// readLoop decodes replies and completes calls in order until the
// connection fails or closes. It is the connection's one goroutine.
func (c *Conn) readLoop() {
	defer close(c.readerDone)
	for {
		v, err := c.rd.Read()
		if err != nil {
			c.mu.Lock()
			c.failLocked(readFailure(err))
			c.mu.Unlock()
			return
		}
		if v.Type == resp.Push {
			if c.opts.pushHandler != nil {
				c.opts.pushHandler(v)
			}
			continue
		}
		c.mu.Lock()
		cl := c.pending.front()
		if cl == nil {
			c.failLocked(fmt.Errorf("%w: a reply arrived with no command pending: %.80s", ErrBroken, v.String()))
			c.mu.Unlock()
			return
		}
		if cl.answeredByPush && !cl.commandFailed && v.Err() != nil {
			// The command itself was refused; its PING's reply is next.
			cl.replies[0], cl.commandFailed = v, true
			c.mu.Unlock()
			continue
		}
		if !cl.commandFailed {
			cl.replies[cl.got] = v
		}
		cl.got++
		finished := cl.got == cl.n
		if finished {
			c.pending.pop()
		}
		c.mu.Unlock()
		if finished {
			cl.complete(nil)
		}
	}
}

func readFailure(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: server closed the connection", ErrBroken)
	}
	return fmt.Errorf("%w: read: %w", ErrBroken, err)
}

// deadlineReader gives every socket read a deadline while replies are due,
// and none while the connection is idle.
type deadlineReader struct{ c *Conn }

func (d *deadlineReader) Read(p []byte) (int, error) {
	c := d.c
	c.mu.Lock()
	var deadline time.Time
	if c.pending.len() > 0 {
		deadline = time.Now().Add(c.opts.readTimeout)
	}
	err := c.nc.SetReadDeadline(deadline)
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return c.nc.Read(p)
}
