package conn

// Redis Sentinel: an address that names sentinels and a master's name
// rather than a server. Every dial asks the sentinels for the primary,
// dials it and checks that it is one, so that a connection broken by a
// failover (the sentinels kill the clients of the nodes they
// reconfigure) is dialled again to the new primary. A Client also
// listens to the sentinels' announcements (sentinel_watch.go).

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonlock/baton/internal/urltext"
	"github.com/batonlock/baton/resp"
)

// defaultSentinelPort is a sentinel's port where the address gives none.
const defaultSentinelPort = "26379"

// parseSentinel reads the sentinels, the master's name and the database
// of redis+sentinel://[user[:password]@]host[:port][,host[:port]...]/name[/db]
// into t.
func (t *target) parseSentinel(u *url.URL) error {
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return errors.New("an empty sentinel address")
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: the default one. A bare IPv6 address is written
			// in brackets.
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultSentinelPort
		}
		if host == "" {
			return fmt.Errorf("sentinel %q has no host", h)
		}
		t.sentinels = append(t.sentinels, net.JoinHostPort(host, port))
	}
	name, db, _ := strings.Cut(strings.Trim(u.Path, "/"), "/")
	if name == "" {
		return errors.New("no master name: want redis+sentinel://host:port,.../name")
	}
	t.master = name
	if db != "" {
		n, err := parseDB(db)
		if err != nil {
			return err
		}
		t.db = n
	}
	t.network = "tcp"
	t.useTLS = u.Scheme == "rediss+sentinel"
	return nil
}

// errNoPrimary is matched by the error of a dial through sentinels that
// found no primary: no sentinel answered with one, or none that it named
// said it is one (ROLE). It is a *noPrimaryError.
var errNoPrimary = errors.New("conn: no sentinel named a primary that says it is one")

// noPrimaryError is the error of a dial through sentinels that found no
// primary, with each sentinel's answer.
type noPrimaryError struct {
	master string
	// named is whether some sentinel named a primary, which could not be
	// reached or said it is none: a failover under way, whose end a
	// Client waits for (see Client.awaitPrimary).
	named bool
	errs  []error
}

func (e *noPrimaryError) Error() string {
	return fmt.Sprintf("%v (master %q): %v", errNoPrimary, e.master, errors.Join(e.errs...))
}

// Unwrap gives errNoPrimary and the sentinels' errors, so that errors.Is
// finds a refused password among them.
func (e *noPrimaryError) Unwrap() []error { return append([]error{errNoPrimary}, e.errs...) }

// namedPrimary is a sentinel's answer: the primary's address, and the
// configuration epoch that made it the primary, which every failover
// raises. A sentinel that lags behind a failover names the old primary
// with the old epoch.
type namedPrimary struct {
	by    string // the sentinel that named it
	addr  string // host:port
	epoch int64
}

// sentinelView is what a Client knows of the sentinels beyond what they
// answer at a dial: the newest epoch heard of, and a promotion announced
// before the sentinels name the promoted node (see Client.heardPromotion).
type sentinelView struct {
	newest int64
	// promoted is the replica a sentinel announced it promoted, at the
	// epoch of that failover; superseded is the primary it replaces, at
	// the same epoch. Both zero when none is pending.
	promoted, superseded namedPrimary
}

// promotionPatience is how long a promotion announced stands in view
// while no sentinel names the promoted node: they name it within about a
// second of the announcement (the leader at its switch, the others at its
// next hello), and one that cannot be reached meanwhile has failed, or
// the announcement was false.
const promotionPatience = 5 * time.Second

// stale reports whether p names the primary a pending promotion replaced,
// at no newer epoch: the leading sentinel names it so until every replica
// follows the new primary, which takes seconds under load, while the old
// primary, failed over alive, still says it is one.
func (v sentinelView) stale(p namedPrimary) bool {
	return v.superseded.addr != "" && p.addr == v.superseded.addr && p.epoch <= v.superseded.epoch
}

