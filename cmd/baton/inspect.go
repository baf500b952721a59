package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonlock/baton/lock"
)

// inspectTimeout bounds the whole inspection. Dialing has its own bound
// (conn's dial timeout), but a server that accepts and then never answers
// would otherwise hold the command forever.
const inspectTimeout = 15 * time.Second

const inspectAbout = `Shows who holds the lock KEY and for how long, and who waits for it:
the holder, the TTL left, the holder's fencing token, whether the holder
is asked to let go and, with --fair, the queue in the order the waiters
will get the lock, each with how long its place is kept without a renewal.

Holders and waiters are shown by the first 8 characters of their owner
token: enough to tell them apart, while the whole token, a secret, would
let anyone who reads the output release the lock.

It reads the lock's keys in one script that writes nothing, so what it
shows is one snapshot, with times counted by the server's clock. It
changes no setting: unlike a Locker, it neither turns on keyspace events
nor checks maxmemory-policy. Besides its command connection it opens the
subscriber connection every Locker has, which subscribes to a channel of
its own and nothing else.

The fast and fair modes keep different keys: inspect a fair lock with
--fair, or its queue goes unseen.

With --json: one document with addr, key, redis_key, mode ("fast" or
"fair"), held, holder, ttl_ms (-1: the key never expires), token, wanted
and queue (a list of {owner, lease_left_ms}; null in fast mode). holder,
ttl_ms and token are null when the lock is free, and token also when it
cannot be known (see lock.Info).`

func init() {
	register("inspect", "who holds a lock, for how long, and who waits for it", runInspect)
}

// inspectFlags are inspect's command line, once parsed.
type inspectFlags struct {
	addr, prefix, key string
	fair, json        bool
}

func runInspect(ctx context.Context, args []string, out outputs) error {
	var f inspectFlags
	fs := newFlags("inspect", "--addr ADDR [--fair] [--prefix P] [--json] KEY", inspectAbout, out)
	fs.StringVar(&f.addr, "addr", "", addrFlagHelp+" (required)")
	fs.BoolVar(&f.fair, "fair", false, "read the fair mode's keys, the queue among them, as a Locker made WithFair does")
	fs.StringVar(&f.prefix, "prefix", "baton:", "the key prefix the lock's users give to lock.WithKeyPrefix")
	fs.BoolVar(&f.json, "json", false, "print one JSON document on stdout, and nothing else there")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case f.addr == "":
		return usagef("--addr is required: inspect reads a server you name")
	case len(rest) == 0:
		return usagef("missing KEY, the lock to inspect")
	case len(rest) > 1 && strings.HasPrefix(rest[1], "-"):
		return usagef("flags go before KEY: %q", rest[1])
	case len(rest) > 1:
		return usagef("unexpected argument %q: inspect takes one KEY", rest[1])
	}
	f.key = rest[0]

	info, err := inspect(ctx, f)
	switch {
	case errors.Is(err, lock.ErrInvalid):
		return usagef("%w", err) // the key or the prefix
	case err != nil:
		return fmt.Errorf("%s: %w", redactAddr(f.addr), err)
	}
	rep := newInspectReport(f, info)
	if f.json {
		return rep.writeJSON(out.stdout)
	}
	rep.writeText(out.stdout)
	return nil
}

// inspect reads the lock. An inspector must leave the server's settings
// alone, so the Locker is told the keyspace events are configured (it
// then neither reads nor sets them) and that eviction is the operator's
// business (Open would refuse an evicting policy, which is worth
// inspecting all the more). A redis+cluster:// address reads the lock on
// its node of a cluster.
func inspect(ctx context.Context, f inspectFlags) (lock.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	opts := []lock.Option{lock.WithKeyPrefix(f.prefix), lock.WithKeyspaceEventsConfigured(), lock.WithEvictionAllowed()}
	if f.fair {
		opts = append(opts, lock.WithFair())
	}
	l, err := lock.Open(ctx, f.addr, opts...)
	if err != nil {
		return lock.Info{}, err
	}
	defer l.Close()
	return l.Inspect(ctx, f.key)
}
