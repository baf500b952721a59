package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// forEveryLockTwice runs f, as a subtest per lock (the floor is not
// one), with two instances of the lock opened on a server of the test's
// own, as two processes would have them, within timeout.
func forEveryLockTwice(t *testing.T, timeout time.Duration, f func(t *testing.T, ctx context.Context, im impl, a, b locker)) {
	addr := startServer(t)
	for _, im := range impls() {
		if im.floor {
			continue
		}
		t.Run(im.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			a, err := im.open(ctx, addr)
			require.NoError(t, err)
			defer a.Close()
			b, err := im.open(ctx, addr)
			require.NoError(t, err)
			defer b.Close()
			f(t, ctx, im, a, b)
		})
	}
}

// TestEveryLockExcludes opens every lock twice, as two processes would,
// and checks that while one holds a key the other's Lock waits, and
// returns once the key is released. A lock known to miss a release now
// and then (impl.losesWakeUps) is skipped, saying so, when its waiter
// does: that is the library's, which the scenarios count as a stall.
func TestEveryLockExcludes(t *testing.T) {
	forEveryLockTwice(t, 10*time.Second, func(t *testing.T, ctx context.Context, im impl, a, b locker) {
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
			if im.losesWakeUps != "" {
				t.Skipf("b did not get the key within 5s of its release, a known defect of the library: %s", im.losesWakeUps)
			}
			t.Fatal("b did not get the key within 5s of its release")
		}
	})
}

// TestOneTinyRun runs the whole command for one round of a few
// operations and checks that the table has a row per implementation.
func TestOneTinyRun(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	plots := filepath.Join(t.TempDir(), "plots")
	err := run(ctx, []string{"--addr", addr, "--rounds", "2", "--ops", "5", "--trials", "2", "--losses", "2", "--cpuprofile", profile,
		"--throughput-duration", "50ms", "--handoff-duration", "100ms", "--scenarios", "1,2,3,4,5,7", "--plots", plots},
		&stdout, &stderr)
	require.NoError(t, err, stderr.String())
	out := stdout.String()
	for _, im := range impls() {
		require.Contains(t, out, "| "+im.name+" | ", out)
		if !im.floor {
			require.Contains(t, out, "- "+im.name+": ", "in the server cost and the passed-over counts")
		}
	}
	// The baseline's ratios to itself are 1 in every round.
	require.True(t, strings.Contains(out, "| "+baseline+" | "), out)
	require.Contains(t, out, "1.00× | 1.00× |")
	require.Contains(t, out, "The floor's p50 ranged from ")
	for _, h := range []string{"### Uncontended Lock+Unlock", "### Uncontended read-modify-write", "### Throughput", "### Hand-off", "### Server cost", "### The remote waiter", "### Lost lease noticed",
		"## The server given with --addr"} {
		require.Equal(t, 1, strings.Count(out, h), h)
	}
	// The report starts with the command, the date and the machine.
	require.True(t, strings.HasPrefix(out, "Command (in bench/): `go run . --addr "), out)
	require.Equal(t, 1, strings.Count(out, "Machine: "), out)
	require.Equal(t, 1, strings.Count(out, "Date: "), out)
	st, err := os.Stat(profile)
	require.NoError(t, err)
	require.NotZero(t, st.Size(), "empty CPU profile")
	for _, im := range impls() {
		if im.manager {
			require.Contains(t, out, "| "+im.name+" + manager | ", out)
			require.Contains(t, out, "| "+im.name+" + manager, replayed | ", out)
		}
	}
	for _, f := range []string{"uncontended", "modify", "handoff-waits", "passed-over", "waiter-wait"} {
		st, err := os.Stat(filepath.Join(plots, "given-"+f+".png"))
		require.NoError(t, err)
		require.NotZero(t, st.Size(), f)
	}
}

