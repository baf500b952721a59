//go:build linux

package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/batonlock/baton/internal/redistest"
)

// redraw is what inspect --watch writes on a terminal before each
// refresh: the cursor home, then the screen erased.
const redraw = "\x1b[H\x1b[2J"

// openPTY opens a pseudo-terminal: the side the test reads, and the
// terminal the command writes to.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	fd := int(ptm.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0), "unlockpt")
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err, "ptsname")
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	return ptm, pts
}

// ttyOutput collects what the command writes to the terminal.
type ttyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (o *ttyOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// TestInspectWatchRedrawsOnATerminal: on a terminal each refresh redraws
// the screen in place, with no blank line between refreshes.
func TestInspectWatchRedrawsOnATerminal(t *testing.T) {
	srv := redistest.Start(t)
	ptm, pts := openPTY(t)
	cmd := exec.Command(batonBin, "inspect", "--watch", "--interval", "10ms", "--addr", srv.Addr, "k")
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	cmd.Stdout = pts
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	pts.Close() // the command holds the terminal now; reads end when it exits

	var out ttyOutput
	var reader sync.WaitGroup
	reader.Go(func() {
		b := make([]byte, 4096)
		for {
			n, err := ptm.Read(b)
			out.mu.Lock()
			out.buf.Write(b[:n])
			out.mu.Unlock()
			if err != nil { // EIO once no process holds the terminal
				return
			}
		}
	})
	kill := time.AfterFunc(watchGuard, func() { _ = cmd.Process.Kill() })
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // should the test stop early
		reader.Wait()
	})
	redistest.Eventually(t, func() bool { return strings.Count(out.String(), "the lock is free") >= 3 },
		watchGuard, 5*time.Millisecond, "three refreshes")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	reader.Wait()
	require.True(t, kill.Stop(), "inspect --watch did not stop within %v of SIGINT", watchGuard)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		require.Equal(t, 0, exit.ExitCode(), "stderr: %s", stderr.String())
	}
	require.NoError(t, err)
	require.Empty(t, stderr.String())

	// The terminal turns each "\n" into "\r\n".
	screen := strings.ReplaceAll(out.String(), "\r\n", "\n")
	require.True(t, strings.HasPrefix(screen, redraw+"refreshed: "), "%q", screen)
	frames := strings.Split(screen, redraw)[1:]
	require.GreaterOrEqual(t, len(frames), 3)
	for _, f := range frames {
		require.True(t, strings.HasPrefix(f, "refreshed: "), "%q", f)
		require.NotContains(t, f, "\n\n", "no blank line on a terminal")
	}
}
