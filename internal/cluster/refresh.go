package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/batonlock/baton/resp"
)

// refreshWhen says whether a refresh may be skipped as too soon.
type refreshWhen int

const (
	refreshIfDue refreshWhen = iota // skipped within the refresh interval of the last one
	refreshNow                      // whatever the interval
)

// refresh asks the cluster for its topology and installs it. Only one
// refresh runs at a time: a caller that finds one in progress waits for it
// (or for ctx) and takes its result as its own. Unless when is now, a
// refresh less than the refresh interval after the last one is skipped.
// The nodes asked, in order until one answers: the known primaries, in a
// random order so that many clients do not all ask one node, then the
// seeds; avoid, a node that just could not be reached, is asked last. A
// topology with nothing in it is not installed; the old one stays.
func (c *Client) refresh(ctx context.Context, when refreshWhen, avoid string) error {
	c.mu.Lock()
	if wait := c.refreshing; wait != nil {
		c.mu.Unlock()
		select {
		case <-wait:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	if when != refreshNow && c.opts.refreshInterval > 0 && time.Since(c.refreshed) < c.opts.refreshInterval {
		c.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	c.refreshing = done
	candidates := c.candidatesLocked(avoid)
	c.mu.Unlock()

	t, err := c.fetchAny(ctx, candidates)

	c.mu.Lock()
	if t != nil {
		c.topo = t
	}
	c.refreshed = time.Now()
	c.refreshing = nil
	close(done)
	c.mu.Unlock()
	return err
}

// candidatesLocked lists the nodes a refresh asks, in order, each once.
func (c *Client) candidatesLocked(avoid string) []string {
	var out []string
	if c.topo != nil {
		out = slices.Clone(c.topo.addrs)
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	for _, s := range c.seeds {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if i := slices.Index(out, avoid); i >= 0 {
		out = append(slices.Delete(out, i, i+1), avoid)
	}
	return out
}

// fetchAny asks each of addrs in turn for the topology and returns the
// first one got, or every failure joined.
func (c *Client) fetchAny(ctx context.Context, addrs []string) (*topology, error) {
	var errs []error
	for _, addr := range addrs {
		t, err := c.fetch(ctx, addr)
		if err == nil {
			return t, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// fetch asks the node at addr for the topology: CLUSTER SHARDS, and
// CLUSTER SLOTS if it answers that with an error reply, as Redis 6 does
// (and a server whose ACL forbids CLUSTER SHARDS). The error reply is
// judged by its kind, never by its text.
func (c *Client) fetch(ctx context.Context, addr string) (*topology, error) {
	cl, err := c.node(addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	noShards := c.noShards
	c.mu.Unlock()

	var shardsErr error
	if !noShards {
		v, err := cl.Do(ctx, "CLUSTER", "SHARDS")
		var reply *resp.Error
		switch {
		case err == nil:
			ranges, err := parseShards(v, addr)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER SHARDS: %w", err)
			}
			return newTopology(ranges)
		case !errors.As(err, &reply):
			return nil, err
		}
		shardsErr = err
	}
	v, err := cl.Do(ctx, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, errors.Join(shardsErr, err)
	}
	ranges, err := parseSlots(v, addr)
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	t, err := newTopology(ranges)
	if err == nil && shardsErr != nil {
		c.mu.Lock()
		c.noShards = true
		c.mu.Unlock()
	}
	return t, err
}
