package main

import (
	"context"
	"time"

	"github.com/batonlock/baton/lock"
)

// watchInspect is inspect --watch: it shows the lock every f.interval
// until ctx ends (SIGINT or SIGTERM), which is how a watch is meant to
// end, so it then returns nil.
//
// The first refresh must succeed, as a one-shot inspect must: a wrong
// address, password or key then ends the command at once, instead of
// being shown until someone notices. After it, a refresh that fails is
// shown in the view and the next one tries again. One Locker serves every
// refresh, so a refresh costs one round trip rather than two dials; its
// client dials a new connection when the old one broke, which is how the
// watch recovers once the server is back.
func watchInspect(ctx context.Context, f inspectFlags, out outputs) error {
	openCtx, cancel := context.WithTimeout(ctx, inspectTimeout)
	l, err := openInspector(openCtx, f)
	cancel()
	if err != nil {
		return watchEnded(ctx, f, err)
	}
	defer l.Close()
	info, err := refreshInspect(ctx, l, f.key)
	if err != nil {
		return watchEnded(ctx, f, err)
	}
	view := newInspectView(out.stdout, f)
	// The interval is counted from the end of a refresh, as watch(1)
	// counts it: a slow refresh is not followed at once by the next.
	wait := time.NewTimer(f.interval)
	defer wait.Stop()
	for {
		if err := view.show(info, err); err != nil {
			return err
		}
		wait.Reset(f.interval)
		select {
		case <-ctx.Done():
			return nil
		case <-wait.C:
		}
		info, err = refreshInspect(ctx, l, f.key)
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

// refreshInspect reads the lock once through l, bounded as a one-shot
// inspect is.
func refreshInspect(ctx context.Context, l *lock.Locker, key string) (lock.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	return l.Inspect(ctx, key)
}
