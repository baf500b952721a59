package lock

import (
	"context"
	"errors"

	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// knowsSPublish reports whether the node that c reaches has the SPUBLISH
// command. COMMAND INFO answers a nil for a command the server lacks.
func knowsSPublish(ctx context.Context, c commander) (bool, error) {
	v, err := c.Do(ctx, "COMMAND", "INFO", "SPUBLISH")
	var refused *resp.Error
	if errors.As(err, &refused) {
		return false, nil // COMMAND is not ours to use: plain channels work everywhere
	}
	if err != nil {
		return false, err
	}
	return v.Type == resp.Array && len(v.Elems) == 1 && !v.Elems[0].IsNull(), nil
}

// directedWaiter registers a waiter for hand-offs on sub: under shard
// channels on one of the lock's own, in its slot (<lock>:to:<process
// channel>), else on the process's channel.
func (c *claim) directedWaiter(ctx context.Context, sub *subscriber.Subscriber) (*subscriber.Waiter, error) {
	topic := subscriber.Topic{Directed: true}
	if c.l.sharded {
		topic.Channel, topic.Shard = c.names.lock+":to:", true
	}
	return sub.Watch(ctx, topic)
}

// watchRequests registers a waiter for requests on the lock (its wanted
// channel), on a shard channel or a plain one as the Locker publishes.
func (c *claim) watchRequests(ctx context.Context, sub *subscriber.Subscriber) (*subscriber.Waiter, error) {
	return sub.Watch(ctx, subscriber.Topic{Channel: c.names.wanted, Shard: c.l.sharded})
}

// listenAttempts bounds how often a claim looks for the node to listen on
// when the one it asked refused a shard channel's subscription.
const listenAttempts = 3

// listen runs subscribe, which registers the claim's waiters on the
// Subscriber of the key's node. A node that answers MOVED or ASK to a
// shard channel's SSUBSCRIBE does not serve the lock's slot, or not
// wholly: the cluster client learns where the slot went from a command on
// the lock's key, and the claim asks again, a few times.
func (c *claim) listen(ctx context.Context, subscribe func(*subscriber.Subscriber) error) error {
	var err error
	for range listenAttempts {
		var sub *subscriber.Subscriber
		if sub, err = c.l.nodes.subscriber(ctx, c.names.lock); err != nil {
			return err
		}
		if err = subscribe(sub); !errors.Is(err, resp.Moved) && !errors.Is(err, resp.Ask) {
			return err
		}
		if _, err := c.cmd.Do(ctx, "PTTL", c.names.lock); err != nil {
			return err
		}
	}
	return err
}
