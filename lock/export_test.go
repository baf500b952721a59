package lock

import "context"

// The scripts' sources, for the benchmark baseline that runs them on a bare
// connection.
var (
	AcquireScriptSource = acquireScript.src
	ReleaseScriptSource = releaseScript.src
)

// QueuedAfter is, for a fair lease that waited in the queue, the last
// fencing token handed out when it queued, and whether it queued at all.
func QueuedAfter(ls *Lease) (uint64, bool) { return ls.queuedAfter, ls.queuedAfter != 0 }

// TryLockAs makes one attempt for key as a Lock would, with the owner token
// given: when the lock is held it asks for it, and when it succeeds it
// answers its own request. Tests play a waiter with it whose moves they
// time themselves.
func TryLockAs(ctx context.Context, l *Locker, key, owner string) (*Lease, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, err
	}
	defer l.calls.Done()
	ls, _, err := l.tryAcquire(ctx, key, l.keyNames(key), attempt{owner: owner, ask: true, manner: mannerPlain})
	if ls == nil && err == nil {
		return nil, ErrNotAcquired
	}
	return ls, err
}
