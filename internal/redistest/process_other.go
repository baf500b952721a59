//go:build !linux

package redistest

import "syscall"

// sysProcAttr has nothing to add where the kernel cannot tie the child's
// life to the parent's; a test binary that dies without running its
// cleanups leaves its servers running there.
func sysProcAttr() *syscall.SysProcAttr { return nil }
