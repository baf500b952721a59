package redistest

import "syscall"

// sysProcAttr asks the kernel to kill redis-server when the test binary
// dies, so that a test binary killed by -timeout or a signal, which runs no
// cleanups, leaves no servers behind holding ports. The signal is tied to
// the OS thread that started the child; the Go runtime ends a thread only
// when a goroutine locked to it exits, which code starting servers does not
// do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
