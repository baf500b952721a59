package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/redisproc"
)

// startServer starts a throwaway redis-server for one test.
func startServer(t *testing.T) string {
	t.Helper()
	srv, err := redisproc.Start(redisproc.WithConfig(throwawayConfig...))
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	return srv.Addr
}

// TestEveryLockExcludes opens every lock twice, as two processes would,
// and checks that while one holds a key the other's Lock waits, and
// returns once the key is released.
func TestEveryLockExcludes(t *testing.T) {
	addr := startServer(t)
	for _, im := range impls() {
		if im.floor {
			continue
		}
		t.Run(im.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, err := im.open(ctx, addr)
			require.NoError(t, err)
			defer a.Close()
			b, err := im.open(ctx, addr)
			require.NoError(t, err)
			defer b.Close()
			const key = "baton-bench-test:excludes"

			unlockA, err := a.Lock(ctx, key)
			require.NoError(t, err)
			type result struct {
				unlock func(context.Context) error
				err    error
			}
			got := make(chan result, 1)
			go func() {
				u, err := b.Lock(ctx, key)
				got <- result{u, err}
			}()
			select {
			case r := <-got:
				if r.err == nil {
					_ = r.unlock(ctx)
				}
				t.Fatalf("b's Lock returned while a held the key (error %v)", r.err)
			case <-time.After(300 * time.Millisecond):
			}
			require.NoError(t, unlockA(ctx))
			// Every lock here wakes its waiter within 250ms of a release
			// (redsync's longest retry delay); 5s leaves room for a slow
			// machine.
			select {
			case r := <-got:
				require.NoError(t, r.err, "b did not get the key a released")
				require.NoError(t, r.unlock(ctx))
			case <-time.After(5 * time.Second):
				t.Fatal("b did not get the key within 5s of its release")
			}
		})
	}
}

// TestOneTinyRun runs the whole command for one round of a few
// operations and checks that the table has a row per implementation.
func TestOneTinyRun(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	err := run(ctx, []string{"--addr", addr, "--rounds", "2", "--ops", "5", "--cpuprofile", profile,
		"--throughput-duration", "50ms", "--handoff-duration", "100ms"}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	out := stdout.String()
	for _, im := range impls() {
		require.Contains(t, out, "| "+im.name+" | ", out)
	}
	// The baseline's ratios to itself are 1 in every round.
	require.True(t, strings.Contains(out, "| "+baseline+" | "), out)
	require.Contains(t, out, "1.00× | 1.00× |")
	require.Contains(t, out, "The floor's p50 ranged from ")
	for _, h := range []string{"## Uncontended", "## Throughput", "## Hand-off", "Server commands per acquisition"} {
		require.Contains(t, out, h)
	}
	// Each table is followed by the command, the server and the machine.
	require.Equal(t, 3, strings.Count(out, "Command (in bench/): `go run . --addr "), out)
	require.Equal(t, 3, strings.Count(out, "Machine: "), out)
	st, err := os.Stat(profile)
	require.NoError(t, err)
	require.NotZero(t, st.Size(), "empty CPU profile")
}

func TestFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds 0"},
		{[]string{"--ops", "-1"}, "--ops -1"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--scenarios", "1,4"}, "--scenarios"},
		{[]string{"--scenarios", "x"}, "--scenarios"},
		{[]string{"--throughput-duration", "0s"}, "--throughput-duration"},
		{[]string{"--handoff-duration", "-1s"}, "--handoff-duration"},
		{[]string{"--nope"}, "not defined"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseFlags(c.args, &stderr)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestSelectImpls(t *testing.T) {
	all := impls()
	got, err := selectImpls(all, "")
	require.NoError(t, err)
	require.Len(t, got, len(all))

	got, err = selectImpls(all, "floor, baton-fast")
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, baseline, got[0].name, "kept in the report's order")
	require.Equal(t, "floor", got[1].id)

	_, err = selectImpls(all, "floor,nope")
	require.ErrorContains(t, err, `"nope"`)
}

// TestNoBaselineNoRatios: without baton fast in the run, the table has
// figures and no ratios.
func TestNoBaselineNoRatios(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"--addr", addr, "--rounds", "1", "--ops", "3", "--impls", "floor", "--scenarios", "1,2",
		"--throughput-duration", "20ms"}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	require.Contains(t, stdout.String(), "| – | – | – |")
	require.NotContains(t, stdout.String(), "## Hand-off")
	require.Regexp(t, `\| floor \(2 PINGs\) \| \d+ \| 0 \| – \|`, stdout.String())
}

// TestScenarioFigures runs scenarios 2 and 3 once, briefly, for every
// implementation, and checks that their figures are sane.
func TestScenarioFigures(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all := impls()
	insts, err := openAll(ctx, addr, "baton-bench-test:", all)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeAll(insts)) }()
	groups, err := openHandoff(ctx, addr, "baton-bench-test:", all)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeHandoff(groups)) }()
	require.Len(t, groups, len(all)-1, "every lock but the floor")

	tput, err := runThroughput(ctx, insts, 1, 50*time.Millisecond, io.Discard)
	require.NoError(t, err)
	for i, in := range insts {
		require.Positive(t, tput[0][i][0], "%s: ops/s", in.name)
	}

	admin, err := newGoRedis(ctx, addr)
	require.NoError(t, err)
	defer admin.Close()
	hand, err := runHandoff(ctx, groups, admin, 1, 300*time.Millisecond, io.Discard)
	require.NoError(t, err)
	for i, g := range groups {
		require.Positive(t, hand.acquisitions[i], "%s: acquisitions", g.name)
		require.Positive(t, hand.cmds[i].Calls(), "%s: server commands", g.name)
		f := hand.samples[0][i]
		require.Len(t, f, len(handoffColumns))
		require.Positive(t, f[0], "%s: acquisitions/s", g.name)
		require.GreaterOrEqual(t, f[3], 0.0, "%s: kept", g.name)
		require.LessOrEqual(t, f[3], 1.0, "%s: kept", g.name)
		require.Positive(t, f[4], "%s: wait p99", g.name)
		require.GreaterOrEqual(t, f[5], f[4], "%s: wait max under p99", g.name)
		require.Greater(t, f[6], 0.0, "%s: Jain", g.name)
		require.LessOrEqual(t, f[6], 1.0, "%s: Jain", g.name)
		require.Positive(t, f[7], "%s: commands per acquisition", g.name)
	}
}

func TestJain(t *testing.T) {
	require.Zero(t, jain([]int64{0, 0}))
	require.InDelta(t, 1.0, jain([]int64{5, 5, 5, 5}), 1e-12)
	require.InDelta(t, 0.25, jain([]int64{9, 0, 0, 0}), 1e-12)
	require.InDelta(t, 0.9, jain([]int64{1, 2}), 1e-12)
}

func TestMedianAndRatio(t *testing.T) {
	require.Zero(t, median(nil))
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	require.Zero(t, ratio(time.Second, 0))
	require.Equal(t, 0.5, ratio(time.Second, 2*time.Second))
}

// TestMain fails the run if any goroutine outlives the tests: every
// implementation's Close must stop what its library started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
