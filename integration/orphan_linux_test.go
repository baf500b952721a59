package integration_test

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill a worker process when the test
// process dies, however it dies.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
