package conn

// Redis Sentinel: an address that names sentinels and a master's name
// rather than a server. Every dial asks the sentinels for the primary,
// dials it and checks that it is one, so that a connection broken by a
// failover (the sentinels kill the clients of the nodes they
// reconfigure) is dialled again to the new primary.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

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

// errNoPrimary is the error of a dial through sentinels that found no
// primary: no sentinel answered with one, or none that it named said it
// is one (ROLE). The sentinels' answers are joined to it.
var errNoPrimary = errors.New("conn: no sentinel named a primary that says it is one")

// dialPrimary asks each sentinel of t in turn for the primary, dials the
// first one named and checks that it is a primary; a sentinel that does
// not answer, or names a node that is not a primary (a failover under
// way, a sentinel that lags), is passed over for the next.
func dialPrimary(ctx context.Context, addr string, t target, o options) (*Conn, error) {
	var errs []error
	for _, sentinel := range t.sentinels {
		primary, err := askSentinel(ctx, sentinel, t, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("sentinel %s: %w", sentinel, err))
			continue
		}
		node := t
		node.sentinels, node.address = nil, primary
		node.serverName, _, _ = net.SplitHostPort(primary)
		no := o
		if no.tlsConfig != nil && no.tlsConfig.ServerName == "" {
			no.tlsConfig = no.tlsConfig.Clone()
			no.tlsConfig.ServerName = node.serverName
		}
		c, err := dialTarget(ctx, addr, node, no)
		if err != nil {
			errs = append(errs, fmt.Errorf("sentinel %s named %s: %w", sentinel, primary, err))
			continue
		}
		if err := checkPrimary(ctx, c, o.dialTimeout); err != nil {
			_ = c.Close()
			errs = append(errs, fmt.Errorf("sentinel %s named %s: %w", sentinel, primary, err))
			continue
		}
		return c, nil
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w (master %q): %w", errNoPrimary, t.master, errors.Join(errs...))
}

// askSentinel asks the sentinel at addr for the address of t's primary,
// within the dial timeout. Sentinels are reached with the address's TLS
// setting and their own credentials (sentinel_username and
// sentinel_password), never the data nodes' or their database.
func askSentinel(ctx context.Context, addr string, t target, o options) (string, error) {
	if o.dialTimeout > 0 {
		// A sentinel that accepts and never answers must not hold the
		// dial past its timeout: the next one may answer.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.dialTimeout)
		defer cancel()
	}
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
	c, err := dialTarget(ctx, addr, target{network: "tcp", address: addr, serverName: host}, so)
	if err != nil {
		return "", err
	}
	defer c.Close()
	v, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", t.master)
	if err != nil {
		return "", err
	}
	if v.IsNull() {
		return "", fmt.Errorf("it knows no master %q", t.master)
	}
	if v.Type != resp.Array || len(v.Elems) != 2 || v.Elems[0].Str == "" || v.Elems[1].Str == "" {
		return "", fmt.Errorf("a reply that names no address: %s", v)
	}
	return net.JoinHostPort(v.Elems[0].Str, v.Elems[1].Str), nil
}

// checkPrimary asks c's server for its role and fails unless it is a
// primary; within timeout, if it is not zero, as a dial is.
func checkPrimary(ctx context.Context, c *Conn, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	v, err := c.Do(ctx, "ROLE")
	if err != nil {
		return fmt.Errorf("ROLE: %w", err)
	}
	if len(v.Elems) == 0 || v.Elems[0].Str != "master" {
		role := "?"
		if len(v.Elems) > 0 {
			role = v.Elems[0].Str
		}
		return fmt.Errorf("its role is %s, not master", role)
	}
	return nil
}
