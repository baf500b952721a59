package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
)

// benchTimeout bounds one bench run in the tests: half a second of load,
// then the cleanup, under the race detector.
const benchTimeout = time.Minute

// benchShort is the --duration of the tests' runs.
const benchShort = "500ms"

// benchReport is the part of bench's --json document the tests read.
type benchReport struct {
	Server      string  `json:"server"`
	Mode        string  `json:"mode"`
	Op          string  `json:"op"`
	Concurrency int     `json:"concurrency"`
	Keys        int     `json:"keys"`
	KeyPrefix   string  `json:"key_prefix"`
	Ops         int64   `json:"ops"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	Latency     struct {
		Count int64   `json:"count"`
		P50   float64 `json:"p50_us"`
		P90   float64 `json:"p90_us"`
		P99   float64 `json:"p99_us"`
		P999  float64 `json:"p99_9_us"`
		Max   float64 `json:"max_us"`
	} `json:"latency"`
	Commands *struct {
		PerAcquisition         float64            `json:"per_acquisition"`
		ScriptsPerAcquisition  float64            `json:"scripts_per_acquisition"`
		IncludesScriptCommands bool               `json:"includes_script_commands"`
		ByCommand              map[string]float64 `json:"per_acquisition_by_command"`
	} `json:"commands"`
	KeysRemoved int `json:"keys_removed"`
}

// decodeBenchJSON requires stdout to be exactly one JSON document.
func decodeBenchJSON(t *testing.T, stdout string) benchReport {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var raw json.RawMessage
	require.NoError(t, dec.Decode(&raw), "stdout: %s", stdout)
	require.ErrorIs(t, dec.Decode(&raw), io.EOF, "more than one JSON document on stdout: %s", stdout)
	var rep benchReport
	require.NoError(t, json.Unmarshal(raw, &rep))
	return rep
}

// requireNoBenchKeys: the bench deleted everything it wrote.
func requireNoBenchKeys(t *testing.T, srv *redistest.Server) {
	t.Helper()
	require.Empty(t, srv.Do(t, "KEYS", "baton-bench:*").Elems)
}

// TestBenchTable: the table people read has the throughput and every
// percentile column, and the commands per acquisition by command.
func TestBenchTable(t *testing.T) {
	srv := redistest.Start(t)
	r := runBaton(t, benchTimeout, nil, "bench", "--addr", srv.Addr, "--duration", benchShort)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Empty(t, r.stderr)

	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Greater(t, len(lines), 5, "stdout: %s", r.stdout)
	require.Equal(t, "server: "+srv.Addr+" (given with --addr)", lines[0])
	lines = lines[1:]
	require.Equal(t, []string{"mode", "op", "goroutines", "keys", "elapsed", "ops", "ops/s", "p50", "p90", "p99", "p99.9", "max", "cmds/op"},
		strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.Len(t, row, 13)
	require.Equal(t, []string{"fast", "lock", "8", "8"}, row[:4])
	for _, cell := range row[7:12] {
		require.Regexp(t, `^[0-9.]+(ns|µs|ms|s)$`, cell)
	}
	require.Contains(t, r.stdout, "scripts call count too")
	require.Regexp(t, `(?m)^  evalsha +[0-9.]+$`, r.stdout)
	require.Regexp(t, `(?m)^  total +[0-9.]+$`, r.stdout)
	requireNoBenchKeys(t, srv)
}

// TestBenchJSON: every mode and operation runs, and --json prints one
// document with operations, latencies in order, and a cost in commands.
func TestBenchJSON(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{"fast", "fair"} {
		for _, op := range []string{"lock", "modify"} {
			t.Run(mode+"_"+op, func(t *testing.T) {
				r := runBaton(t, benchTimeout, nil, "bench", "--addr", srv.Addr, "--duration", benchShort,
					"--mode", mode, "--op", op, "--concurrency", "4", "--keys", "2", "--json")
				require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
				rep := decodeBenchJSON(t, r.stdout)
				require.Equal(t, mode, rep.Mode)
				require.Equal(t, op, rep.Op)
				require.Equal(t, 4, rep.Concurrency)
				require.Equal(t, 2, rep.Keys)
				require.Equal(t, srv.Addr, rep.Server)
				require.Regexp(t, `^baton-bench:[0-9a-f]{16}:$`, rep.KeyPrefix)

				require.Positive(t, rep.Ops)
				require.Positive(t, rep.OpsPerSec)
				require.Equal(t, rep.Ops, rep.Latency.Count)
				l := rep.Latency
				require.Positive(t, l.P50)
				require.True(t, l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max, "%+v", l)

				require.NotNil(t, rep.Commands)
				require.Greater(t, rep.Commands.PerAcquisition, 1.0)
				require.Positive(t, rep.Commands.ScriptsPerAcquisition)
				require.True(t, rep.Commands.IncludesScriptCommands)
				require.NotContains(t, rep.Commands.ByCommand, "info", "the bench's own INFO counted")
				// Every release is PING + EVALSHA; scripts' own calls are
				// there too.
				require.GreaterOrEqual(t, rep.Commands.ByCommand["ping"], 0.99)
				require.Positive(t, rep.Commands.ByCommand["get"]+rep.Commands.ByCommand["set"])

				require.Positive(t, rep.KeysRemoved)
				requireNoBenchKeys(t, srv)
			})
		}
	}
}

// TestBenchUsageErrors: mistakes are one line and exit 2, before any
// server is looked for.
func TestBenchUsageErrors(t *testing.T) {
	cases := [][]string{
		{"--mode", "sideways"},
		{"--op", "steal"},
		{"--concurrency", "0"},
		{"--concurrency", "1000000"},
		{"--keys", "-1"},
		{"--duration", "0s"},
		{"--duration", "soon"},
		{"extra"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			r := runBaton(t, 30*time.Second, nil, append([]string{"bench", "--addr", "127.0.0.1:1"}, args...)...)
			require.Equal(t, 2, r.code, "stderr: %s", r.stderr)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "stderr: %q", r.stderr)
			require.True(t, strings.HasPrefix(r.stderr, "baton bench: "), r.stderr)
			require.NotContains(t, r.stdout, "mode  op", "a table for a command line that was refused")
		})
	}
}

// TestBenchFastModeWithoutKeyspaceEvents: on a server that publishes no
// keyspace events and refuses CONFIG, fast mode cannot run: a runtime
// error (exit 1) on one line that names the server and the way out, after
// the line that names the server. Fair mode, which needs no events, runs
// there.
func TestBenchFastModeWithoutKeyspaceEvents(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig(`notify-keyspace-events ""`, `rename-command CONFIG ""`))
	r := runBaton(t, benchTimeout, nil, "bench", "--addr", srv.Addr, "--duration", benchShort)
	require.Equal(t, 1, r.code, "stderr: %s", r.stderr)
	require.Equal(t, "server: "+srv.Addr+" (given with --addr)\n", r.stdout)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "stderr: %q", r.stderr)
	require.True(t, strings.HasPrefix(r.stderr, "baton bench: bench on "+srv.Addr+": "), r.stderr)
	require.Contains(t, r.stderr, "keyspace events not enabled")
	require.Contains(t, r.stderr, "--mode fair")
	require.NotContains(t, r.stderr, "goroutine")

	r = runBaton(t, benchTimeout, nil, "bench", "--addr", srv.Addr, "--duration", benchShort, "--mode", "fair", "--json")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Positive(t, decodeBenchJSON(t, r.stdout).Ops)
	requireNoBenchKeys(t, srv)
}

// TestBenchUnreachableServer: a server that is not there is one line,
// exit 1, naming it.
func TestBenchUnreachableServer(t *testing.T) {
	addr := redistest.ClosedAddr(t)
	r := runBaton(t, benchTimeout, nil, "bench", "--addr", addr, "--duration", benchShort)
	require.Equal(t, 1, r.code, "stderr: %s", r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "stderr: %q", r.stderr)
	require.True(t, strings.HasPrefix(r.stderr, "baton bench: bench on "+addr+": "), r.stderr)
}

// TestBenchURLPasswordIsRedacted: the report may be pasted anywhere; a
// password in the address is not in it.
func TestBenchURLPasswordIsRedacted(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("requirepass s3cret-pw"))
	r := runBaton(t, benchTimeout, nil, "bench", "--addr", "redis://:s3cret-pw@"+srv.Addr, "--duration", benchShort, "--mode", "fair", "--json")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.NotContains(t, r.stdout, "s3cret-pw")
	require.Equal(t, "redis://:xxxxx@"+srv.Addr, decodeBenchJSON(t, r.stdout).Server)
}

// TestBenchInterruptedCleansUp: SIGINT in the middle of a run, with
// waiters queued on contended keys, stops the bench with exit 130, its
// leases released and its keys deleted, in either mode.
func TestBenchInterruptedCleansUp(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			r := interruptBench(t, srv, "--addr", srv.Addr, "--mode", mode, "--op", "modify", "--concurrency", "16", "--keys", "2")
			require.Equal(t, 130, r.code, "stderr: %s", r.stderr)
			require.Equal(t, "baton bench: interrupted; cleaned up\n", r.stderr)
			require.Equal(t, "server: "+srv.Addr+" (given with --addr)\n", r.stdout, "only the server line, no report")
			requireNoBenchKeys(t, srv)
			require.NotContains(t, srv.Do(t, "CLIENT", "LIST").Str, "name=baton-bench")
		})
	}
}

// TestBenchInterruptedRemovesItsServer: SIGINT removes the throwaway
// server the bench started.
func TestBenchInterruptedRemovesItsServer(t *testing.T) {
	redistest.Start(t) // skips the test where there is no redis-server
	r := interruptBench(t, nil, "--mode", "fair")
	require.Equal(t, 130, r.code, "stderr: %s", r.stderr)
	first, _, _ := strings.Cut(r.stdout, "\n")
	m := regexp.MustCompile(`on (127\.0\.0\.1:\d+)`).FindStringSubmatch(first)
	require.NotNil(t, m, "no address in %q", first)
	requireRefused(t, m[1])
}

// interruptBench starts a long bench and sends it SIGINT once it is
// running: when srv is given, once its keys are on the server, else a
// moment after its first line.
func interruptBench(t *testing.T, srv *redistest.Server, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, batonBin, append([]string{"bench", "--duration", "1m"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	require.NoError(t, err, "no first line")
	if srv != nil {
		redistest.Eventually(t, func() bool { return len(srv.Do(t, "KEYS", "baton-bench:*").Elems) > 0 },
			10*time.Second, 10*time.Millisecond, "the bench wrote no keys")
	}
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	rest, _ := io.ReadAll(lines)
	err = cmd.Wait()
	require.NoError(t, ctx.Err(), "the bench did not stop after SIGINT")
	code := 0
	var exit *exec.ExitError
	if err != nil {
		require.True(t, errors.As(err, &exit), "%v", err)
		code = exit.ExitCode()
	}
	return result{stdout: first + string(rest), stderr: stderr.String(), code: code}
}

// TestBenchOnTheEmbeddedServer: with no redis-server on PATH and no local
// image, bench runs on the embedded server, which publishes no keyspace
// events (fast mode is a runtime error that says what to do) and has no
// commandstats (the report says so instead of a count).
func TestBenchOnTheEmbeddedServer(t *testing.T) {
	env := []string{"PATH=" + t.TempDir(), "BATON_REDIS_IMAGE=baton-test-no-such-image:none"}
	r := runBaton(t, benchTimeout, env, "bench", "--duration", benchShort)
	require.Equal(t, 1, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, "server: embedded")
	require.Regexp(t, `(?m)^baton bench: 127\.0\.0\.1:\d+: fast mode .*--mode fair`, r.stderr)

	r = runBaton(t, benchTimeout, env, "bench", "--duration", benchShort, "--mode", "fair", "--op", "modify", "--json")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Nil(t, doc["commands"])
	require.Contains(t, doc["commands_unavailable"], "INFO")
	require.Positive(t, doc["ops"])
}
