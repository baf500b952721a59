//go:build !unix

package redistest

import "os"

// pauseSignal and resumeSignal are nil where processes cannot be frozen:
// Server.Pause skips the test there.
var pauseSignal, resumeSignal os.Signal
