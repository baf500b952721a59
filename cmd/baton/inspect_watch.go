package main

import (
	"context"
	"time"
)

// watchInspect is inspect --watch: it shows the lock every f.interval
// until ctx ends (SIGINT or SIGTERM), which is how a watch is meant to
// end, so it then returns nil.
//
// The first refresh must succeed, as a one-shot inspect must: a wrong
// address, password or key then ends the command at once, instead of
// being shown until someone notices. After it, a refresh that fails is
// shown in the view and the next one tries again. One inspector serves
// every refresh, so a refresh costs a round trip (two for a fair lock
// whose mode its keys tell) rather than dials; its Lockers' clients dial a
// new connection when the old one broke, which is how the watch recovers
// once the server is back.
func watchInspect(ctx context.Context, f inspectFlags, out outputs) error {
	in := newInspector(f)
	defer in.Close()
	insp, err := in.read(ctx)
	if err != nil {
		return watchEnded(ctx, f, err)
	}
	view := newInspectView(out.stdout, f)
	// The interval is counted from the end of a refresh, as watch(1)
	// counts it: a slow refresh is not followed at once by the next.
	wait := time.NewTimer(f.interval)
	defer wait.Stop()
	for {
		if err := view.show(insp, err); err != nil {
			return err
		}
		wait.Reset(f.interval)
		select {
		case <-ctx.Done():
			return nil
		case <-wait.C:
		}
		insp, err = in.read(ctx)
		if ctx.Err() != nil {
			return nil // cut short: the view keeps the refresh before
		}
	}
}

// watchEnded is the end of a watch whose first refresh failed with err:
// none when the refresh failed because ctx ended, or the error a one-shot
// inspect returns.
func watchEnded(ctx context.Context, f inspectFlags, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return inspectFailed(f, err)
}
