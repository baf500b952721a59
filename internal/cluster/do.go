package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/replydeadline"
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
// keys of one hash tag, say.
//
// Some replies say that the cluster cannot serve the command now, and
// that it did not run: TRYAGAIN (a multi-key command whose keys a
// migration has split, some moved and some not yet, for as long as the
// slot is open), CLUSTERDOWN (a slot without a primary, on every node
// while a failover runs, with the default cluster-require-full-coverage),
// LOADING (a node reading its data at start), MASTERDOWN and READONLY (a
// primary demoted under the call, which now serves as a replica). The
// batch is sent again after a pause (10ms, doubling up to 100ms), after a
// refresh of the topology for all but TRYAGAIN and LOADING, for as long
// as ctx allows and, if ctx carries one, within its reply deadline
// (conn.WithReplyDeadline); a batch refused still by then returns the
// last refusal, which matches its resp.Prefix. These waits count no
// retry. Every other error reply is returned as a value.
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
			return nil, errEmptyCommand
		}
	}
	name := batchName(cmds) // formatted only in an error
	slot := Slot(key)
	addr, err := c.route(ctx, slot)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", name, err)
	}
	asking := false
	var w unavailableWait
	for attempt := 1; ; attempt++ {
		replies, retry, err := c.send(ctx, addr, asking, cmds)
		if err != nil {
			if !retry {
				return nil, fmt.Errorf("cluster: %s on %s: %w", name, addr, err)
			}
			if attempt > c.opts.maxRetries {
				return nil, fmt.Errorf("cluster: %s: tried %d times: %w: %s: %w", name, attempt, ErrTooManyRetries, addr, err)
			}
			_ = c.refresh(ctx, refreshIfDue, addr) // an error here shows in the next send
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
			refused := notNow(replies)
			if refused == nil {
				return replies, nil
			}
			if !w.pause(ctx) {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("cluster: %s on %s: still refused after %v: %w: %w", name, addr, w.waited(), refused, err)
				}
				return nil, fmt.Errorf("cluster: %s on %s: still refused after %v, at the reply deadline: %w", name, addr, w.waited(), refused)
			}
			attempt-- // a wait, not a retry
			if staleTopology(refused) {
				_ = c.refresh(ctx, refreshIfDue, "")
				if addr, err = c.route(ctx, slot); err != nil {
					return nil, fmt.Errorf("cluster: %s: %w", name, err)
				}
				asking = false
			}
			continue
		}
		if attempt > c.opts.maxRetries {
			return nil, fmt.Errorf("cluster: %s: sent %d times: %w: %s: %w", name, attempt, ErrTooManyRetries, addr, rd.err)
		}
		if !rd.ask {
			_ = c.refresh(ctx, refreshIfDue, "")
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

// notNow returns the first reply among replies that says the cluster
// cannot serve its command now, which did not run (see DoMulti), or nil.
func notNow(replies []resp.Value) error {
	for _, r := range replies {
		if err := r.Err(); err != nil && RefusedForNow(err) {
			return err
		}
	}
	return nil
}

// RefusedForNow reports whether err is, or wraps, a reply by which the
// cluster says that it cannot serve a command now and that the command
// did not run: TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN or READONLY (see
// DoMulti). DoMulti returns such an error once the caller's context or
// reply deadline ends the waits; a caller with time of its own may send
// the command again.
func RefusedForNow(err error) bool {
	for _, p := range notNowPrefixes {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}

// The error codes of a cluster in flux that resp leaves to a Prefix of
// one's own: no user of a single server branches on them.
const (
	tryAgain    resp.Prefix = "TRYAGAIN"
	clusterDown resp.Prefix = "CLUSTERDOWN"
	masterDown  resp.Prefix = "MASTERDOWN"
)

var notNowPrefixes = []resp.Prefix{tryAgain, clusterDown, resp.Loading, masterDown, resp.ReadOnly}

// staleTopology reports whether a refusal may mean that the slot has
// another primary now: after a failover (CLUSTERDOWN while it runs), or a
// demotion (READONLY, MASTERDOWN).
func staleTopology(refused error) bool {
	return errors.Is(refused, clusterDown) || errors.Is(refused, resp.ReadOnly) || errors.Is(refused, masterDown)
}

// unavailableWait paces the resends of a batch that the cluster refused
// for now: 10ms, doubling up to 100ms.
type unavailableWait struct {
	next  time.Duration
	total time.Duration
}

const (
	firstUnavailablePause = 10 * time.Millisecond
	maxUnavailablePause   = 100 * time.Millisecond
)

// pause waits before the next resend, and reports false, at once, if ctx
// has ended or its reply deadline would pass first.
func (w *unavailableWait) pause(ctx context.Context) bool {
	w.next = min(max(2*w.next, firstUnavailablePause), maxUnavailablePause)
	if by := replydeadline.Of(ctx); !by.IsZero() && time.Until(by) <= w.next {
		return false
	}
	if pause(ctx, w.next) != nil {
		return false
	}
	w.total += w.next
	return true
}

func (w *unavailableWait) waited() time.Duration { return w.total }

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
