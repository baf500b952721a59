package conn

// Following a failover as it happens. A primary failed over while alive
// (SENTINEL FAILOVER, a partition that heals) keeps saying it is one, and
// keeps its clients, until a sentinel next looks at it and turns it into
// a replica: about ten seconds on Redis 7.0.15. What a Client writes there
// meanwhile is lost. So a Client through sentinels keeps one connection
// to a sentinel subscribed to +switch-master, the sentinels' announcement
// of a new primary, and asks that sentinel for the primary when one comes
// and every sentinelCheckEvery besides (a message lost while the watcher
// was between sentinels, a sentinel gone silent). When the answer names
// another node, with an epoch no older, it breaks the Client's connection, so
// that the next call dials the new primary; its dial passes over
// sentinels that still name the old one.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/batonlock/baton/resp"
)

// switchChannel is the channel on which sentinels announce a new primary:
// "<master> <old ip> <old port> <new ip> <new port>".
const switchChannel = "+switch-master"

// sentinelCheckEvery is how often the watcher asks its sentinel for the
// primary with no announcement: the longest a switch whose message was
// lost goes unnoticed, with the dial timeout on top where the sentinel has
// gone silent.
const sentinelCheckEvery = 2 * time.Second

// minWatchPause is the least wait before the watcher dials the next
// sentinel, whatever the redial backoff says.
const minWatchPause = 50 * time.Millisecond

// errPrimarySwitched is why a Client broke its connection to the old
// primary: the sentinels named another. Calls in flight on it fail with an
// *UncertainError whose cause matches it and ErrBroken.
var errPrimarySwitched = fmt.Errorf("%w: the sentinels named a new primary", ErrBroken)

// watchLocked starts the watcher, once, for a Client through sentinels.
// Close stops it and waits for it.
func (c *Client) watchLocked() {
	if len(c.target.sentinels) == 0 || c.watching != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.watching, c.stopWatching = make(chan struct{}), cancel
	go c.watch(ctx, c.watching)
}

// watch follows the sentinels, one at a time, in the address's order,
// until ctx ends: it moves to the next sentinel when one fails, waiting
// between failures as the Client's redial backoff says.
func (c *Client) watch(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	failures := 0
	for i := 0; ; i++ {
		sentinel := c.target.sentinels[i%len(c.target.sentinels)]
		if c.watchOne(ctx, sentinel) {
			failures = 0
		} else {
			failures++
		}
		if ctx.Err() != nil {
			return
		}
		floor := max(c.opts.minBackoff, minWatchPause) // never spin on sentinels that refuse at once
		pause := min(floor<<min(failures, 6), max(c.opts.maxBackoff, floor))
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// watchOne subscribes to the sentinel's announcements and hands each
// answer about the primary to heard, until the connection fails or ctx
// ends. It reports whether it subscribed.
func (c *Client) watchOne(ctx context.Context, sentinel string) bool {
	announced := make(chan struct{}, 1)
	onPush := func(v resp.Value) {
		if announcesSwitch(v, c.target.master) {
			select {
			case announced <- struct{}{}:
			default: // one is pending; it will ask
			}
		}
	}
	bound := c.opts.dialTimeout
	if bound <= 0 {
		bound = sentinelCheckEvery // a silent sentinel must not keep the watcher
	}
	dialCtx, cancel := context.WithTimeout(ctx, bound)
	sc, err := dialSentinel(dialCtx, sentinel, c.target, c.opts, WithRESP3(), WithPushHandler(onPush))
	if err == nil {
		if err = sc.DoPush(dialCtx, "SUBSCRIBE", switchChannel); err != nil {
			_ = sc.Close()
		}
	}
	cancel()
	if err != nil {
		return false
	}
	defer sc.Close()
	tick := time.NewTicker(sentinelCheckEvery)
	defer tick.Stop()
	for {
		askCtx, cancel := context.WithTimeout(ctx, bound)
		p, err := queryPrimary(askCtx, sc, sentinel, c.target.master)
		cancel()
		if err != nil {
			return true
		}
		c.heard(p)
		select {
		case <-ctx.Done():
			return true
		case <-sc.Done():
			return true
		case <-announced:
		case <-tick.C:
		}
	}
}

// announcesSwitch reports whether v is a +switch-master message for
// master.
func announcesSwitch(v resp.Value, master string) bool {
	if v.Type != resp.Push || len(v.Elems) != 3 || v.Elems[0].Str != "message" || v.Elems[1].Str != switchChannel {
		return false
	}
	name, _, _ := strings.Cut(v.Elems[2].Str, " ")
	return name == master
}

// heard takes a sentinel's answer about the primary: one that names
// another node than the current connection's, with an epoch no older,
// breaks the connection, and every later dial passes over sentinels that
// name an older epoch. The epoch alone says nothing: the sentinel that
// leads a failover gives its new epoch to the old primary's address as
// soon as the replica is promoted, a second before it switches the
// address. An answer with an older epoch changes nothing: its sentinel
// lags. An answer that names another node than the last one, with an
// epoch no older, also cuts short a dial in progress, which may be
// waiting on a dead host that never answers, for the dial timeout.
func (c *Client) heard(p namedPrimary) {
	c.mu.Lock()
	c.newest = max(c.newest, p.epoch)
	var stale *Conn
	if c.conn != nil && p.epoch >= c.primary.epoch && p.addr != c.primary.addr {
		stale = c.conn // the next call finds it failed and dials
	}
	if p.epoch >= c.named.epoch {
		if c.named.addr != "" && p.addr != c.named.addr && c.cutDial != nil {
			c.cutDial(errPrimarySwitched)
		}
		c.named = p
	}
	c.mu.Unlock()
	if stale != nil {
		stale.abort(errPrimarySwitched)
	}
}
