package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
)

// DoMulti sends cmds contiguously, in one write (conn.Conn.DoMulti), to
// the primary that serves key's slot, and returns their replies in order.
// As with conn, error replies stay values, and the error is for the call
// as a whole. Every command of the batch should be keyless or work on keys
// of key's slot: the batch goes to one node.
//
// A MOVED reply to any command of the batch means the slot has moved: the
// Client refreshes its topology (at most once per WithRefreshInterval),
// records the slot's new primary, and sends the whole batch again, in one
// write, to the node the reply names. An ASK reply means the slot is being
// migrated and the key is already on the node it names: the batch goes
// there once, each command after an ASKING (which lets the command run on
// a node that is still importing the slot, and holds for the next command
// only), all in one write, and the map stays as it is. A command answered
// with MOVED or ASK did not run, so sending it again is safe. The other
// commands of the batch did run, and run again: keyless ones such as PING,
// and, while a slot is being migrated, those whose keys had not left yet.
// So a batch that must not run twice should hold commands that are
// redirected together, or are harmless to repeat: PING and one script on
// keys of one hash tag, say. A TRYAGAIN reply, which Redis sends for a
// multi-key command whose keys a migration has split (some moved, some
// not yet), means that command did not run either: the batch goes to the
// same node again after a pause (10ms, doubling at each retry), until the
// migration of the slot is done. Every other error reply is returned as a
// value.
//
// When a node cannot be reached (its dial fails, or its connection was
// found broken before the batch was written), nothing was sent: the Client
// refreshes its topology (as the interval allows) and sends the batch to
// the slot's primary again. A call in flight when its connection fails is
// never sent again: its commands may or may not have run, and its
// *conn.UncertainError is returned as it is. So is an error of ctx.
//
// A call tries at most 1+WithMaxRetries times; then it fails with an error
// matching ErrTooManyRetries and the last MOVED or ASK reply or
// connection error.
func (c *Client) DoMulti(ctx context.Context, key string, cmds ...[]string) ([]resp.Value, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	for _, cmd := range cmds {
		if len(cmd) == 0 {
			return nil, conn.ErrEmptyCommand
		}
	}
	name := batchName(cmds) // formatted only in an error
	slot := Slot(key)
	addr, err := c.route(ctx, slot)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", name, err)
	}
	asking := false
	for attempt := 1; ; attempt++ {
		replies, retry, err := c.send(ctx, addr, asking, cmds)
		if err != nil {
			if !retry {
				return nil, fmt.Errorf("cluster: %s on %s: %w", name, addr, err)
			}
			if attempt > c.opts.maxRetries {
				return nil, fmt.Errorf("cluster: %s: tried %d times: %w: %s: %w", name, attempt, ErrTooManyRetries, addr, err)
			}
			_ = c.refresh(ctx, false, addr) // an error here shows in the next send
			if addr, err = c.route(ctx, slot); err != nil {
				return nil, fmt.Errorf("cluster: %s: %w", name, err)
			}
			asking = false
			continue
		}
		rd, ok, err := findRedirect(replies, addr)
		if err != nil {
			return nil, fmt.Errorf("cluster: %s on %s: %w", name, addr, err)
		}
		if !ok {
			refused := tryAgain(replies)
			if refused == nil {
				return replies, nil
			}
			if attempt > c.opts.maxRetries {
				return nil, fmt.Errorf("cluster: %s: sent %d times: %w: %s: %w", name, attempt, ErrTooManyRetries, addr, refused)
			}
			if err := pause(ctx, tryAgainPause<<(attempt-1)); err != nil {
				return nil, fmt.Errorf("cluster: %s: %w", name, err)
			}
			continue
		}
		if attempt > c.opts.maxRetries {
			return nil, fmt.Errorf("cluster: %s: sent %d times: %w: %s: %w", name, attempt, ErrTooManyRetries, addr, rd.err)
		}
		if !rd.ask {
			_ = c.refresh(ctx, false, "")
			c.learn(rd.slot, rd.addr)
		}
		addr, asking = rd.addr, rd.ask
	}
}

// send sends cmds to the node at addr in one write, each after an ASKING
// if asking is set, and returns their replies. ASKING's own replies are
// dropped: each command's reply says what became of it. retry
// reports that an error left the batch unsent, so that it may be sent
// again elsewhere: a dial that failed for want of a connection (not one
// the server refused in its handshake, with an error reply), or a
// connection found broken before the write.
func (c *Client) send(ctx context.Context, addr string, asking bool, cmds [][]string) (replies []resp.Value, retry bool, err error) {
	cl, err := c.node(addr)
	if err != nil {
		return nil, false, err
	}
	cn, err := cl.Conn(ctx)
	if err != nil {
		var reply *resp.Error
		retry = ctx.Err() == nil && !errors.Is(err, conn.ErrClosed) && !errors.As(err, &reply)
		return nil, retry, err
	}
	wire := cmds
	if asking {
		wire = make([][]string, 0, 2*len(cmds))
		for _, cmd := range cmds {
			wire = append(wire, askingCommand, cmd)
		}
	}
	replies, err = cn.DoMulti(ctx, wire...)
	if err != nil {
		var uncertain *conn.UncertainError
		retry = errors.Is(err, conn.ErrBroken) && !errors.As(err, &uncertain) && ctx.Err() == nil
		return nil, retry, err
	}
	if asking {
		for i := range cmds {
			replies[i] = replies[2*i+1]
		}
		replies = replies[:len(cmds)]
	}
	return replies, false, nil
}

var askingCommand = []string{"ASKING"}

// tryAgainPause is the pause before the first retry of a batch answered
// TRYAGAIN; it doubles at each further one.
const tryAgainPause = 10 * time.Millisecond

// tryAgain returns the first TRYAGAIN reply among replies, or nil.
func tryAgain(replies []resp.Value) error {
	for _, r := range replies {
		if err := r.Err(); errors.Is(err, resp.TryAgain) {
			return err
		}
	}
	return nil
}

// pause waits d, or until ctx ends, whose error it then returns.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// batchName names a batch in errors as conn does: its first command, and
// how many follow. It formats itself only when an error is printed, so
// that a call that succeeds does not pay for it.
type batchName [][]string

func (b batchName) String() string {
	if len(b) == 1 {
		return b[0][0]
	}
	return fmt.Sprintf("%s and %d more", b[0][0], len(b)-1)
}