// TestScenarioSixRunsOnEveryServer runs scenario 1 on the default
// server, again on one with I/O threads, and on one of --server-bin's
// binary (redis-server again, by its path), each in a section of its own.
func TestScenarioSixRunsOnEveryServer(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server in PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err = run(ctx, []string{"--scenarios", "1,6", "--server-bin", bin, "--impls", "baton-fast,floor",
		"--rounds", "1", "--ops", "3"}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	out := stdout.String()
	for _, h := range []string{
		"\n## redis-server from PATH, default configuration\n",
		"\n## redis-server from PATH, io-threads 4, io-threads-do-reads yes\n",
		"\n## redis-server (--server-bin), default configuration\n",
	} {
		require.Equal(t, 1, strings.Count(out, h), h)
	}
	require.Equal(t, 3, strings.Count(out, "### Uncontended Lock+Unlock"), out)
	require.Equal(t, 3, strings.Count(out, "Server: redis "), out)
}

func TestFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds 0"},
		{[]string{"--ops", "-1"}, "--ops -1"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--scenarios", "1,8"}, "--scenarios"},
		{[]string{"--scenarios", "0"}, "--scenarios"},
		{[]string{"--scenarios", "5"}, "add 3"},
		{[]string{"--scenarios", "1,6", "--addr", "127.0.0.1:1"}, "leave out 6 or --addr"},
		{[]string{"--scenarios", "1", "--server-bin", "valkey-server"}, "add 6"},
		{[]string{"--trials", "0"}, "--trials 0"},
		{[]string{"--losses", "0"}, "--losses 0"},
		{[]string{"--pin", "--addr", "127.0.0.1:1", "--scenarios", "1"}, "leave out --pin or --addr"},
		{[]string{"--scenarios", "x"}, "--scenarios"},
		{[]string{"--throughput-duration", "0s"}, "--throughput-duration"},
		{[]string{"--handoff-duration", "-1s"}, "--handoff-duration"},
		{[]string{"--slow-steps", "-1ms"}, "--slow-steps -1ms"},
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

// TestAddrLeavesOutScenarioSix: with --addr and no --scenarios, the
// scenarios are those that run on one given server.
func TestAddrLeavesOutScenarioSix(t *testing.T) {
	c, err := parseFlags([]string{"--addr", "127.0.0.1:1"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 7: true}, c.scenarios)
	c, err = parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.True(t, c.scenarios[6])
}

func TestStickyWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &stickyWriter{w: &buf}
	_, err := w.Write([]byte("a"))
	require.NoError(t, err)
	w.w = failingWriter{}
	_, err = w.Write([]byte("b"))
	require.ErrorIs(t, err, io.ErrShortWrite)
	w.w = &buf
	_, err = w.Write([]byte("c"))
	require.ErrorIs(t, err, io.ErrShortWrite, "sticky")
	require.Equal(t, "a", buf.String())
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

// handoffColumn returns the index of the hand-off column named name.
func handoffColumn(t *testing.T, name string) int {
	t.Helper()
	for i, c := range handoffColumns {
		if c.name == name {
			return i
		}
	}
	t.Fatalf("no hand-off column %q", name)
	return -1
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
	require.NotContains(t, stdout.String(), "### Hand-off")
	require.Regexp(t, `\| floor \(2 PINGs\) \| \d+ \| 0 \| – \|`, stdout.String())
	// Two PINGs an operation, as the server counts them, and some of the
	// server's CPU time for them.
	m := regexp.MustCompile(`\| floor \(2 PINGs\) \| [^|]+ \| [^|]+ \| [^|]+ \| ([0-9.]+) \| 2\.0 \| – \|`).FindStringSubmatch(stdout.String())
	require.NotNil(t, m, stdout.String())
	serverCPU, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	require.Positive(t, serverCPU, "server CPU µs/op")
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
	defer func() { require.NoError(t, closeEach(insts)) }()
	groups, err := openHandoffGroups(ctx, addr, "baton-bench-test:", all)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeEach(groups)) }()
	require.Len(t, groups, len(all), "every lock, and the floor's lockers taking turns")
	require.True(t, groups[len(groups)-1].floor, "the floor last, as in the report")

	tput, err := runThroughput(ctx, insts, 1, 50*time.Millisecond, io.Discard)
	require.NoError(t, err)
	for i, in := range insts {
		require.Positive(t, tput[0][i][0], "%s: ops/s", in.name)
	}

	admin, err := newGoRedis(ctx, addr)
	require.NoError(t, err)
	defer admin.Close()
	var slow bytes.Buffer
	hand, err := runHandoff(ctx, groups, admin, 1, 300*time.Millisecond, time.Nanosecond, &slow)
	require.NoError(t, err)
	for _, g := range groups {
		for _, step := range []string{"hand-off", "hold", "unlock"} {
			require.Regexp(t, `(?m)^slow step: `+regexp.QuoteMeta(g.name)+`, locker \d, `+step+` took \S+, \S+ into the round$`, slow.String(), "every step is slower than 1ns")
		}
	}
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
		require.Zero(t, f[handoffColumn(t, "threaded writes/acq")], "%s: threaded writes without I/O threads", g.name)
	}
	floor := hand.samples[0][len(groups)-1]
	require.Zero(t, floor[3], "the floor's lockers take turns: none keeps the turn")
	require.InDelta(t, 1.0, floor[6], 0.01, "the floor's Jain index")
	require.InDelta(t, 2.0, floor[7], 0.05, "the floor's commands per acquisition: two PINGs (and a Lock cut short at the round's end)")
}

