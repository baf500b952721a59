package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// clustered is the backend of a Redis Cluster. A lock's commands go to the
// primary of its slot through the cluster client, which follows MOVED and
// ASK. Keyspace events are published only by the node that holds the key,
// so each primary that holds a watched lock gets a Subscriber of its own,
// made on first use and kept until Close. Hand-offs and requests are
// published on the key's node too (by SPUBLISH where the nodes know it,
// see publishing), so that node's Subscriber hears all a waiter needs.
type clustered struct {
	client  *cluster.Client
	subOpts []subscriber.Option // for each node's Subscriber

	mu     sync.Mutex
	subs   map[string]*subscriber.Subscriber // guarded by mu: by node address
	addrs  map[*subscriber.Subscriber]string // guarded by mu: the inverse of subs
	closed bool                              // guarded by mu
}

func newClustered(c *cluster.Client, subOpts []subscriber.Option) *clustered {
	return &clustered{
		client:  c,
		subOpts: subOpts,
		subs:    map[string]*subscriber.Subscriber{},
		addrs:   map[*subscriber.Subscriber]string{},
	}
}

// slotCommander is the cluster client bound to one lock's slot.
type slotCommander struct {
	client *cluster.Client
	key    string
}

func (s slotCommander) Do(ctx context.Context, args ...string) (resp.Value, error) {
	return s.client.Do(ctx, s.key, args...)
}

func (s slotCommander) DoMulti(ctx context.Context, cmds ...[]string) ([]resp.Value, error) {
	return s.client.DoMulti(ctx, s.key, cmds...)
}

func (b *clustered) commander(key string) commander { return slotCommander{b.client, key} }

func (b *clustered) node(ctx context.Context, key string) (*conn.Client, error) {
	return b.client.Node(ctx, key)
}

func (b *clustered) contended(lockName string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		if s.Hears(lockName) {
			return true
		}
	}
	return false
}

// subscriber returns the Subscriber of the node that serves key, dialing
// one if there is none yet. The dial happens outside mu, so that a node
// that does not answer holds up only the callers that need it.
func (b *clustered) subscriber(ctx context.Context, key string) (*subscriber.Subscriber, error) {
	addr, err := b.client.NodeAddr(ctx, key)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	s, ok := b.subs[addr]
	closed := b.closed
	b.mu.Unlock()
	switch {
	case closed:
		return nil, errLockerClosed
	case ok:
		return s, nil
	}
	s, err = subscriber.New(ctx, addr, b.subOpts...)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", addr, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = s.Close()
		return nil, errLockerClosed
	}
	if other, ok := b.subs[addr]; ok {
		_ = s.Close() // another caller dialed it first
		return other, nil
	}
	b.subs[addr], b.addrs[s] = s, addr
	return s, nil
}

func (b *clustered) subscriberMade(key string) (*subscriber.Subscriber, bool) {
	addr, ok := b.client.Owner(key)
	if !ok {
		return nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.subs[addr]
	return s, ok
}

func (b *clustered) stale(s *subscriber.Subscriber, key string) bool {
	owner, ok := b.client.Owner(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	return ok && owner != b.addrs[s]
}

// clusterRecheck bounds a fast waiter's sleep on a cluster. A slot can
// move to another node while its waiters sleep, and the old node never
// says so: the release they wait for is then published where they do not
// listen. The attempt after the sleep finds the slot's new node (the
// cluster client follows the MOVED reply), and the waiter listens there.
// So a migration costs a waiter at most this much of a wait.
const clusterRecheck = time.Second

func (*clustered) recheck() time.Duration { return clusterRecheck }

// interrupt closes the cluster client: a cluster has no single connection
// to break. The leases Close then finds still held are left to their TTL.
func (b *clustered) interrupt() { _ = b.client.Close() }

func (b *clustered) close() error {
	b.mu.Lock()
	b.closed = true
	subs := b.subs
	b.subs, b.addrs = nil, nil
	b.mu.Unlock()
	var errs []error
	for _, s := range subs {
		errs = append(errs, s.Close())
	}
	return errors.Join(append(errs, b.client.Close())...)
}
