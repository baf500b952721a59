//go:build unix

package redisproc

import (
	"os"
	"syscall"
)

// pauseSignal and resumeSignal freeze and thaw a process (Server.Pause).
var (
	pauseSignal  os.Signal = syscall.SIGSTOP
	resumeSignal os.Signal = syscall.SIGCONT
)
