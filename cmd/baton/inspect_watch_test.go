package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// watchGuard bounds the wait for one line of a watch, and for its exit
// after a signal: far above what a refresh takes on a loaded machine, it
// only turns a hang into a failure.
const watchGuard = 30 * time.Second

// watching is a running inspect --watch.
type watching struct {
	cmd    *exec.Cmd
	lines  chan string     // stdout's lines, closed at its end
	reader sync.WaitGroup  // the goroutine that reads stdout into lines
	stderr strings.Builder // read once cmd has exited
	ended  bool            // stop has waited for cmd
}

// startWatch starts inspect --watch with args. The watch is killed at the
// test's cleanup if the test did not stop it.
func startWatch(t *testing.T, args ...string) *watching {
	t.Helper()
	w := &watching{
		cmd:   exec.Command(batonBin, append([]string{"inspect", "--watch"}, args...)...),
		lines: make(chan string, 64),
	}
	w.cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	w.cmd.Stderr = &w.stderr
	stdout, err := w.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	w.reader.Go(func() {
		defer close(w.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
	})
	t.Cleanup(func() {
		if !w.ended {
			_ = w.cmd.Process.Kill()
			w.drain()
			_ = w.cmd.Wait()
		}
	})
	return w
}

// next returns the next line of stdout; ok is false at its end.
func (w *watching) next(t *testing.T) (line string, ok bool) {
	t.Helper()
	select {
	case line, ok = <-w.lines:
		return line, ok
	case <-time.After(watchGuard):
		t.Fatalf("inspect --watch printed no line within %v", watchGuard)
		return "", false
	}
}

// drain reads stdout to its end and returns the lines it read.
func (w *watching) drain() []string {
	var rest []string
	for line := range w.lines {
		rest = append(rest, line)
	}
	w.reader.Wait()
	return rest
}

// stop sends the watch sig and returns what it printed from then on and
// its exit code.
func (w *watching) stop(t *testing.T, sig os.Signal) (rest []string, r result) {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(sig))
	kill := time.AfterFunc(watchGuard, func() { _ = w.cmd.Process.Kill() })
	rest = w.drain() // to the end of stdout, which comes when the process exits
	err := w.cmd.Wait()
	w.ended = true
	require.True(t, kill.Stop(), "inspect --watch did not stop within %v of %v", watchGuard, sig)
	var exit *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &exit)
		r.code = exit.ExitCode()
	}
	r.stderr = w.stderr.String()
	return rest, r
}

// watchedDoc is one line of inspect --watch --json: the document of
// inspect --json or, for a refresh that failed, the lock and its error.
type watchedDoc struct {
	inspected
	Error *string `json:"error"`
}

func decodeWatched(t *testing.T, line string) watchedDoc {
	t.Helper()
	var doc watchedDoc
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc), line)
	require.False(t, dec.More(), "one document a line: %s", line)
	return doc
}

// nextDoc returns the next document of a --json watch.
func (w *watching) nextDoc(t *testing.T) watchedDoc {
	t.Helper()
	line, ok := w.next(t)
	require.True(t, ok, "inspect --watch --json ended")
	return decodeWatched(t, line)
}

// docUntil reads documents until one satisfies cond, and returns it.
func (w *watching) docUntil(t *testing.T, cond func(watchedDoc) bool) watchedDoc {
	t.Helper()
	for {
		if doc := w.nextDoc(t); cond(doc) {
			return doc
		}
	}
}

// nextFrame returns the next refresh of a text watch whose stdout is not
// a terminal: its lines up to the blank line that ends it.
func (w *watching) nextFrame(t *testing.T) string {
	t.Helper()
	var frame strings.Builder
	for {
		line, ok := w.next(t)
		require.True(t, ok, "inspect --watch ended within a refresh: %q", frame.String())
		if line == "" {
			return frame.String()
		}
		frame.WriteString(line + "\n")
	}
}

// frameUntil reads refreshes until one contains want, and returns it.
func (w *watching) frameUntil(t *testing.T, want string) string {
	t.Helper()
	for {
		if frame := w.nextFrame(t); strings.Contains(frame, want) {
			return frame
		}
	}
}