// dialPrimary asks each sentinel of t in turn for the primary, dials the
// first one named and checks that it is a primary; a sentinel that does
// not answer, or names a node that is not a primary (a failover under
// way, a sentinel that lags), is passed over for the next. An answer with
// an epoch older than the newest a Client has heard of is tried only once
// no sentinel gave a newer one that works: the old primary of a failover
// says it is one until the sentinels reconfigure it, seconds later. A
// promotion the Client heard announced is dialled first, and an answer
// that still names the primary it replaced is not dialled at all (a
// failover under way, whose end the Client waits for). A promoted node
// that says it is no primary was not promoted after all, or was demoted
// since (a sentinel announces a promotion only once the node says it is
// the primary): the promotion is dropped from view, and the sentinels'
// answers are taken as they come. One that cannot be reached for now
// (everyone redials it at once after a failover) keeps it: the Client
// waits for it, paced, until the sentinels name it, or name a newer
// epoch, or promotionPatience has passed.
func dialPrimary(ctx context.Context, t target, o options, view *sentinelView) (*Conn, namedPrimary, error) {
	var (
		none   = &noPrimaryError{master: t.master}
		behind []namedPrimary
	)
	if view.promoted.addr != "" {
		if c, err := dialNamed(ctx, t, o, view.promoted); err == nil {
			return c, view.promoted, nil
		} else {
			none.named = true // a failover under way: a Client waits
			none.errs = append(none.errs, fmt.Errorf("%w (announced as promoted)", err))
			if errors.Is(err, errNotPrimary) {
				view.promoted, view.superseded = namedPrimary{}, namedPrimary{}
			}
		}
	}
	for _, sentinel := range t.sentinels {
		p, err := askSentinel(ctx, sentinel, t, o)
		if err != nil {
			none.errs = append(none.errs, fmt.Errorf("sentinel %s: %w", sentinel, err))
			continue
		}
		none.named = true
		switch {
		case view.stale(p):
			none.errs = append(none.errs, fmt.Errorf("sentinel %s named %s, which a promotion at epoch %d replaced", p.by, p.addr, view.superseded.epoch))
			continue
		case p.epoch < view.newest:
			behind = append(behind, p)
			continue
		}
		if c, err := dialNamed(ctx, t, o, p); err == nil {
			return c, p, nil
		} else {
			none.errs = append(none.errs, err)
		}
	}
	slices.SortStableFunc(behind, func(a, b namedPrimary) int { return cmp.Compare(b.epoch, a.epoch) })
	for _, p := range behind {
		if c, err := dialNamed(ctx, t, o, p); err == nil {
			return c, p, nil
		} else {
			none.errs = append(none.errs, fmt.Errorf("%w (epoch %d, behind %d)", err, p.epoch, view.newest))
		}
	}
	if err := ctx.Err(); err != nil {
		none.errs = append(none.errs, err)
	}
	return nil, namedPrimary{}, none
}

// The pauses between the dials of a Client that waits for a failover to
// end: from the first to the longest, doubling.
const (
	firstFailoverPause = 50 * time.Millisecond
	maxFailoverPause   = 500 * time.Millisecond
)

// awaitPrimary dials the primary the sentinels name. While they name one
// that cannot be reached or says it is none, a failover is under way (or
// a sentinel lags): it asks again, paced, for as long as ctx allows, as
// a cluster's calls wait out CLUSTERDOWN, so that a call or a release
// made during a failover lands on the new primary rather than failing at
// once. Where no sentinel names a primary at all (none answers, none
// knows the name), it fails at once: the address is wrong, not the
// moment. A dial still waiting when the watcher hears the sentinels name
// another primary is cut short and made again (dialUntilSwitch). Close
// ends the wait.
func (c *Client) awaitPrimary(ctx context.Context) (*Conn, namedPrimary, error) {
	addr := c.addr
	pause := firstFailoverPause
	var last *noPrimaryError // the answers of the last dial that ended of itself
	ended := func(none *noPrimaryError) error {
		switch {
		case last != nil:
			last.errs = append(last.errs, ctx.Err())
			return last
		case none != nil:
			return none // the ctx's error is among its own
		default:
			return &DialError{Addr: addr.String(), Err: ctx.Err()}
		}
	}
	cuts := 0
	for {
		cn, p, cut, err := c.dialUntilSwitch(ctx)
		wait := pause
		if cut {
			// The sentinels named another primary while this dial
			// waited on the old one (a dead host that never answers
			// keeps a dial for its whole timeout): ask them again, at
			// once the first time, then paced, so that sentinels whose
			// answers keep changing cannot keep the Client dialling.
			if err == nil {
				_ = cn.Close()
			}
			if cuts++; cuts == 1 {
				wait = 0
			}
		} else {
			var none *noPrimaryError
			switch {
			case !errors.As(err, &none):
				return cn, p, err
			case ctx.Err() != nil:
				return nil, namedPrimary{}, ended(none)
			case !none.named:
				return nil, namedPrimary{}, none
			}
			last = none
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, namedPrimary{}, ended(nil)
		case <-c.closing:
			t.Stop()
			return nil, namedPrimary{}, ErrClosed
		}
		if wait > 0 {
			pause = min(2*pause, maxFailoverPause)
		}
	}
}

// dialUntilSwitch is dialPrimary, cut short if the watcher hears the
// sentinels name another primary meanwhile; cut reports whether it was,
// while ctx had not ended.
func (c *Client) dialUntilSwitch(ctx context.Context) (cn *Conn, p namedPrimary, cut bool, err error) {
	dialCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c.mu.Lock()
	if c.promoted.addr != "" && time.Since(c.promotedAt) > promotionPatience {
		// No sentinel has named it, and it could not be reached.
		c.promoted, c.superseded = namedPrimary{}, namedPrimary{}
	}
	view := sentinelView{newest: c.newest, promoted: c.promoted, superseded: c.superseded}
	c.cutDial = cancel
	c.mu.Unlock()
	promoted := view.promoted
	cn, p, err = dialPrimary(dialCtx, c.target, c.opts, &view)
	c.mu.Lock()
	c.cutDial = nil
	if view.promoted.addr == "" && promoted.addr != "" && c.promoted == promoted {
		c.promoted, c.superseded = namedPrimary{}, namedPrimary{} // not promoted after all
	}
	c.mu.Unlock()
	return cn, p, ctx.Err() == nil && errors.Is(context.Cause(dialCtx), errPrimarySwitched), err
}

