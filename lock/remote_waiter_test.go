package lock_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// The remote waiter runs in a child process (this test binary, run again),
// as it would in production: a waiter in the holder's own process shares
// the holder's scheduler and network poller, which decide the race by
// themselves.
const (
	remoteWaiterAddr = "BATON_REMOTE_WAITER_ADDR"
	remoteWaiterMode = "BATON_REMOTE_WAITER_MODE"
)

// modes are the ways of running the lock that the scenario compares: the
// fast mode's release styles, and fair mode.
var modes = map[string][]lock.Option{
	"ping+eval": {lock.WithReleaseStyle(lock.ReleasePingEval)},
	"eval":      {lock.WithReleaseStyle(lock.ReleaseEval)},
	"getdel":    {lock.WithReleaseStyle(lock.ReleaseGetDel)},
	"fair":      {lock.WithFair()},
}

// passedOver runs the scenario baton exists for: a holder locks, does one
// GET+SET and unlocks, 200 times back to back; a waiter in another process,
// with its own connections, asks for the lock once after the holder's 10th
// iteration. It returns how many times the holder acquired the lock while
// the waiter was waiting: the holder's fencing tokens that fall between
// the last token handed out when the waiter asked and the waiter's own.
func passedOver(t *testing.T, srv *redistest.Server, mode string) int {
	t.Helper()
	srv.Do(t, "FLUSHALL")
	child := exec.Command(os.Args[0], "-test.run=^TestRemoteWaiterProcess$")
	child.Env = append(os.Environ(), remoteWaiterAddr+"="+srv.Addr, remoteWaiterMode+"="+mode)
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	defer child.Wait() //nolint:errcheck // its result is read from stdout
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "child did not start")
	require.Equal(t, "ready", lines.Text())

	holder := open(t, srv, modes[mode]...)
	var tokens []uint64
	data, err := conn.Dial(context.Background(), srv.Addr)
	require.NoError(t, err)
	defer data.Close()
	for i := range 200 {
		ls := mustLock(t, holder, "hot")
		tokens = append(tokens, ls.Token())
		incrementPlainly(t, data, "state")
		mustUnlock(t, ls)
		if i == 9 {
			_, err := fmt.Fprintln(stdin, "go")
			require.NoError(t, err)
		}
	}
	require.True(t, lines.Scan(), "child gave no result")
	var from, token uint64
	_, err = fmt.Sscanf(lines.Text(), "from %d token %d", &from, &token)
	require.NoError(t, err, lines.Text())
	passed := 0
	for _, held := range tokens {
		if held > from && held < token {
			passed++
		}
	}
	last := max(token, slices.Max(tokens))
	require.Equal(t, strconv.FormatUint(last, 10), srv.Do(t, "GET", "baton:{hot}:fence").Str, "the counter holds the last token")
	return passed
}

// TestRemoteWaiterProcess is the waiter's side of passedOver, run in a
// child process. It waits for "go" on stdin, reads the fencing counter and
// locks, and prints how many acquisitions came between.
func TestRemoteWaiterProcess(t *testing.T) {
	addr := os.Getenv(remoteWaiterAddr)
	if addr == "" {
		t.Skip("the remote waiter of TestRemoteWaiterNotPassedOverByBackToBackLocks")
	}
	opts, ok := modes[os.Getenv(remoteWaiterMode)]
	require.True(t, ok, "unknown mode %q", os.Getenv(remoteWaiterMode))
	ctx := context.Background()
	l, err := lock.Open(ctx, addr, opts...)
	require.NoError(t, err)
	defer l.Close()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	require.True(t, in.Scan())
	// Read the fencing counter on the Locker's own connection, just ahead
	// of the Lock's first command: acquisitions counted from there are the
	// ones that came after the waiter asked.
	node, err := lock.Node(ctx, l, "hot")
	require.NoError(t, err)
	cn := node.Current()
	require.NotNil(t, cn)
	counter, err := cn.Start([]string{"GET", "baton:{hot}:fence"})
	require.NoError(t, err)
	ls, err := l.Lock(ctx, "hot")
	require.NoError(t, err)
	replies, err := counter.Wait(ctx)
	require.NoError(t, err)
	from, err := strconv.ParseUint(replies[0].Str, 10, 64)
	require.NoError(t, err)
	if os.Getenv(remoteWaiterMode) == "fair" {
		// Count from the moment the waiter's request was queued, read in
		// the same script: what comes between reading the counter and
		// queueing is this process being slow, not the lock being unfair.
		from = ls.Token()
		if queuedAfter, queued := lock.QueuedAfter(ls); queued {
			from = queuedAfter
		}
	}
	fmt.Printf("from %d token %d\n", from, ls.Token())
	require.NoError(t, ls.Unlock(ctx))
}

// maxPassedOverPingEval bounds how often a remote waiter is passed over
// with the default release. Once the waiter has asked, the next release
// hands it the lock; what can pass it is the holder's iterations between
// the waiter's first try, which does not ask, and its asking try, sent
// once its hand-off waiter is registered (no round trip since it no
// longer subscribes to the key's events first). Measured on a 2-vCPU
// machine with -race: over 50 runs the waiter was passed over 0 times in
// 26, once in 16, twice in 4, 3 times in 2, 4 and 5 times in 1 each (it
// was 0 to 4 with the subscription). The bound leaves room for a slower
// machine, so that the test holds 50 runs out of 50.
const maxPassedOverPingEval = 20

func TestRemoteWaiterNotPassedOverByBackToBackLocks(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{"ping+eval", "eval", "getdel"} {
		t.Run(mode, func(t *testing.T) {
			n := passedOver(t, srv, mode)
			t.Logf("release=%s passed_over=%d", mode, n)
			if mode == "ping+eval" {
				require.LessOrEqual(t, n, maxPassedOverPingEval)
			}
		})
	}
}

// TestFairRemoteWaiterIsPassedOverAtMostOnce runs the same scenario in fair
// mode, on servers where the fast mode's head start does not exist: with
// I/O threads, and without keyspace notifications. The one pass allowed is
// the holder's acquire that may land before the waiter's enqueue.
func TestFairRemoteWaiterIsPassedOverAtMostOnce(t *testing.T) {
	for name, config := range map[string][]string{
		"default":     nil,
		"io-threads":  {"io-threads 4", "io-threads-do-reads yes"},
		"no-keyspace": {`notify-keyspace-events ""`},
	} {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithConfig(config...))
			n := passedOver(t, srv, "fair")
			t.Logf("server=%s passed_over=%d", name, n)
			require.LessOrEqual(t, n, 1)
		})
	}
}
