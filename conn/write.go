package conn

import (
	"context"
	"fmt"
	"runtime"
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
	if cl.replyBy = replyBy(ctx); !cl.replyBy.IsZero() && !time.Now().Before(cl.replyBy) {
		return fmt.Errorf("reply deadline passed before sending: %w", context.DeadlineExceeded)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.queueLocked(cl, cmds); err != nil {
		return err
	}
	if !c.writing {
		c.writing = true
		if c.pending.len() > 1 {
			// Other calls are in flight, so their callers are about to
			// send again: let those that are ready queue behind this
			// one first, and write them all at once.
			c.mu.Unlock()
			runtime.Gosched()
			c.mu.Lock()
		}
		c.flushLocked()
		c.writing = false
	}
	return nil
}

// sendNoWait queues the call's commands as send does, but never waits for
// the socket: unless a write is already in progress, it writes what the
// socket takes at once and leaves the rest to a writer goroutine.
func (c *Conn) sendNoWait(cl *call, cmds [][]string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.queueLocked(cl, cmds); err != nil {
		return err
	}
	if !c.writing {
		c.writing = true
		c.flushWithoutBlockingLocked()
	}
	// Nobody may ever wait for these replies; they are read all the same.
	c.ensureReaderLocked()
	return nil
}

// queueLocked appends the commands to the write buffer and the call to the
// calls whose replies are due.
func (c *Conn) queueLocked(cl *call, cmds [][]string) error {
	c.checkIdleLocked(idleCheckAfter)
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
	idle := c.pending.len() == 0
	c.pending.push(cl)
	if !cl.replyBy.IsZero() {
		c.withReplyBy++
	}
	if idle && c.opts.readTimeout > 0 {
		c.readFrom = time.Now()
	}
	if idle || !cl.replyBy.IsZero() {
		// The reader may be blocked with no deadline, or a later one;
		// replies are due now.
		_ = c.setReadDeadlineLocked(c.readDeadlineLocked())
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

// takeLocked takes the queued bytes and their cuts for a write, leaving the
// spare buffers to queue behind it.
func (c *Conn) takeLocked() (buf []byte, cuts []int) {
	buf, cuts = c.wbuf, c.cuts
	c.wbuf, c.cuts, c.segStart = c.spare[:0], c.spareCuts[:0], 0
	return buf, cuts
}

// wroteLocked keeps a finished write's buffers for reuse, and fails the
// connection if the write failed.
func (c *Conn) wroteLocked(buf []byte, cuts []int, err error) {
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

// flushLocked writes the queued bytes until none are left. It drops mu
// during each write so that other callers can queue behind it.
func (c *Conn) flushLocked() {
	for len(c.wbuf) > 0 && c.err == nil {
		buf, cuts := c.takeLocked()
		deadline := c.writeDeadlineLocked()
		c.mu.Unlock()
		err := c.writeSegments(buf, cuts, 0, deadline)
		c.mu.Lock()
		c.wroteLocked(buf, cuts, err)
	}
}

// flushWithoutBlockingLocked is called holding the writing role. It writes
// the queued bytes as far as the socket takes them at once, and hands the
// rest, with the role, to a writer goroutine. Taking mu does not wait on
// the socket either: no one holds mu across a write that can block.
func (c *Conn) flushWithoutBlockingLocked() {
	buf, cuts := c.takeLocked()
	from := 0
	if c.raw != nil {
		c.mu.Unlock()
		from = c.writeAvailable(buf, cuts)
		c.mu.Lock()
	}
	switch {
	case c.err != nil:
		c.writing = false
	case from == len(buf) && len(c.wbuf) == 0:
		c.wroteLocked(buf, cuts, nil)
		c.writing = false
	default:
		// Whatever queued meanwhile waits behind the rest, as ever.
		c.writers.Add(1)
		go c.writeLoop(buf, cuts, from)
	}
}

// writeLoop is the writer goroutine: it holds the writing role, writes buf
// from offset from, then everything queued until nothing is left, and
// returns. Close waits for it.
func (c *Conn) writeLoop(buf []byte, cuts []int, from int) {
	defer c.writers.Done()
	c.mu.Lock()
	deadline := c.writeDeadlineLocked()
	c.mu.Unlock()
	err := c.writeSegments(buf, cuts, from, deadline)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wroteLocked(buf, cuts, err)
	c.flushLocked()
	c.writing = false
}

// writeSegments writes buf from offset from on, with one Write per segment
// between cuts, by deadline (none if zero): a segment begun by a write that
// the socket took only in part is finished by one Write.
func (c *Conn) writeSegments(buf []byte, cuts []int, from int, deadline time.Time) error {
	if from == len(buf) {
		return nil
	}
	if err := c.setWriteDeadline(deadline); err != nil {
		return err
	}
	for _, cut := range cuts {
		if cut <= from {
			continue
		}
		if _, err := c.nc.Write(buf[from:cut]); err != nil {
			return err
		}
		from = cut
	}
	_, err := c.nc.Write(buf[from:])
	return err
}

// writeAvailable writes buf, one non-blocking write per segment between
// cuts, and stops at the first the socket does not take whole. It returns
// how many bytes were written; it never waits for the socket. The tap sees
// what was written, as for any Write.
func (c *Conn) writeAvailable(buf []byte, cuts []int) int {
	// A write deadline left by an earlier write may have passed, and would
	// refuse this write; none is needed, as it cannot block.
	if err := c.setWriteDeadline(time.Time{}); err != nil {
		return 0
	}
	from := 0
	for i := 0; i <= len(cuts); i++ {
		end := len(buf)
		if i < len(cuts) {
			end = cuts[i]
		}
		n := writeNonBlocking(c.raw, buf[from:end])
		if n > 0 && c.opts.tap != nil {
			c.opts.tap(Write, buf[from:from+n])
		}
		from += n
		if from < end {
			break
		}
	}
	return from
}

// setWriteDeadline gives the socket the write deadline d, unless it has it
// already. Only the holder of the writing role calls it.
func (c *Conn) setWriteDeadline(d time.Time) error {
	if d.Equal(c.writeDeadline) {
		return nil
	}
	c.writeDeadline = d
	return c.nc.SetWriteDeadline(d)
}
