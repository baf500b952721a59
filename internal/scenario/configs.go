package scenario

import (
	"time"

	"github.com/batonlock/baton/lock"
)

// Config is one way of running the scenario.
type Config struct {
	// Name labels the row: "naive-eval", "fast+hold", ...
	Name string
	// Naive runs the naive lock instead of baton; NaivePing sends its
	// release after a PING in the same write.
	Naive, NaivePing bool
	// Fair runs baton's fair mode.
	Fair bool
	// Hold keeps baton's lock between A's modifications (manager.WithHold).
	Hold time.Duration
	// Bound is the most modifications of A that may pass B's, or -1 where
	// the configuration is measured only. Once B has asked, A's write-back
	// hands the lock to B: only the modification A was making may pass it.
	Bound int
}

// NeedsNotifications reports whether the configuration's waiters listen
// to keyspace notifications, which not every server publishes.
func (c Config) NeedsNotifications() bool { return !c.Fair }

// LockOptions are the baton lock options of the configuration.
func (c Config) LockOptions() []lock.Option {
	if c.Fair {
		return []lock.Option{lock.WithFair()}
	}
	return nil
}

// holdFor is the hold of the rows that keep the lock between
// modifications: far longer than the scenario, so that only B's request
// can end it.
const holdFor = time.Second

// Configs are the rows, in the order they are shown: the naive design
// with its plain release (the behaviour baton exists to fix), the same
// with PING in the release's write (the head start alone), then baton's
// modes, each without and with a hold.
var Configs = []Config{
	{Name: "naive-eval", Naive: true, Bound: -1},
	{Name: "naive-ping+eval", Naive: true, NaivePing: true, Bound: -1},
	{Name: "fast", Bound: 2},
	{Name: "fast+hold", Hold: holdFor, Bound: 2},
	{Name: "fair", Fair: true, Bound: 1},
	{Name: "fair+hold", Fair: true, Hold: holdFor, Bound: 1},
}
