package conn

// Following a failover as it happens. A primary failed over while alive
// (SENTINEL FAILOVER, a partition that heals) keeps saying it is one, and
// keeps its clients, until a sentinel next looks at it and turns it into
// a replica: about ten seconds on Redis 7.0.15. What a Client writes there
// meanwhile is lost. So a Client through sentinels keeps one connection
// to a sentinel subscribed to +switch-master, the sentinels' announcement
// of a new primary, and to +promoted-slave, the leading sentinel's
// announcement of the replica it promoted (see promotedChannel), and
// asks that sentinel for the primary when one comes
// and every sentinelCheckEvery besides (a message lost while the watcher
// was between sentinels, a sentinel gone silent). When the answer names
// another node, with an epoch no older, it breaks the Client's connection, so
// that the next call dials the new primary; its dial passes over
// sentinels that still name the old one.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/batonlock/baton/resp"
)

// switchChannel is the channel on which sentinels announce a new primary:
// "<master> <old ip> <old port> <new ip> <new port>".
const switchChannel = "+switch-master"

// promotedChannel is the channel on which the sentinel that leads a
// failover announces the replica it promoted, as soon as the replica says
// it is the primary: "slave <ip>:<port> <ip> <port> @ <master> <old ip>
// <old port>". It announces the switch only once every other replica
// follows the new primary, seconds later under load (a full sync each),
// and meanwhile names the old primary, which, failed over alive, still
// says it is one and takes writes that are lost. The other sentinels
// switch when the leader's next hello reaches them, about when it
// announces the promotion.
const promotedChannel = "+promoted-slave"

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
	promotions := make(chan promotion, 1)
	onPush := func(v resp.Value) {
		if pr, ok := announcesPromotion(v, c.target.master); ok {
			select {
			case <-promotions: // the newest replaces one not yet taken
			default:
			}
			promotions <- pr
			return
		}
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
		if err = sc.DoPush(dialCtx, "SUBSCRIBE", switchChannel, promotedChannel); err != nil {
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
	var promoted *promotion // announced, to be taken with the next answer
	for {
		askCtx, cancel := context.WithTimeout(ctx, bound)
		p, err := queryPrimary(askCtx, sc, sentinel, c.target.master)
		cancel()
		if err != nil {
			return true
		}
		if promoted != nil {
			c.heardPromotion(*promoted, p)
			promoted = nil
		} else {
			c.heard(p)
		}
		select {
		case <-ctx.Done():
			return true
		case <-sc.Done():
			return true
		case pr := <-promotions:
			promoted = &pr
		case <-announced:
		case <-tick.C:
		}
	}
}

// promotion is a +promoted-slave announcement: the replica promoted, and
// the primary it replaces, both host:port.
type promotion struct {
	replica, over string
}

// announcesPromotion reads v as a +promoted-slave message for master.
func announcesPromotion(v resp.Value, master string) (promotion, bool) {
	if v.Type != resp.Push || len(v.Elems) != 3 || v.Elems[0].Str != "message" || v.Elems[1].Str != promotedChannel {
		return promotion{}, false
	}
	f := strings.Fields(v.Elems[2].Str)
	if len(f) != 8 || f[0] != "slave" || f[4] != "@" || f[5] != master || !isPort(f[3]) || !isPort(f[7]) {
		return promotion{}, false
	}
	return promotion{replica: net.JoinHostPort(f[2], f[3]), over: net.JoinHostPort(f[6], f[7])}, true
}

// isPort reports whether s is a TCP port, 1 to 65535.
func isPort(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n > 0
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

// heardPromotion takes a promotion the watcher's sentinel announced, with
// that sentinel's answer about the primary, asked just after. While the
// answer still names the primary the promotion replaces (the leading
// sentinel does until its switch), the promoted replica is the primary
// (it says so: the sentinel announces it only then): the connection to
// the old one breaks, a dial to it is cut short, and the next dial goes
// to the promoted replica, passing over answers that name the old one at
// the promotion's epoch (see sentinelView). An answer that names another
// node already is taken as any answer is.
func (c *Client) heardPromotion(pr promotion, p namedPrimary) {
	if p.addr != pr.over {
		c.heard(p)
		return
	}
	c.mu.Lock()
	c.newest = max(c.newest, p.epoch)
	if p.epoch < c.superseded.epoch || p.epoch < c.named.epoch {
		c.mu.Unlock()
		return // an older failover's
	}
	c.promoted = namedPrimary{by: p.by, addr: pr.replica, epoch: p.epoch}
	c.superseded, c.promotedAt = p, time.Now()
	var stale *Conn
	if c.conn != nil && c.primary.addr == pr.over {
		stale = c.conn
	}
	if c.cutDial != nil && c.named.addr != pr.replica {
		c.cutDial(errPrimarySwitched)
	}
	c.named = c.promoted
	c.mu.Unlock()
	if stale != nil {
		stale.abort(errPrimarySwitched)
	}
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
	view := sentinelView{superseded: c.superseded}
	switch {
	case view.stale(p):
		// The leading sentinel, before its switch: the promotion
		// stands.
		c.mu.Unlock()
		return
	case c.superseded.addr != "" && p.epoch >= c.superseded.epoch:
		// The sentinels name the promoted node now, or a later
		// failover's: the announcement has served.
		c.promoted, c.superseded = namedPrimary{}, namedPrimary{}
	}
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
