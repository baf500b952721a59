package conn

import (
	"context"
	"fmt"
	"time"

	"github.com/batonlock/baton/resp"
)

// readWindow is how much of a client's query Redis reads per event-loop
// pass (PROTO_IOBUF_LEN). Commands read in one pass are executed before any
// reply of that pass is written, which is what makes PING + EVAL in one
// write order the server's replies; a multi-command call must therefore not
// straddle a window boundary of its write.
const readWindow = 16 << 10

// maxSpare bounds the write buffer kept for reuse, so that one huge command
// does not pin its buffer for the connection's life.
const maxSpare = 1 << 20

// send queues the call's commands and, unless a write is already in
// progress, writes them and whatever else is queued meanwhile.
func (c *Conn) send(ctx context.Context, cl *call, cmds ...[]string) error {
	if err := ctx.Err(); err != nil {
		return err // nothing was sent
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	start := len(c.wbuf)
	for _, cmd := range cmds {
		c.wbuf = resp.AppendCommand(c.wbuf, cmd...)
	}
	if len(cmds) > 1 {
		c.keepInOneWindow(start)
	}
	if c.pending.len() == 0 && c.opts.readTimeout > 0 {
		// The reader may be blocked with no deadline; replies are due now.
		_ = c.nc.SetReadDeadline(time.Now().Add(c.opts.readTimeout))
	}
	c.pending.push(cl)
	if !c.writing {
		c.writing = true
		c.flushLocked()
		c.writing = false
	}
	return nil
}

// keepInOneWindow cuts the write before the group that starts at start when
// the group would straddle a readWindow boundary of its write.
func (c *Conn) keepInOneWindow(start int) {
	end := len(c.wbuf)
	if start > c.segStart && (start-c.segStart)/readWindow != (end-1-c.segStart)/readWindow {
		c.cuts = append(c.cuts, start)
		c.segStart = start
	}
}

// flushLocked writes the queued bytes until none are left. It drops mu
// during each write so that other callers can queue behind it.
func (c *Conn) flushLocked() {
	for len(c.wbuf) > 0 && c.err == nil {
		buf, cuts := c.wbuf, c.cuts
		c.wbuf, c.cuts, c.segStart = c.spare[:0], c.spareCuts[:0], 0
		c.mu.Unlock()
		err := c.writeSegments(buf, cuts)
		c.mu.Lock()
		if cap(buf) <= maxSpare {
			c.spare = buf[:0]
		} else {
			c.spare = nil
		}
		c.spareCuts = cuts[:0]
		if err != nil {
			c.failLocked(fmt.Errorf("%w: write: %w", ErrBroken, err))
		}
	}
}

// writeSegments writes buf with one Write per segment between cuts.
func (c *Conn) writeSegments(buf []byte, cuts []int) error {
	if c.opts.writeTimeout > 0 {
		if err := c.nc.SetWriteDeadline(time.Now().Add(c.opts.writeTimeout)); err != nil {
			return err
		}
	}
	from := 0
	for _, cut := range cuts {
		if _, err := c.nc.Write(buf[from:cut]); err != nil {
			return err
		}
		from = cut
	}
	_, err := c.nc.Write(buf[from:])
	return err
}
