package redisproc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// sysProcAttr asks the kernel to kill redis-server when the program that
// started it dies, so that a program that never gets to call Stop (a test
// binary killed by -timeout, a demo killed by a signal) leaves no servers
// behind holding ports. It also puts redis-server in a process group of
// its own, so that a Ctrl-C at a terminal reaches only the program, which
// stops its server when it is done with it, rather than the server first. The signal is tied to
// the OS thread that started the child; the Go runtime ends a thread only
// when a goroutine locked to it exits, which code starting servers does not
// do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// waitStopped returns once the kernel reports the process stopped, state T
// in /proc/<pid>/stat, or fails after timeout. SIGSTOP takes effect when
// the kernel next schedules the process, not when kill returns.
func waitStopped(pid int, timeout time.Duration) error {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	deadline := time.Now().Add(timeout)
	for {
		stat, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// "pid (comm) state ...": comm may hold spaces and parentheses,
		// so the state follows the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return fmt.Errorf("unexpected %s: %q", path, stat)
		}
		state := stat[i+2]
		if state == 'T' {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still in state %c %v after SIGSTOP", pid, state, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}
