package lock

import (
	"context"
	"fmt"
	"strings"

	"github.com/batonlock/baton/internal/cluster"
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
		return nil, fmt.Errorf("lock: %w", err)
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
	sharded = sharded && !o.PlainChannels
	l := newLocker(newClustered(client, subscriberOptions(o, connOpts)), o, sharded)
	l.owns = true
	return l, nil
}