// TestInspectWatchJSONFollowsTheLock: with --json, every refresh is one
// document on a line of its own, and they follow the lock as it is taken
// and released.
func TestInspectWatchJSONFollowsTheLock(t *testing.T) {
	srv := redistest.Start(t)
	l := openLocker(t, srv, lock.WithTTL(30*time.Second))
	w := startWatch(t, "--json", "--interval", "20ms", "--addr", srv.Addr, "orders")

	first := w.nextDoc(t)
	require.Equal(t, inspected{Addr: srv.Addr, Key: "orders", RedisKey: "baton:{orders}", Mode: "unknown", ModeKeys: "none",
		Queue: []inspectedWaiter{}}, first.inspected)
	require.Nil(t, first.Error)

	ls, err := l.Lock(context.Background(), "orders")
	require.NoError(t, err)
	held := w.docUntil(t, func(d watchedDoc) bool { return d.Held })
	require.Nil(t, held.Error)
	require.NotNil(t, held.Holder)
	require.Len(t, *held.Holder, 8)
	require.NotNil(t, held.Token)
	require.Equal(t, ls.Token(), *held.Token)
	require.NotNil(t, held.TTLms)
	require.Positive(t, *held.TTLms)

	require.NoError(t, ls.Unlock(context.Background()))
	free := w.docUntil(t, func(d watchedDoc) bool { return !d.Held })
	require.Nil(t, free.Holder)
	require.Nil(t, free.Error)

	rest, r := w.stop(t, os.Interrupt)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Empty(t, r.stderr)
	for _, line := range rest {
		require.Nil(t, decodeWatched(t, line).Error)
	}
}

// TestInspectWatchTextFollowsTheFairQueue: on a pipe, each refresh is
// the view of inspect, with the time of the refresh above it, ending with
// a blank line and redrawing nothing; a waiter that joins the queue shows.
func TestInspectWatchTextFollowsTheFairQueue(t *testing.T) {
	srv := redistest.Start(t)
	holder := openLocker(t, srv, lock.WithFair())
	held, err := holder.Lock(context.Background(), "line")
	require.NoError(t, err)
	w := startWatch(t, "--fair", "--interval", "20ms", "--addr", srv.Addr, "line")

	first := w.nextFrame(t)
	require.Regexp(t, `^refreshed: +\d\d:\d\d:\d\d\.\d{3} \(every 20ms until interrupted\)\n`+
		`lock: +baton:\{line\} on `+regexp.QuoteMeta(srv.Addr)+` \(fair mode\)\n`, first)
	require.Contains(t, first, "fencing token:   "+strconv.FormatUint(held.Token(), 10)+"\n")
	require.Contains(t, first, "queue:           empty\n")

	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the lockers close, should the test stop early
	waiter := openLocker(t, srv, lock.WithFair())
	wg.Go(func() {
		ls, err := waiter.Lock(context.Background(), "line")
		if assert.NoError(t, err) {
			assert.NoError(t, ls.Unlock(context.Background()))
		}
	})
	queued := w.frameUntil(t, "1 waiting")
	require.Contains(t, queued, "asked to let go: yes\n")
	require.NoError(t, held.Unlock(context.Background()))
	wg.Wait()

	rest, r := w.stop(t, syscall.SIGTERM)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Empty(t, r.stderr)
	if len(rest) > 0 {
		require.Empty(t, rest[len(rest)-1], "the last refresh ends with its blank line")
	}
	require.NotContains(t, first+queued+strings.Join(rest, "\n"), "\x1b", "no redrawing on a pipe")
}

// TestInspectWatchEndsCleanlyOnASignal: SIGINT and SIGTERM end a watch
// with exit code 0, nothing on stderr, and whole refreshes on stdout.
func TestInspectWatchEndsCleanlyOnASignal(t *testing.T) {
	srv := redistest.Start(t)
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			w := startWatch(t, "--interval", "10ms", "--addr", srv.Addr, "k")
			for range 3 {
				require.Contains(t, w.nextFrame(t), "nobody: the lock is free")
			}
			rest, r := w.stop(t, sig)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			require.Empty(t, r.stderr)
			if len(rest) > 0 {
				require.Empty(t, rest[len(rest)-1], "the last refresh ends with its blank line")
			}
		})
	}
}

