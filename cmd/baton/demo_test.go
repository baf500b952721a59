package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
)

// demoTimeout bounds a short demo (--runs 1 or 2) under the race detector.
const demoTimeout = 3 * time.Minute

// noDockerImage keeps the Docker fallback from finding an image, so that
// a test of the embedded fallback does not depend on what images are here.
const noDockerImage = "BATON_REDIS_IMAGE=baton-test-no-such-image:none"

var demoConfigs = []string{"naive-eval", "naive-ping+eval", "fast", "fast+hold", "fair", "fair+hold"}

// TestDemoOnAThrowawayServer: with redis-server on PATH and no --addr, the
// demo says so on its first line, runs every configuration with exact
// counts, and removes the server afterwards.
func TestDemoOnAThrowawayServer(t *testing.T) {
	redistest.Start(t) // skips, or fails, where redis-server is missing
	r := runBaton(t, demoTimeout, nil, "demo", "--runs", "2")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	first, _, _ := strings.Cut(r.stdout, "\n")
	require.Contains(t, first, "a throwaway redis-server from PATH")
	for _, name := range demoConfigs {
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(name)+`\s+\d+ / \d+\s.*\s2 of 2$`, r.stdout)
	}
	require.Contains(t, r.stdout, "counted in the server's order")
	require.Contains(t, r.stdout, "every count was exact")
	requireRefused(t, throwawayAddr(t, first))
}

// TestDemoJSON: --json prints one JSON document on stdout and nothing
// else there; the figures are the table's.
func TestDemoJSON(t *testing.T) {
	srv := redistest.Start(t)
	r := runBaton(t, demoTimeout, nil, "demo", "--runs", "1", "--json", "--addr", srv.Addr)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var report struct {
		Server   struct{ Kind, Addr string }
		Counting string
		Rows     []struct {
			Config    string
			Passed    []int
			ExactRuns int `json:"exact_runs"`
			Runs      int
			ModifyUS  float64 `json:"modify_us"`
		}
		Summary string
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	require.NoError(t, dec.Decode(&report))
	require.False(t, dec.More(), "more than one JSON document on stdout")
	require.Equal(t, "given", report.Server.Kind)
	require.Equal(t, srv.Addr, report.Server.Addr)
	require.Equal(t, "server order", report.Counting)
	require.Len(t, report.Rows, len(demoConfigs))
	for i, row := range report.Rows {
		require.Equal(t, demoConfigs[i], row.Config)
		require.Equal(t, 1, row.ExactRuns)
		require.Len(t, row.Passed, 1)
		require.Positive(t, row.ModifyUS)
	}
	require.NotEmpty(t, report.Summary)
	require.Contains(t, r.stderr, srv.Addr, "the server line goes to stderr with --json")
	// The demo leaves a user's server as it found it.
	require.Empty(t, srv.Do(t, "KEYS", "baton:demo:*").Elems)
}

// TestDemoOnTheEmbeddedServer: with neither redis-server nor an image,
// the demo runs the fair rows on a server in its own process and says in
// one line why the others did not run.
func TestDemoOnTheEmbeddedServer(t *testing.T) {
	r := runBaton(t, demoTimeout, []string{"PATH=" + t.TempDir(), noDockerImage}, "demo", "--runs", "1")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	first, _, _ := strings.Cut(r.stdout, "\n")
	require.Contains(t, first, "embedded in this process")
	require.Regexp(t, `(?m)^fair\s+\d+ / \d+\s.*\s1 of 1$`, r.stdout)
	require.Regexp(t, `(?m)^fair\+hold\s+\d+ / \d+\s.*\s1 of 1$`, r.stdout)
	require.Regexp(t, `(?m)^Not run: naive-eval, naive-ping\+eval, fast, fast\+hold \(.*keyspace notifications.*\)\.$`, r.stdout)
	require.NotRegexp(t, `(?m)^fast\s`, r.stdout)
	require.Contains(t, r.stdout, "every count was exact")
}

// TestDemoRuntimeErrorNamesTheServer: a server that does not answer is
// one line naming it, exit code 1.
func TestDemoRuntimeErrorNamesTheServer(t *testing.T) {
	addr := redistest.ClosedAddr(t)
	r := runBaton(t, 30*time.Second, nil, "demo", "--addr", addr)
	require.Equal(t, 1, r.code, "stderr: %s", r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "stderr: %q", r.stderr)
	require.Contains(t, r.stderr, addr)
}

// TestDemoInterruptedCleansUp: SIGINT in the middle of a run stops the
// demo with exit code 130, its leases released and its keys deleted on
// the given server, and the keyspace events it turned on put back.
func TestDemoInterruptedCleansUp(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do(t, "CONFIG", "SET", "notify-keyspace-events", "")
	r := interruptDemo(t, nil, "--addr", srv.Addr)
	require.Equal(t, 130, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stderr, "interrupted")
	require.Empty(t, srv.Do(t, "KEYS", "baton:demo:*").Elems)
	require.NotContains(t, srv.Do(t, "CONFIG", "GET", "notify-keyspace-events").Elems[1].Str, "$")
}

// TestDemoInterruptedRemovesItsServer: SIGINT removes the throwaway
// server the demo started.
func TestDemoInterruptedRemovesItsServer(t *testing.T) {
	redistest.Start(t)
	r := interruptDemo(t, nil)
	require.Equal(t, 130, r.code, "stderr: %s", r.stderr)
	first, _, _ := strings.Cut(r.stdout, "\n")
	requireRefused(t, throwawayAddr(t, first))
}

// interruptDemo starts a demo, waits until it is running its scenarios
// (its first line printed, then a moment more), and sends it SIGINT.
func interruptDemo(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, batonBin, append([]string{"demo", "--runs", "50"}, args...)...)
	cmd.Env = append(append(cmd.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	require.NoError(t, err, "no first line") // stderr is read only after Wait
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	rest, _ := lines.ReadString(0)
	err = cmd.Wait()
	require.NoError(t, ctx.Err(), "the demo did not stop after SIGINT")
	var exit *exec.ExitError
	code := 0
	if err != nil {
		require.ErrorAs(t, err, &exit)
		code = exit.ExitCode()
	}
	return result{stdout: first + rest, stderr: stderr.String(), code: code}
}

var addrInLine = regexp.MustCompile(`on (127\.0\.0\.1:\d+)`)

func throwawayAddr(t *testing.T, line string) string {
	t.Helper()
	m := addrInLine.FindStringSubmatch(line)
	require.NotNil(t, m, "no address in %q", line)
	return m[1]
}

func requireRefused(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	require.Error(t, err, "the throwaway server on %s is still there", addr)
}

// TestDemoOnADockerContainer: with no redis-server on PATH and a local
// image, the demo runs every configuration in a throwaway container and
// removes it. It needs a Docker engine and the image `make redis-image`
// builds; it skips without them.
func TestDemoOnADockerContainer(t *testing.T) {
	image := "baton-redis:local"
	if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		t.Skipf("no Docker engine or no %s image (make redis-image builds it): %v: %s", image, err, strings.TrimSpace(string(out)))
	}
	r := runBaton(t, demoTimeout, []string{"PATH=" + t.TempDir(), "BATON_REDIS_IMAGE=" + image}, "demo", "--runs", "1")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	first, _, _ := strings.Cut(r.stdout, "\n")
	require.Contains(t, first, "a throwaway "+image+" container")
	for _, name := range demoConfigs {
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(name)+`\s+\d+ / \d+\s.*\s1 of 1$`, r.stdout)
	}
	requireRefused(t, throwawayAddr(t, first))
}
