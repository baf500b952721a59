package main

import (
	"context"
	"fmt"

	"github.com/batonlock/baton/lock"
)

// inspector reads one lock for inspect, through a Locker of each mode it
// reads: the script behind Locker.Inspect reads its Locker's mode's keys
// alone, a fast lock's requests or a fair lock's queue. Each Locker is
// opened when first needed and serves every read after it, so that a
// watch costs a round trip per refresh rather than two dials; its client
// dials again when a connection broke.
type inspector struct {
	f       inspectFlags
	lockers map[lockMode]*lock.Locker // opened, by mode; Close closes them
}

func newInspector(f inspectFlags) *inspector {
	return &inspector{f: f, lockers: make(map[lockMode]*lock.Locker, 2)}
}

// inspection is one reading of the lock: what it holds, the mode it was
// read as (modeUnknown where the keys tell none, or both), and what its
// keys tell of its mode.
type inspection struct {
	info lock.Info
	mode lockMode
	keys modeKeys
}

// read reads the lock, bounded by inspectTimeout, opening the Lockers it
// needs on the way. With a mode given, it reads as that mode. Otherwise
// it reads as a fast lock first, which sees a fast lock's requests and
// finds whether a queue is there; only a queue calls for a second read,
// as a fair lock. The two reads are two snapshots, a round trip apart:
// the keys found by either count, and where both modes' keys are there
// (Lockers of both modes use the lock), a request seen by the first read
// counts as much as the queue.
func (in *inspector) read(ctx context.Context) (inspection, error) {
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	if in.f.mode != modeUnknown {
		info, keys, err := in.readAs(ctx, in.f.mode)
		return inspection{info: info, mode: in.f.mode, keys: keys}, err
	}
	info, keys, err := in.readAs(ctx, modeFast)
	if err != nil || !keys.fair {
		// No queue: a fast reading is the whole lock, whatever its mode.
		return inspection{info: info, mode: keys.mode(), keys: keys}, err
	}
	fair, fairKeys, err := in.readAs(ctx, modeFair)
	if err != nil {
		return inspection{}, err
	}
	keys.fast = keys.fast || fairKeys.fast
	fair.Wanted = fair.Wanted || info.Wanted
	return inspection{info: fair, mode: keys.mode(), keys: keys}, nil
}

// readAs reads the lock once as a lock of mode m, and looks for each
// mode's keys in the same write.
func (in *inspector) readAs(ctx context.Context, m lockMode) (lock.Info, modeKeys, error) {
	l, err := in.locker(ctx, m)
	if err != nil {
		return lock.Info{}, modeKeys{}, err
	}
	info, err := l.Inspect(ctx, in.f.key, modeKeyCommands(l.Key(in.f.key))...)
	if err != nil {
		return lock.Info{}, modeKeys{}, err
	}
	keys, err := readModeKeys(info.Replies)
	if err != nil {
		return lock.Info{}, modeKeys{}, fmt.Errorf("lock %q: inspect: %w", in.f.key, err)
	}
	return info, keys, nil
}

// locker returns the Locker of mode m, opening it the first time. An
// inspector must leave the server's settings alone, so the Locker is told
// the keyspace events are configured (it then neither reads nor sets
// them) and that eviction is the operator's business (Open would refuse
// an evicting policy, which is worth inspecting all the more). A
// redis+cluster:// address reads the lock on its node of a cluster. ctx
// bounds the opening alone: the Locker lives until Close.
func (in *inspector) locker(ctx context.Context, m lockMode) (*lock.Locker, error) {
	if l := in.lockers[m]; l != nil {
		return l, nil
	}
	opts := []lock.Option{lock.WithKeyPrefix(in.f.prefix), lock.WithKeyspaceEventsConfigured(), lock.WithEvictionAllowed()}
	if m == modeFair {
		opts = append(opts, lock.WithFair())
	}
	l, err := lock.Open(ctx, in.f.addr, opts...)
	if err != nil {
		return nil, err
	}
	in.lockers[m] = l
	return l, nil
}

// Close closes the Lockers the inspector opened. An inspector writes
// nothing, so a Locker's Close has nothing to release: its error is
// dropped, as the command has said all it has to say.
func (in *inspector) Close() {
	for m, l := range in.lockers {
		_ = l.Close()
		delete(in.lockers, m)
	}
}
