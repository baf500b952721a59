package conn

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// spinners counts the callers spinning for a reply (WithSpinWait), across
// every Conn of the process: spinning pays only while cores are left for
// the reader goroutines.
var spinners atomic.Int32

// spinUntilSettled spins for up to d, or until ctx ends, for cl to be
// settled. It returns early, without spinning, when no core can be spared.
func spinUntilSettled(ctx context.Context, cl *call, d time.Duration) {
	procs := int32(runtime.GOMAXPROCS(0))
	if procs < 2 {
		return // the reader could not run while this caller spins
	}
	if spinners.Add(1) > procs/2 {
		spinners.Add(-1)
		return
	}
	defer spinners.Add(-1)
	deadline := time.Now().Add(d)
	for i := 0; cl.state.Load() == waiting; i++ {
		// Look at the clock and the context now and then only: both
		// cost more than a look at the call.
		if i%64 != 63 {
			continue
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
	}
}
