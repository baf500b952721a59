package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
)

// Client is a Redis Cluster client: it routes each call by its key's slot
// to the primary serving it, over one conn.Client per primary, and follows
// MOVED and ASK replies. See the package doc.
type Client struct {
	seeds []string // set by New, read-only: where to ask for the topology last
	opts  options  // set by New, read-only

	mu sync.Mutex
	// topo is the slot map; guarded by mu, never nil after New. A refresh
	// replaces it, a MOVED reply changes one slot of it in place.
	topo *topology
	// nodes holds a conn.Client for every address used so far (primaries,
	// seeds, nodes named by a redirect), made on first use and closed by
	// Close; guarded by mu.
	nodes map[string]*conn.Client
	// refreshing is closed when the refresh in progress ends; nil when
	// there is none. Guarded by mu.
	refreshing chan struct{}
	// refreshed is when the last refresh ended, whether or not it got a
	// topology; guarded by mu.
	refreshed time.Time
	// noShards is set once a node answered CLUSTER SHARDS with an error
	// reply and CLUSTER SLOTS with a topology (Redis 6): later refreshes
	// ask CLUSTER SLOTS alone. Guarded by mu.
	noShards bool
	closed   bool // guarded by mu
}

// New returns a Client for the cluster that seeds belong to. Each seed is
// "host:port" of any node, primary or replica, not a URL (ParseURL reads
// one into seeds and options); New asks them in order for the topology
// (CLUSTER SHARDS, or CLUSTER SLOTS on servers that do not know it) and
// keeps the first that answers with one, so dead seeds cost only their
// failed dials. Connections are made with the options of
// WithConnOptions. New fails if no seed answers with a topology in which
// some online primary serves a slot; a reply that is not shaped as it
// should be gives an error matching resp.ErrProtocol. ctx bounds New.
//
// From a CLUSTER SHARDS reply, each shard's slots go to its first node
// with role "master" and health "online"; a shard with none stays
// unmapped until a later refresh finds one. The node is dialled at its
// endpoint (the address the cluster prefers for it), else its IP, else,
// when both are empty as a lone node sends them, the host of the seed that
// answered; and at its tls-port if that seed was reached on a node's
// tls-port, else at its port. Addresses are never followed to anything but
// a host name or IP address and a port.
func New(ctx context.Context, seeds []string, opts ...Option) (*Client, error) {
	if len(seeds) == 0 {
		return nil, errors.New("cluster: no seeds")
	}
	c := &Client{opts: defaultOptions(), nodes: make(map[string]*conn.Client)}
	for _, o := range opts {
		o(&c.opts)
	}
	seen := make(map[string]bool)
	for _, s := range seeds {
		if err := checkSeed(s); err != nil {
			return nil, err
		}
		if !seen[s] {
			seen[s] = true
			c.seeds = append(c.seeds, s)
		}
	}
	if err := c.refresh(ctx, refreshNow, ""); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cluster: no seed gave the topology: %w", err)
	}
	return c, nil
}

// NodeAddr returns the address (host:port) of the primary serving key's
// slot, for a caller that dials that node itself, such as a subscriber to
// the key's keyspace notifications. ctx bounds the refresh that a slot
// with no known primary triggers.
func (c *Client) NodeAddr(ctx context.Context, key string) (string, error) {
	addr, err := c.route(ctx, Slot(key))
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	return addr, nil
}

// Node returns the conn.Client of the primary serving key's slot, for a
// caller that needs that node's connection itself, such as a subscriber to
// the key's keyspace notifications, which a node publishes only to its own
// clients. It does not dial. The conn.Client is the one Do and DoMulti use
// for that node, owned by c: do not close it (Close does), and send
// nothing on it that changes the connection's state for the calls that
// share it (SELECT, CLIENT REPLY, a MULTI left open, SUBSCRIBE under
// RESP2). Under RESP3, subscriptions are fine: their messages come as push
// frames, to the WithPushHandler given in WithConnOptions, apart from the
// replies. Unlike Do, a call on it is not redirected: where the key's slot
// has moved since, it gets a MOVED reply, and the caller asks Node again.
// ctx bounds the refresh that a slot with no known primary triggers.
func (c *Client) Node(ctx context.Context, key string) (*conn.Client, error) {
	addr, err := c.route(ctx, Slot(key))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cl, err := c.node(addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return cl, nil
}

// Owner returns the address of the primary that this client last learnt
// serves key's slot, without asking any node; ok is false if it knows of
// none. The answer can be stale: a MOVED reply or a refresh updates it.
func (c *Client) Owner(key string) (addr string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.topo.addrOf(Slot(key))
}

// route returns the address of the primary that serves slot. When no
// primary is known for it, it refreshes the topology first (as the refresh
// interval allows); if still none is known, it picks a known primary (or
// the first seed), whose MOVED or CLUSTERDOWN reply then decides.
func (c *Client) route(ctx context.Context, slot int) (string, error) {
	c.mu.Lock()
	addr, ok := c.topo.addrOf(slot)
	c.mu.Unlock()
	if ok {
		return addr, nil
	}
	if err := c.refresh(ctx, refreshIfDue, ""); err != nil && ctx.Err() != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if addr, ok := c.topo.addrOf(slot); ok {
		return addr, nil
	}
	if len(c.topo.addrs) > 0 {
		return c.topo.addrs[0], nil
	}
	return c.seeds[0], nil
}

// learn records a MOVED reply's news that addr serves slot.
func (c *Client) learn(slot int, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.topo.learn(slot, addr)
}

// node returns the conn.Client for addr, making it if there is none yet.
func (c *Client) node(addr string) (*conn.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, conn.ErrClosed
	}
	if cl, ok := c.nodes[addr]; ok {
		return cl, nil
	}
	cl, err := conn.NewClient(addr, c.opts.connOpts...)
	if err != nil {
		return nil, err
	}
	c.nodes[addr] = cl
	return cl, nil
}

// Close closes every node's conn.Client, which fails their calls in flight
// with a *conn.UncertainError and waits for their goroutines. Calls after
// it fail with an error matching conn.ErrClosed. Closing again does
// nothing more.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	nodes := c.nodes
	c.nodes = nil
	c.mu.Unlock()
	var errs []error
	for _, cl := range nodes {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}

// Do runs one command on the primary serving key's slot, following
// redirects as DoMulti does. An error reply comes back as the value and
// as an error matching *resp.Error, as with conn.Client.Do. key decides
// the node only: it need not be among args, though it should be the key
// the command works on.
func (c *Client) Do(ctx context.Context, key string, args ...string) (resp.Value, error) {
	if len(args) == 0 {
		return resp.Value{}, errEmptyCommand
	}
	replies, err := c.DoMulti(ctx, key, args)
	if err != nil {
		return resp.Value{}, err
	}
	v := replies[0]
	if err := v.Err(); err != nil {
		return v, fmt.Errorf("cluster: %s: %w", args[0], err)
	}
	return v, nil
}
