package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/resp"
)

// isClusterURL reports whether addr names a Redis Cluster
// (redis+cluster:// or rediss+cluster://, see Open).
func isClusterURL(addr string) bool {
	scheme, _, ok := strings.Cut(addr, "://")
	return ok && (scheme == "redis+cluster" || scheme == "rediss+cluster")
}

// openCluster is Open on a Redis Cluster. The options of WithConnOptions
// follow the URL's, so they win where both set the same thing.
//
// Hand-offs and requests go by SPUBLISH on shard channels in each lock's
// slot where the primary of slot 0 knows the command (Redis 7 and later),
// and by PUBLISH otherwise (see publishing): every node of a cluster is
// meant to run one version.
//
// The eviction check asks the primary of slot 0 alone: a cluster's nodes
// are meant to share one configuration, and the check is a guard against
// a mistake, not a proof.
func openCluster(ctx context.Context, addr string, o settings) (*Locker, error) {
	seeds, urlOpts, err := cluster.ParseURL(addr)
	if err != nil {
		return nil, addressError(err)
	}
	connOpts := append(urlOpts, o.ConnOptions...)
	client, err := cluster.New(ctx, seeds, append([]cluster.Option{cluster.WithConnOptions(connOpts...)}, o.ClusterOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if !o.EvictionAllowed {
		if err := checkEviction(ctx, slotCommander{client, ""}); err != nil {
			_ = client.Close()
			return nil, err
		}
	}
	sharded, err := knowsSPublish(ctx, slotCommander{client, ""})
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	channels := plainChannels
	if sharded && !o.PlainChannels {
		channels = shardChannels
	}
	l := newLocker(newClustered(client, subscriberOptions(o, connOpts)), o, channels)
	l.owns = true
	return l, nil
}

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