// TestRemoteWaiterTrials runs scenario 4's trials for every lock and
// checks that each ends with the waiter served and sane figures.
func TestRemoteWaiterTrials(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	groups, err := openGroups(ctx, addr, "baton-bench-test:", "w", 2, impls())
	require.NoError(t, err)
	defer func() { require.NoError(t, closeEach(groups)) }()
	trials, err := runWaiter(ctx, groups, 2, io.Discard)
	require.NoError(t, err)
	for _, trial := range trials {
		for i, g := range groups {
			require.GreaterOrEqual(t, trial[i].passed, 0, g.name)
			require.LessOrEqual(t, trial[i].passed, passOverLimit, g.name)
			require.Positive(t, trial[i].wait, g.name)
		}
	}
	var out bytes.Buffer
	names := namesOf(groups)
	base := baselineIndex(names)
	require.NoError(t, writeWaiterTable(&out, names, trials, base))
	require.Contains(t, out.String(), "| "+baseline+" | ")
	require.Contains(t, out.String(), "| 1.00× |")
}

// TestLockWithinHoldsUntilUnlock: a lock taken by lockWithin stays held
// after the call, for every lock (rueidislock lets go of a lock whose
// context ends), until its unlock; and a Lock on a key held elsewhere
// is reported stalled after stallGrace.
func TestLockWithinHoldsUntilUnlock(t *testing.T) {
	forEveryLockTwice(t, 20*time.Second, func(t *testing.T, ctx context.Context, _ impl, a, b locker) {
		const key = "baton-bench-test:within"

		unlock, stalled, err := lockWithin(ctx, a, key)
		require.NoError(t, err)
		require.False(t, stalled)
		time.Sleep(100 * time.Millisecond)
		_, stalled, err = lockWithin(ctx, b, key)
		require.NoError(t, err)
		require.True(t, stalled, "b took the key a holds")
		require.NoError(t, unlock(ctx))
	})
}

func TestQuantileAndCounts(t *testing.T) {
	require.Zero(t, quantile(nil, 0.5))
	xs := []float64{5, 1, 4, 2, 3}
	require.Equal(t, 1.0, quantile(xs, 0))
	require.Equal(t, 3.0, quantile(xs, 0.5))
	require.Equal(t, 5.0, quantile(xs, 0.9))
	require.Equal(t, 5.0, quantile(xs, 1))
	require.Equal(t, []float64{5, 1, 4, 2, 3}, xs, "left in its order")

	trials := [][]waiterTrial{{{passed: 3}}, {{passed: 0}}, {{passed: 3}}}
	require.Equal(t, "0: 1, 3: 2", passedOverCounts(trials, 0))
}

// TestThreadedWritesUnderFanOut backs the report's reading of scenario 6:
// on a server with I/O threads, a lock whose waiters watch the key's
// keyspace channel (go-redis notify) makes the server write through its
// I/O threads under hand-off, since every SET with a TTL of the lock is an
// event to every waiting process; baton's waiters, which wait for their
// hand-off, make it write fewer.
func TestThreadedWritesUnderFanOut(t *testing.T) {
	srv, err := redisproc.Start(redisproc.WithConfig(append(throwawayConfig, ioThreadsConfig...)...))
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := selectImpls(impls(), "baton-fast,baton-fair,notify-eval")
	require.NoError(t, err)
	groups, err := openGroups(ctx, srv.Addr, "baton-bench-test:", "h", handoffLockers, all)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeEach(groups)) }()
	admin, err := newGoRedis(ctx, srv.Addr)
	require.NoError(t, err)
	defer admin.Close()
	res, err := runHandoff(ctx, groups, admin, 1, 500*time.Millisecond, 0, io.Discard)
	require.NoError(t, err)
	threaded := handoffColumn(t, "threaded writes/acq")
	fast, fair, notify := res.samples[0][0][threaded], res.samples[0][1][threaded], res.samples[0][2][threaded]
	require.Positive(t, notify, "threaded writes per acquisition, go-redis notify")
	require.Less(t, fast, notify, "threaded writes per acquisition, baton fast")
	require.Less(t, fair, notify, "threaded writes per acquisition, baton fair")
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
