package main_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
)

// batonBin is the binary the tests run, built once by TestMain.
var batonBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "baton-bin-")
	if err != nil {
		panic(err)
	}
	batonBin = filepath.Join(dir, "baton")
	build := exec.Command("go", "build", "-race", "-o", batonBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("building baton: " + err.Error())
	}
	code := hangreport.Watch(m).Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// result is what one run of the binary printed, and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// runBaton runs the built binary with args, in an environment with env
// added, and fails the test if it outlives timeout.
func runBaton(t *testing.T, timeout time.Duration, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, batonBin, args...)
	// The race detector waits a second at exit by default; nothing here
	// needs that wait.
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("baton %v did not finish within %v\nstdout:\n%s\nstderr:\n%s", args, timeout, stdout.String(), stderr.String())
	}
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running baton %v: %v", args, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}
