package observe

import "sync/atomic"

var lastCall atomic.Uint64

// NewCall returns a number for Event.Call, unique in the process: for
// code built on a Locker that reports calls of its own through
// Locker.Observe, as a Manager's Modify does.
func NewCall() uint64 { return lastCall.Add(1) }