// TestInspectWatchEndsAtOnceOnAMistake: a wrong --interval is a mistake
// on the command line, and so is a key the lock refuses; a server that
// does not answer the first refresh ends the watch as it ends inspect.
func TestInspectWatchEndsAtOnceOnAMistake(t *testing.T) {
	srv := redistest.Start(t)
	closed := redistest.ClosedAddr(t)
	for name, c := range map[string]struct {
		args []string
		code int
		says string
	}{
		"interval 0":               {[]string{"--watch", "--interval", "0", "--addr", srv.Addr, "k"}, 2, "--interval 0s: want more than 0"},
		"negative interval":        {[]string{"--watch", "--interval", "-1s", "--addr", srv.Addr, "k"}, 2, "--interval -1s: want more than 0"},
		"interval not a duration":  {[]string{"--watch", "--interval", "soon", "--addr", srv.Addr, "k"}, 2, "-interval"},
		"interval without --watch": {[]string{"--interval", "1s", "--addr", srv.Addr, "k"}, 2, "add --watch"},
		"a key the lock refuses":   {[]string{"--watch", "--interval", "10ms", "--addr", srv.Addr, "}k"}, 2, "hash tag"},
		"no server at the start":   {[]string{"--watch", "--interval", "10ms", "--addr", closed, "k"}, 1, closed},
		"no server, --json":        {[]string{"--watch", "--json", "--interval", "10ms", "--addr", closed, "k"}, 1, closed},
		"--watch after KEY":        {[]string{"--addr", srv.Addr, "k", "--watch", "--interval", "0"}, 2, "--interval 0s: want more than 0"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runBaton(t, 30*time.Second, nil, append([]string{"inspect"}, c.args...)...)
			require.Equal(t, c.code, r.code, "stderr: %s", r.stderr)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			require.Contains(t, r.stderr, c.says)
			require.Empty(t, r.stdout)
		})
	}
}

// TestInspectWatchKeepsGoingWhileTheServerIsGone: once the watch has
// begun, a server that refuses every connection makes each refresh a
// document with the error, and the watch goes on; when the server takes
// connections again, the watch shows the lock as it now is.
func TestInspectWatchKeepsGoingWhileTheServerIsGone(t *testing.T) {
	srv := redistest.Start(t)
	proxy, err := faultproxy.Start(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, proxy.Close()) })
	w := startWatch(t, "--json", "--interval", "20ms", "--addr", proxy.Addr(), "orders")
	require.Nil(t, w.nextDoc(t).Error)

	proxy.Refuse(true)
	proxy.Reset()
	failed := w.docUntil(t, func(d watchedDoc) bool { return d.Error != nil })
	require.Equal(t, inspected{Addr: proxy.Addr(), Key: "orders", RedisKey: "baton:{orders}", Mode: "unknown"}, failed.inspected,
		"a refresh that failed read no key to tell the mode by")
	require.NotEmpty(t, *failed.Error)
	require.NotContains(t, *failed.Error, "\n")
	// Refreshes go on failing while the server is gone.
	for range 2 {
		require.NotNil(t, w.nextDoc(t).Error)
	}

	l := openLocker(t, srv)
	ls, err := l.Lock(context.Background(), "orders")
	require.NoError(t, err)
	proxy.Refuse(false)
	back := w.docUntil(t, func(d watchedDoc) bool { return d.Error == nil })
	require.True(t, back.Held)
	require.Equal(t, ls.Token(), *back.Token)

	_, r := w.stop(t, os.Interrupt)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Empty(t, r.stderr)
}

// TestInspectWatchShowsAStoppedServer: a server that stops mid-watch
// puts its error in the view, refresh after refresh, until the watch is
// interrupted.
func TestInspectWatchShowsAStoppedServer(t *testing.T) {
	srv := redistest.Start(t)
	w := startWatch(t, "--interval", "20ms", "--addr", srv.Addr, "k")
	require.Contains(t, w.nextFrame(t), "nobody: the lock is free")

	srv.Stop()
	failed := w.frameUntil(t, "refresh failed:")
	require.Contains(t, failed, "lock:            baton:{k} on "+srv.Addr+" (mode unknown)\n")
	require.NotContains(t, failed, "held by:")
	for range 2 {
		require.Contains(t, w.nextFrame(t), "refresh failed:")
	}

	_, r := w.stop(t, os.Interrupt)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Empty(t, r.stderr)
}
