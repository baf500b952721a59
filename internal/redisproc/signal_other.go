//go:build !unix

package redisproc

import "os"

// pauseSignal and resumeSignal are nil where processes cannot be frozen:
// Server.Pause returns an error wrapping errors.ErrUnsupported there.
var pauseSignal, resumeSignal os.Signal
