//go:build !linux

package redisproc

import (
	"syscall"
	"time"
)

// sysProcAttr has nothing to add where the kernel cannot tie the child's
// life to the parent's; a program that dies without calling Stop leaves
// its servers running there.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// waitStopped cannot ask the kernel here: SIGSTOP is left to take effect,
// as it does within microseconds on an idle machine.
func waitStopped(int, time.Duration) error { return nil }
