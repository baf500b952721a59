package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pinChildEnv makes the test binary run TestPinnedRun's child part: --pin
// changes the affinity of the whole process, which the other tests
// should not inherit.
const pinChildEnv = "BATON_BENCH_PIN_CHILD"

// TestPinnedRun runs a tiny report with --pin in a child process and
// checks that it says where each side ran.
func TestPinnedRun(t *testing.T) {
	if os.Getenv(pinChildEnv) != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var stderr bytes.Buffer
		err := run(ctx, []string{"--pin", "--scenarios", "1", "--impls", "floor", "--rounds", "1", "--ops", "5"}, os.Stdout, &stderr)
		require.NoError(t, err, stderr.String())
		return
	}
	if runtime.GOOS != "linux" || runtime.NumCPU() < 2 {
		t.Skip("--pin needs Linux and 2 CPUs")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPinnedRun$", "-test.count=1")
	cmd.Env = append(os.Environ(), pinChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "pinned with --pin: the server on CPU [")
	require.Contains(t, string(out), "| floor (2 PINGs) | ")
}

func TestPinningPlan(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.NumCPU() < 2 {
		t.Skip("--pin needs Linux and 2 CPUs")
	}
	p, err := planPinning()
	require.NoError(t, err)
	require.Equal(t, runtime.NumCPU()-1, p.nCPU)
	require.Contains(t, p.String(), "GOMAXPROCS "+strconv.Itoa(runtime.NumCPU()-1))
}
