//go:build !linux

package integration_test

import "os/exec"

// dieWithParent cannot ask the kernel for it here: a worker whose test
// process died ends at its job's deadline.
func dieWithParent(*exec.Cmd) {}
