package main

import (
	"fmt"

	"github.com/batonlock/baton/resp"
)

// lockMode is a lock's mode as inspect reads it.
type lockMode int

const (
	// modeUnknown: the keys do not tell, and no flag said. In
	// inspectFlags it means --fair was not given: the keys decide.
	modeUnknown lockMode = iota
	modeFast
	modeFair
)

func (m lockMode) String() string {
	switch m {
	case modeFast:
		return "fast"
	case modeFair:
		return "fair"
	}
	return "unknown"
}

// flag is the spelling of --fair that chooses m, fast or fair.
func (m lockMode) flag() string {
	if m == modeFair {
		return "--fair"
	}
	return "--fair=false"
}

// modeKeys is what a lock's keys tell of its mode: which of the keys
// that only one mode keeps were found (see docs/PROTOCOL.md's table of
// keys). Both modes keep the lock and its fencing counter, so the mode of
// a lock with none of the others (nobody asked for it, or long enough
// ago that their keys expired) cannot be told: a fast and a fair Locker
// holding it leave the same keys. A lock with both was used by Lockers of
// both modes.
type modeKeys struct {
	fast bool // <prefix>{key}:wanted, the list of requests
	fair bool // <prefix>{key}:queue, :waiters or :seq, the queue's keys
}

// String is the keys' mode_keys in --json.
func (k modeKeys) String() string {
	switch {
	case k.fast && k.fair:
		return "both"
	case k.fast:
		return "fast"
	case k.fair:
		return "fair"
	}
	return "none"
}

// mode is the mode the keys tell, or modeUnknown where they tell none or
// both.
func (k modeKeys) mode() lockMode {
	switch {
	case k.fast && !k.fair:
		return modeFast
	case k.fair && !k.fast:
		return modeFair
	}
	return modeUnknown
}

// contradicts reports whether the keys tell a mode other than m.
func (k modeKeys) contradicts(m lockMode) bool {
	return (m == modeFast && k.fair) || (m == modeFair && k.fast)
}

// ownKeys names, for people, what only a lock of mode m keeps.
func (m lockMode) ownKeys() string {
	if m == modeFair {
		return "a queue"
	}
	return "a list of requests"
}

// modeKeyCommands are the commands that find the keys only one mode
// keeps, for lock.Locker.Inspect to run in the write of its script, on
// the node that holds the lock. base is the lock's name, Locker.Key's
// <prefix>{key}: the other keys share its hash tag, so one EXISTS per
// mode is valid on a cluster. The suffixes are those of docs/PROTOCOL.md.
func modeKeyCommands(base string) [][]string {
	return [][]string{
		{"EXISTS", base + ":wanted"},
		{"EXISTS", base + ":queue", base + ":waiters", base + ":seq"},
	}
}

// readModeKeys reads the replies to modeKeyCommands.
func readModeKeys(replies []resp.Value) (modeKeys, error) {
	if len(replies) != 2 {
		return modeKeys{}, fmt.Errorf("%w: %d replies to the commands that look for each mode's keys, want 2", resp.ErrProtocol, len(replies))
	}
	var found [2]bool
	for i, r := range replies {
		if err := r.Err(); err != nil {
			return modeKeys{}, fmt.Errorf("looking for each mode's keys: %w", err)
		}
		if r.Type != resp.Integer || r.Int < 0 {
			return modeKeys{}, fmt.Errorf("%w: EXISTS answered %s", resp.ErrProtocol, r)
		}
		found[i] = r.Int > 0
	}
	return modeKeys{fast: found[0], fair: found[1]}, nil
}
