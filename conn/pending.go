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

// Start sends several commands, contiguously in one write, as DoMulti does,
// but returns as soon as they are queued, without waiting for the replies.
// It does not block on the server; at most it performs the write itself.
// A batch nobody waits for costs nothing: its replies are read and dropped.
func (c *Conn) Start(cmds ...[]string) (*Pending, error) {
	if len(cmds) == 0 {
		return nil, ErrEmptyCommand
	}
	p, err := c.start(context.Background(), cmds)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func (c *Conn) start(ctx context.Context, cmds [][]string) (Pending, error) {
	for _, cmd := range cmds {
		if len(cmd) == 0 {
			return Pending{}, ErrEmptyCommand
		}
	}
	p := Pending{c: c, cl: newCall(make([]resp.Value, len(cmds))), first: cmds[0][0], more: len(cmds) - 1}
	if err := c.send(ctx, p.cl, cmds...); err != nil {
		p.cl.release()
		return Pending{}, p.wrap(err)
	}
	return p, nil
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
