//go:build !linux

package redistest

import (
	"syscall"
	"time"
)

// sysProcAttr has nothing to add where the kernel cannot tie the child's
// life to the parent's; a test binary that dies without running its
// cleanups leaves its servers running there.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// waitStopped cannot ask the kernel here: SIGSTOP is left to take effect,
// as it does within microseconds on an idle machine.
func waitStopped(int, time.Duration) error { return nil }
