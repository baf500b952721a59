package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/batonlock/baton/lock"
)

// inspectTimeout bounds the whole inspection. Dialing has its own bound
// (conn's dial timeout), but a server that accepts and then never answers
// would otherwise hold the command forever.
const inspectTimeout = 15 * time.Second

const inspectAbout = `Shows who holds the lock KEY and for how long, and who waits for it:
the holder, the TTL left, the holder's fencing token, whether the holder
is asked to let go and, for a fair lock, the queue in the order the
waiters will get the lock, each with how long its place is kept without
a renewal.

Holders and waiters are shown by the first 8 characters of their owner
token: enough to tell them apart, while the whole token, a secret, would
let anyone who reads the output release the lock.

It reads the lock's keys in one script that writes nothing, so what it
shows is one snapshot, with times counted by the server's clock. It
changes no setting: unlike a Locker, it neither turns on keyspace events
nor checks maxmemory-policy. It reads through a Locker of each mode it
reads, each with a command connection and the subscriber connection
every Locker has, which subscribes to a channel of its own and nothing
else.

The lock's keys tell its mode, and the view says how it knows. Both
modes keep the lock and its fencing counter; only a fast lock keeps a
list of requests from its waiters, and only a fair lock a queue. So a
lock with a list of requests is read as a fast lock, and one with a
queue as a fair lock, its queue included. Where neither is there,
nobody has asked for the lock in either mode, what the view shows holds
for both, and the mode is "unknown". Where both are there, Lockers of
both modes use the lock: the mode is "unknown" and the view shows the
requests and the queue together. --fair reads the lock as a fair lock,
and --fair=false as a fast one, whatever its keys say; where they say
the other mode, a warning on stderr says so, for who waits may then go
unseen.

With --json: one document with addr, key, redis_key, mode ("fast",
"fair" or "unknown"), mode_keys (what the keys tell: "fast", "fair",
"both" or "none"), held, holder, ttl_ms (-1: the key never expires),
token, wanted and queue (a list of {owner, lease_left_ms}; null in fast
mode). holder, ttl_ms and token are null when the lock is free, and
token also when it cannot be known (see lock.Info).

With --watch: the view again and again, each refresh --interval (1s
unless set) after the last and with its time above it, until interrupted
(Ctrl-C or SIGTERM), which ends the command with exit status 0. On a
terminal each refresh redraws the screen; elsewhere (a file, a pipe) the
refreshes follow one another, each ending with a blank line, and with
--json each is one document on a line of its own (JSON Lines). The first
refresh must succeed: a wrong address, password or KEY ends the command
as it does without --watch. After it, a refresh that fails (the server
gone, say) shows its error in the view, with --json as a document of
addr, key, redis_key, mode (as --fair gives it, else "unknown") and
error, and the watch goes on; it shows the lock again once the server
answers. Every refresh reads through the same Lockers, whose
connections are dialled again when they break.`

func init() {
	register("inspect", "who holds a lock, for how long, and who waits for it", runInspect)
}

// inspectFlags are inspect's command line, once parsed.
type inspectFlags struct {
	addr, prefix, key string
	// mode is what --fair says: modeFair, modeFast for --fair=false, or
	// modeUnknown without it, where the lock's keys tell.
	mode        lockMode
	json, watch bool
	interval    time.Duration // between two refreshes of --watch
}

func parseInspectFlags(args []string, out outputs) (inspectFlags, error) {
	var f inspectFlags
	var fair bool
	fs := newFlags("inspect", "--addr ADDR [--fair[=false]] [--prefix P] [--json] [--watch [--interval D]] KEY", inspectAbout, out)
	fs.StringVar(&f.addr, "addr", "", addrFlagHelp+" (required)")
	fs.BoolVar(&fair, "fair", false, "read the lock as a fair lock, its queue included, and with --fair=false as a fast one (without it, the lock's keys tell)")
	fs.StringVar(&f.prefix, "prefix", "baton:", "the key prefix the lock's users give to lock.WithKeyPrefix")
	fs.BoolVar(&f.json, "json", false, "print one JSON document on stdout, and nothing else there (with --watch, one per refresh, each on a line)")
	fs.BoolVar(&f.watch, "watch", false, "show the view again every --interval until interrupted (Ctrl-C), then exit 0")
	fs.DurationVar(&f.interval, "interval", time.Second, "how long --watch waits between two refreshes; more than 0")
	rest, err := parse(fs, args)
	if err != nil {
		return f, err
	}
	fairSet, intervalSet := false, false
	fs.Visit(func(fl *flag.Flag) {
		fairSet = fairSet || fl.Name == "fair"
		intervalSet = intervalSet || fl.Name == "interval"
	})
	switch {
	case fairSet && fair:
		f.mode = modeFair
	case fairSet:
		f.mode = modeFast
	}
	switch {
	case f.addr == "":
		return f, usagef("--addr is required: inspect reads a server you name")
	case f.interval <= 0:
		return f, usagef("--interval %v: want more than 0", f.interval)
	case intervalSet && !f.watch:
		return f, usagef("--interval is the wait between two refreshes of --watch: add --watch, or leave --interval out")
	case len(rest) == 0:
		return f, usagef("missing KEY, the lock to inspect")
	case len(rest) > 1:
		return f, usagef("unexpected argument %q: inspect takes one KEY", rest[1])
	}
	f.key = rest[0]
	return f, nil
}

func runInspect(ctx context.Context, args []string, out outputs) error {
	f, err := parseInspectFlags(args, out)
	if err != nil {
		return err
	}
	if f.watch {
		return watchInspect(ctx, f, out)
	}
	in := newInspector(f)
	defer in.Close()
	insp, err := in.read(ctx)
	if err != nil {
		return inspectFailed(f, err)
	}
	rep := newInspectReport(f, insp)
	rep.warn(out.stderr)
	if f.json {
		return rep.writeJSON(out.stdout)
	}
	rep.writeText(out.stdout)
	return nil
}

// inspectFailed is the command's error for a failed inspection: a
// refused key or prefix is a mistake on the command line, anything else
// names the server.
func inspectFailed(f inspectFlags, err error) error {
	if errors.Is(err, lock.ErrInvalid) {
		return usagef("%w", err)
	}
	return fmt.Errorf("%s: %w", redactAddr(f.addr), err)
}
