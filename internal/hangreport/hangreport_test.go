package hangreport_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/hangreport"
)

// TestAReportNamesTheRunningTestAndWhereItWaits: the report names the
// test that runs, and the function its goroutine waits in.
func TestAReportNamesTheRunningTestAndWhereItWaits(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	started := make(chan struct{})
	go waitHere(started, stuck)
	<-started
	var out bytes.Buffer
	hangreport.Write(&out, "asked")
	report := out.String()
	require.Contains(t, report, "HANG REPORT: asked")
	require.Contains(t, report, "tests still running: github.com/batonlock/baton/internal/hangreport_test.TestAReportNamesTheRunningTestAndWhereItWaits")
	require.Contains(t, report, "hangreport_test.waitHere (hangreport/hangreport_test.go:")
	require.Contains(t, report, "[chan receive]")
}

func waitHere(started, stuck chan struct{}) {
	close(started)
	<-stuck
}

// TestAHungBinaryReportsBeforeItsTimeout runs this test binary again
// with a test that never ends and a short -test.timeout: it exits with
// the report as its last words, before Go's own timeout dump.
func TestAHungBinaryReportsBeforeItsTimeout(t *testing.T) {
	if os.Getenv("HANGREPORT_HANG") == "1" {
		select {} // the hang
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAHungBinaryReportsBeforeItsTimeout$", "-test.timeout", "3s")
	cmd.Env = append(os.Environ(), "HANGREPORT_HANG=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode(), "%s", out)
	text := strings.TrimSpace(string(out))
	require.Contains(t, text, "tests still running: github.com/batonlock/baton/internal/hangreport_test.TestAHungBinaryReportsBeforeItsTimeout")
	require.NotContains(t, text, "panic: test timed out")
	require.True(t, strings.HasSuffix(text, "=== END OF HANG REPORT"), "%s", text)
}

func TestMain(m *testing.M) {
	os.Exit(hangreport.Watch(m).Run())
}
