package lock

import (
	"context"
	"fmt"

	"github.com/batonlock/baton/resp"
)

// release deletes the lock if owner holds it. A caller whose context can
// end waits for the release in a goroutine the Locker owns, so that the
// release completes even if the caller stops waiting.
func (l *Locker) release(ctx context.Context, key string, names keyNames, owner string, write *stateWrite) error {
	if ctx.Done() == nil {
		return l.releaseNow(ctx, key, names, owner, write, l.opts.releaseStyle)
	}
	result := make(chan error, 1)
	spawned := l.spawn(func() {
		bounded, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.releaseTimeout)
		defer cancel()
		result <- l.releaseNow(bounded, key, names, owner, write, l.opts.releaseStyle)
	})
	if !spawned {
		return l.releaseNow(ctx, key, names, owner, write, l.opts.releaseStyle)
	}
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return fmt.Errorf("lock %q: unlock: %w (the release goes on in the background)", key, ctx.Err())
	}
}

// releaseInBackground releases for an owner who is no longer waiting; it
// is best effort, with the lock's TTL as the backstop. It always compares
// the owner, whatever the release style: the owner may never have held
// the lock, which another may hold now.
func (l *Locker) releaseInBackground(key string, names keyNames, owner string) {
	l.inBackground(func(ctx context.Context) { _ = l.releaseNow(ctx, key, names, owner, nil, ReleasePingEval) })
}

// withdrawInBackground takes back the requests of a fast-mode waiter that
// gave up (see withdrawScript), after releasing the lock first if an
// attempt of its may have taken it. Best effort: the requests' TTLs are
// the backstop.
func (l *Locker) withdrawInBackground(key string, names keyNames, owner string, release bool) {
	l.inBackground(func(ctx context.Context) {
		if release {
			_ = l.releaseNow(ctx, key, names, owner, nil, ReleasePingEval)
		}
		_, _ = run(ctx, l.client, withdrawScript, false, names.fastKeys(), owner)
	})
}

// inBackground runs fn, bounded by the release timeout, in a goroutine the
// Locker owns, or at once if the Locker is closing.
func (l *Locker) inBackground(fn func(ctx context.Context)) {
	run := func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.releaseTimeout)
		defer cancel()
		fn(ctx)
	}
	if !l.spawn(run) {
		run()
	}
}

func (l *Locker) releaseNow(ctx context.Context, key string, names keyNames, owner string, write *stateWrite, style ReleaseStyle) error {
	var v resp.Value
	var err error
	switch {
	case write != nil && l.opts.fair:
		v, err = run(ctx, l.client, fairReleaseSetScript, true, append(names.fairKeys(), write.key), owner, write.value, write.ttl)
	case write != nil:
		v, err = run(ctx, l.client, releaseSetScript, true, []string{names.lock, write.key}, owner, write.value, write.ttl)
	case l.opts.fair:
		v, err = run(ctx, l.client, fairReleaseScript, true, names.fairKeys(), owner)
	case style == ReleasePingEval:
		v, err = run(ctx, l.client, releaseScript, true, []string{names.lock}, owner)
	case style == ReleaseEval:
		v, err = run(ctx, l.client, releaseScript, false, []string{names.lock}, owner)
	case style == ReleaseGetDel:
		v, err = l.client.Do(ctx, "GETDEL", names.lock)
		if err == nil {
			v.Type, v.Int = resp.Integer, 0
			if v.Str == owner {
				v.Int = 1
			}
		}
	}
	if err != nil {
		return fmt.Errorf("lock %q: unlock: %w", key, err)
	}
	if v.Int != 1 {
		return fmt.Errorf("lock %q: unlock: %w", key, ErrNotHeld)
	}
	return nil
}
