package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// defaultProbeRounds is how many releases of each style the probe times
// unless --rounds says otherwise: enough that the odd round a reader
// goroutine was scheduled late does not move the verdict.
const defaultProbeRounds = 200

const probeAbout = `Measures in which order the server writes, on a lock's release, the
releaser's reply and the keyspace notification (a del event on
__keyspace@<db>__:<key>) to a waiter on another connection. For each
release style (GETDEL; EVAL, the compare-and-delete script; DEL; PING+EVAL,
PING and the script in one write, as fast mode releases) it counts the
rounds in which the notification reached the waiter's socket first. The
order is read from the kernel (epoll's ready list), not from goroutine
wake-ups, which invert it; so the probe runs on Linux.

The verdict: fast mode gets its head start where PING+EVAL is
notification-first in at least 90% of the rounds; below that the server
(or a proxy in front of it) does not keep the order, and fair mode
(lock.WithFair) is the one to use.

It also reports the server's version, io-threads and io-threads-do-reads,
and whether CONFIG and keyspace events are available. Where the server does
not publish the del events, the probe turns them on with CONFIG SET and
restores the previous value when done, also when interrupted; where CONFIG
is refused and the events are off, it says it cannot measure.

It writes one key, baton:probe:<random>, with a TTL, and deletes it at the
end. It never flushes anything.`

func init() {
	register("probe", "how a server orders replies and notifications on release", runProbe)
}

// probeFlags are the probe's command line, once parsed.
type probeFlags struct {
	addr   string
	rounds int
	tap    bool
	json   bool
}

func runProbe(ctx context.Context, args []string, out outputs) error {
	var f probeFlags
	fs := newFlags("probe", "--addr ADDR [--rounds N] [--tap] [--json]", probeAbout, out)
	fs.StringVar(&f.addr, "addr", "", addrFlagHelp+" (required)")
	fs.IntVar(&f.rounds, "rounds", defaultProbeRounds, "releases of each style to watch, at least 1")
	fs.BoolVar(&f.tap, "tap", false, "also print the raw RESP bytes of one PING+EVAL release, writes marked -> and reads <-")
	fs.BoolVar(&f.json, "json", false, "print the figures as one JSON document on stdout, and nothing else there")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(rest); err != nil {
		return err
	}
	switch {
	case f.addr == "":
		return usagef("--addr is required: the probe measures a server you name")
	case f.rounds < 1:
		return usagef("--rounds must be at least 1, not %d", f.rounds)
	}

	rep, err := probe(ctx, f)
	var cleanup *cleanupError
	if ctx.Err() != nil && errors.As(err, &cleanup) {
		// run reports an interruption alone, as cleaned up: say what
		// was not.
		fmt.Fprintf(out.stderr, "baton probe: %s\n", oneLine(cleanup))
	}
	if rep == nil {
		return err
	}
	// A report with an error is a measurement that finished but whose
	// cleanup failed: the figures are still worth printing.
	if f.json {
		enc := json.NewEncoder(out.stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil {
			return fmt.Errorf("writing the report: %w", jerr)
		}
	} else {
		rep.writeText(out.stdout)
	}
	return err
}
