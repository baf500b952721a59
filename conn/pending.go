package conn

import (
	"context"
	"fmt"

	"github.com/batonlock/baton/resp"
)

// Pending is a batch of commands already on their way to the server, whose
// replies are collected with Wait.
type Pending struct {
	c     *Conn
	cl    *call
	first string // the first command's name, for errors
	more  int    // how many commands follow it
}

// Start queues several commands to be sent contiguously, as DoMulti sends
// them, and returns without waiting for the replies, nor ever for the
// socket: it is safe to call from a goroutine that must not block, such as
// another connection's push handler. If no write is in progress, it writes
// at once what the socket takes without blocking (on TCP and unix sockets);
// whatever is left, all of it on other kinds of connection (TLS), is
// written by a goroutine of the Conn. A batch nobody waits for costs
// nothing: its replies are read and dropped.
func (c *Conn) Start(cmds ...[]string) (*Pending, error) {
	if len(cmds) == 0 {
		return nil, errEmptyCommand
	}
	p, err := c.newPending(cmds)
	if err != nil {
		return nil, err
	}
	if err := c.sendNoWait(p.cl, cmds); err != nil {
		p.cl.release()
		return nil, p.wrap(err)
	}
	return &p, nil
}

func (c *Conn) start(ctx context.Context, cmds [][]string) (Pending, error) {
	p, err := c.newPending(cmds)
	if err != nil {
		return Pending{}, err
	}
	if err := c.send(ctx, p.cl, cmds...); err != nil {
		p.cl.release()
		return Pending{}, p.wrap(err)
	}
	return p, nil
}

func (c *Conn) newPending(cmds [][]string) (Pending, error) {
	for _, cmd := range cmds {
		if len(cmd) == 0 {
			return Pending{}, errEmptyCommand
		}
	}
	return Pending{c: c, cl: newCall(make([]resp.Value, len(cmds))), first: cmds[0][0], more: len(cmds) - 1}, nil
}

// Wait returns the replies in order, as DoMulti does. It must be called at
// most once. If ctx ends first, the replies are read and dropped.
func (p *Pending) Wait(ctx context.Context) ([]resp.Value, error) {
	if err := p.c.wait(ctx, p.cl); err != nil {
		return nil, p.wrap(err)
	}
	replies := p.cl.replies
	p.cl.release()
	return replies, nil
}

func (p *Pending) wrap(err error) error {
	if p.more == 0 {
		return fmt.Errorf("conn: %s: %w", p.first, err)
	}
	return fmt.Errorf("conn: %s and %d more: %w", p.first, p.more, err)
}
