package integration_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// contention runs a workload of m on instances instances against addr,
// in this process, while inject injects faults on the test's goroutine,
// recording them to rec; then it stops the workload, reads the counts and
// checks the whole history. It fails the test on any problem the checks
// find, and returns the verdict for the figures.
func contention(t *testing.T, addr string, m mix, instances int, inject func(rec *recorder), opts ...lock.Option) verdict {
	t.Helper()
	v := runContention(t, addr, m, instances, inject, opts...)
	require.Empty(t, v.problems)
	return v
}

// runContention is contention, but it returns the problems the checks
// find in the verdict instead of failing the test on them, for faults
// under which baton promises less. A test that did not name its run's
// tokens (m.run) gets a name of its own.
func runContention(t *testing.T, addr string, m mix, instances int, inject func(rec *recorder), opts ...lock.Option) verdict {
	t.Helper()
	if m.run == "" {
		m.run = strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	}
	dir := t.TempDir()
	rec, err := newRecorder(dir, "test")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	var running []*instance
	var wg sync.WaitGroup
	var closeErr error
	// Also when a require below or in inject ends the test early: the
	// workers stop and the instances close before the test returns.
	finish := sync.OnceFunc(func() {
		stop()
		wg.Wait()
		for _, in := range running {
			closeErr = errors.Join(closeErr, in.close())
		}
	})
	defer finish()
	for range instances {
		in, err := openInstance(ctx, addr, m, opts...)
		require.NoError(t, err)
		running = append(running, in)
	}
	for _, in := range running {
		wg.Go(func() { in.run(ctx, m, rec) })
	}
	inject(rec)
	finish()
	require.NoError(t, closeErr)
	return judgeHistory(t, addr, m, dir, rec, opts...)
}

// finishHistory records a final read of every count to rec, then checks
// the history of every log in dir, rec's among them. It logs the verdict
// and, on a problem, every Modify that did not succeed, and fails the
// test on any problem.
func finishHistory(t *testing.T, addr string, m mix, dir string, rec *recorder, opts ...lock.Option) verdict {
	t.Helper()
	v := judgeHistory(t, addr, m, dir, rec, opts...)
	require.Empty(t, v.problems)
	return v
}

// judgeHistory is finishHistory, but it returns the problems in the
// verdict instead of failing the test on them.
func judgeHistory(t *testing.T, addr string, m mix, dir string, rec *recorder, opts ...lock.Option) verdict {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, readCounts(ctx, addr, m, rec, opts...))
	require.NoError(t, rec.close())
	events, err := readHistory(dir)
	require.NoError(t, err)
	checked := time.Now()
	v := check(parse(events))
	t.Logf("%s: %v; checked in %v", m, v, time.Since(checked).Round(time.Millisecond))
	t.Logf("%s: %s", m, v.history.aboutLongest())
	if len(v.problems) > 0 {
		for _, op := range v.history.modifies {
			if op.outcome != outcomeOK {
				t.Logf("%s %s %s: %s", op.token, op.id, op.outcome, op.err)
			}
		}
	}
	return v
}

// okAfter counts the Modify calls that succeeded, called after at.
func okAfter(p parsed, at int64) int {
	n := 0
	for _, m := range p.modifies {
		if m.outcome == outcomeOK && m.call > at {
			n++
		}
	}
	return n
}

// idle returns an inject that injects nothing for d.
func idle(d time.Duration) func(*recorder) {
	return func(*recorder) { time.Sleep(d) }
}

// doAt sends one command to the server at addr as the default user, from
// any goroutine (server.Do fails the test, which only the test's own
// goroutine may).
func doAt(addr string, args ...string) (resp.Value, error) {
	return redisproc.Do(addr, "", args...)
}