// dialNamed dials the primary p names, with t's credentials and database,
// and checks that it says it is a primary.
func dialNamed(ctx context.Context, t target, o options, p namedPrimary) (*Conn, error) {
	node := t
	node.sentinels, node.address = nil, p.addr
	node.serverName, _, _ = net.SplitHostPort(p.addr)
	if o.tlsConfig != nil && o.tlsConfig.ServerName == "" {
		o.tlsConfig = o.tlsConfig.Clone()
		o.tlsConfig.ServerName = node.serverName
	}
	c, err := dialTarget(ctx, urltext.NewAddress(p.addr), node, o)
	if err != nil {
		return nil, fmt.Errorf("sentinel %s named %s: %w", p.by, p.addr, err)
	}
	if err := checkPrimary(ctx, c, o.dialTimeout); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("sentinel %s named %s: %w", p.by, p.addr, err)
	}
	return c, nil
}

// askSentinel asks the sentinel at addr for t's primary, within the dial
// timeout.
func askSentinel(ctx context.Context, addr string, t target, o options) (namedPrimary, error) {
	ctx, cancel := withTimeout(ctx, o.dialTimeout)
	defer cancel()
	c, err := dialSentinel(ctx, addr, t, o)
	if err != nil {
		return namedPrimary{}, err
	}
	defer c.Close()
	return queryPrimary(ctx, c, addr, t.master)
}

// dialSentinel dials the sentinel at addr. Sentinels are reached with the
// address's TLS setting and their own credentials (sentinel_username and
// sentinel_password), never the data nodes' or their database, and with
// o's timeouts; extra adds options (RESP3 and a push handler, to
// subscribe).
func dialSentinel(ctx context.Context, addr string, t target, o options, extra ...Option) (*Conn, error) {
	so := defaultOptions()
	so.dialTimeout, so.readTimeout, so.writeTimeout = o.dialTimeout, o.readTimeout, o.writeTimeout
	so.username, so.password = t.sentinelUsername, t.sentinelPassword
	host, _, _ := net.SplitHostPort(addr)
	if o.tlsConfig != nil {
		so.tlsConfig = o.tlsConfig.Clone()
		so.tlsConfig.ServerName = host
	} else if t.useTLS {
		so.tlsConfig = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	for _, opt := range extra {
		opt(&so)
	}
	return dialTarget(ctx, urltext.NewAddress(addr), target{network: "tcp", address: addr, serverName: host}, so)
}

// queryPrimary asks the sentinel on c (at addr) for master's primary and
// its epoch: SENTINEL MASTER, whose reply is a map under RESP3 and a flat
// list of fields and values under RESP2.
func queryPrimary(ctx context.Context, c *Conn, addr, master string) (namedPrimary, error) {
	v, err := c.Do(ctx, "SENTINEL", "MASTER", master)
	if err != nil {
		return namedPrimary{}, err
	}
	if (v.Type != resp.Array && v.Type != resp.Map) || len(v.Elems)%2 != 0 {
		return namedPrimary{}, fmt.Errorf("SENTINEL MASTER: a reply that is no list of fields: %s", v)
	}
	fields := make(map[string]string, len(v.Elems)/2)
	for i := 0; i < len(v.Elems); i += 2 {
		fields[v.Elems[i].Str] = v.Elems[i+1].Str
	}
	host, port := fields["ip"], fields["port"]
	if host == "" || port == "" {
		return namedPrimary{}, fmt.Errorf("SENTINEL MASTER: a reply that names no address: %s", v)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return namedPrimary{}, fmt.Errorf("SENTINEL MASTER: port %q is out of range", port)
	}
	epoch, err := strconv.ParseInt(fields["config-epoch"], 10, 64)
	if err != nil || epoch < 0 {
		return namedPrimary{}, fmt.Errorf("SENTINEL MASTER: config-epoch %q is no epoch", fields["config-epoch"])
	}
	return namedPrimary{by: addr, addr: net.JoinHostPort(host, port), epoch: epoch}, nil
}

// checkPrimary asks c's server for its role and fails unless it is a
// primary; within timeout, if it is not zero, as a dial is.
func checkPrimary(ctx context.Context, c *Conn, timeout time.Duration) error {
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	v, err := c.Do(ctx, "ROLE")
	if err != nil {
		return fmt.Errorf("ROLE: %w", err)
	}
	if len(v.Elems) == 0 || v.Elems[0].Str != "master" {
		role := "?"
		if len(v.Elems) > 0 {
			role = v.Elems[0].Str
		}
		return fmt.Errorf("its role is %s, %w", role, errNotPrimary)
	}
	return nil
}

// errNotPrimary is matched by the error of a node named as the primary
// that says it is none.
var errNotPrimary = errors.New("not master")

// withTimeout bounds ctx by d, unless d is zero (no bound).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
