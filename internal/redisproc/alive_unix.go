//go:build unix

package redisproc

import (
	"errors"
	"syscall"
)

// Alive reports whether a process with that id exists: for telling what
// a process that is gone left behind, here its servers' directories and,
// in the integration suite, its containers.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
