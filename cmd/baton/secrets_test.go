package main_test

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/internal/urltext"
)

// faultSecret is the password of the servers that
// TestPasswordsStayHiddenThroughFaults breaks. Its '/' makes its
// percent-encoded form, as a URL holds it, differ from the plain one.
const faultSecret = "hunter2/s3cr3t"

// withPassword is a URL for host with faultSecret as its password.
func withPassword(host string) string {
	return (&url.URL{Scheme: "redis", User: url.UserPassword("", faultSecret), Host: host}).String()
}

// requireNoSecretIn fails t if out says secret as written or
// percent-encoded, as a URL's query or user information holds it.
func requireNoSecretIn(t *testing.T, secret, out string, msgAndArgs ...any) {
	t.Helper()
	for _, form := range redistest.SecretForms(secret) {
		require.NotContains(t, out, form, msgAndArgs...)
	}
}

// requireFailedNaming fails t unless r is a failed run whose stderr
// quotes addr, redacted, at least quotes times: the places where a
// password would be. The command names the server once; an error from
// conn that names it too makes two.
func requireFailedNaming(t *testing.T, r result, addr string, quotes int) {
	t.Helper()
	require.NotEqual(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.GreaterOrEqual(t, strings.Count(r.stderr, urltext.Redacted(addr)), quotes, "stderr: %s", r.stderr)
}

// refusePassword sets another password on the server addr reaches and
// drops every other client, so that each redial is refused; the function
// it returns sets the password back. The admin connection it makes is
// closed at the test's cleanup.
func refusePassword(t *testing.T, addr string) (restore func()) {
	t.Helper()
	admin, err := conn.Dial(context.Background(), addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	_, err = admin.DoMulti(context.Background(),
		[]string{"CONFIG", "SET", "requirepass", "other"},
		[]string{"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"},
		[]string{"CLIENT", "KILL", "TYPE", "pubsub"})
	require.NoError(t, err)
	return func() {
		_, err := admin.Do(context.Background(), "CONFIG", "SET", "requirepass", faultSecret)
		require.NoError(t, err)
	}
}

// startBaton starts the built binary with args, and returns a function
// that waits for it to exit and returns what it printed; the run fails
// the test if it outlives timeout.
func startBaton(t *testing.T, timeout time.Duration, args ...string) (wait func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, batonBin, args...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait() // a second Wait, after wait's, returns at once
	})
	return func() result {
		t.Helper()
		err := cmd.Wait()
		if ctx.Err() != nil {
			t.Fatalf("baton %v did not finish within %v\nstdout:\n%s\nstderr:\n%s", args, timeout, stdout.String(), stderr.String())
		}
		r := result{stdout: stdout.String(), stderr: stderr.String()}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			r.code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return r
	}
}

// watchedOutput reads a running inspect --watch refresh by refresh,
// keeping all it printed.
type watchedOutput struct {
	w       *watching
	json    bool
	shown   string // the address, redacted
	out     strings.Builder
	refresh int // refreshes read
	failed  int // refreshes that showed an error
	quoting int // failed refreshes whose error quotes the address
}

// next reads one refresh and says whether it showed an error.
func (o *watchedOutput) next(t *testing.T) (failed bool) {
	t.Helper()
	var text, why string
	if o.json {
		line, ok := o.w.next(t)
		require.True(t, ok, "inspect --watch ended")
		text = line
		if doc := decodeWatched(t, line); doc.Error != nil {
			failed, why = true, *doc.Error
		}
	} else {
		text = o.w.nextFrame(t)
		_, why, failed = strings.Cut(text, "refresh failed:")
	}
	o.out.WriteString(text + "\n")
	o.refresh++
	if failed {
		o.failed++
		if strings.Contains(why, o.shown) {
			o.quoting++
		}
	}
	return failed
}

// until reads refreshes until n of them in a row are failed ones (or,
// with failed false, one succeeded); a thousand refreshes without is a
// failure.
func (o *watchedOutput) until(t *testing.T, failed bool, n int) {
	t.Helper()
	run := 0
	for range 1000 {
		if o.next(t) == failed {
			run++
			if run == n {
				return
			}
		} else {
			run = 0
		}
	}
	t.Fatalf("no %d refreshes in a row with failed=%v: %s", n, failed, o.out.String())
}

// stop ends the watch with SIGINT, and returns all it printed.
func (o *watchedOutput) stop(t *testing.T) string {
	t.Helper()
	rest, r := o.w.stop(t, os.Interrupt)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	return o.out.String() + strings.Join(rest, "\n") + r.stderr
}

// TestPasswordsStayHiddenThroughFaults: a live server that requires a
// password, broken under the commands that use it, makes them print
// errors (a watch's failed refreshes, a bench or probe that fails), and
// none says the password: not the server's, not the sentinels'. Each run
// must fail, or show failed refreshes, for the search to tell anything.
func TestPasswordsStayHiddenThroughFaults(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run("inspect --watch/"+format, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithConfig("requirepass "+faultSecret))
			addr := withPassword(srv.Addr)
			args := []string{"--interval", "20ms", "--addr", addr, "k"}
			if format == "json" {
				args = append([]string{"--json"}, args...)
			}
			o := &watchedOutput{w: startWatch(t, args...), json: format == "json", shown: urltext.Redacted(addr)}
			require.False(t, o.next(t), "the first refresh: %s", o.out.String())

			restore := refusePassword(t, addr)
			o.until(t, true, 3)
			restore()
			o.until(t, false, 1)
			srv.Stop()
			o.until(t, true, 3)

			out := o.stop(t)
			t.Logf("%d refreshes, %d failed, %d of them quoting the address: no password", o.refresh, o.failed, o.quoting)
			requireNoSecretIn(t, faultSecret, out)
			require.Positive(t, o.quoting, "no failed refresh quoted the address: %s", out)
		})
	}
	t.Run("bench, the server gone mid-run", func(t *testing.T) {
		srv := redistest.Start(t, redistest.WithConfig("requirepass "+faultSecret))
		proxy, err := faultproxy.Start(srv.Addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = proxy.Close() })
		addr := withPassword(proxy.Addr())
		wait := startBaton(t, benchTimeout, "bench", "--addr", addr, "--duration", "4s")
		// Away for a second once the run is under way (its Locker's
		// connections open): bench's calls fail, and its cleanup finds
		// the server back.
		redistest.Eventually(t, func() bool { return proxy.Conns() >= 3 }, 30*time.Second, 10*time.Millisecond,
			"bench never connected")
		time.Sleep(300 * time.Millisecond)
		proxy.Refuse(true)
		proxy.Reset()
		time.Sleep(time.Second)
		proxy.Refuse(false)
		r := wait()
		// The first call to fail ends the run: a redial's error names
		// the server, a broken connection's does not.
		requireFailedNaming(t, r, addr, 1)
		requireNoSecretIn(t, faultSecret, r.stdout+r.stderr)
	})
	t.Run("the password refused", func(t *testing.T) {
		srv := redistest.Start(t, redistest.WithConfig("requirepass other"))
		addr := withPassword(srv.Addr)
		for _, args := range [][]string{
			{"probe", "--addr", addr},
			{"inspect", "--addr", addr, "k"},
			{"bench", "--addr", addr, "--duration", "100ms"},
			{"demo", "--runs", "1", "--addr", addr},
		} {
			r := runBaton(t, benchTimeout, nil, args...)
			requireFailedNaming(t, r, addr, 2)
			requireNoSecretIn(t, faultSecret, r.stdout+r.stderr, "%v", args)
		}
	})
	t.Run("probe --tap, the password refused mid-run", func(t *testing.T) {
		srv := redistest.Start(t, redistest.WithConfig("requirepass "+faultSecret))
		addr := withPassword(srv.Addr)
		wait := startBaton(t, probeTimeout, "probe", "--addr", addr, "--rounds", "1000000", "--tap")
		time.Sleep(time.Second)
		refusePassword(t, addr)
		r := wait()
		requireFailedNaming(t, r, addr, 1)
		requireNoSecretIn(t, faultSecret, r.stdout+r.stderr)
	})
	t.Run("sentinel down", func(t *testing.T) {
		const sentinelSecret = "s3nt1nel/pw"
		s := redistest.StartSentinels(t, 1, 1, "requirepass "+sentinelSecret)
		addr := s.URL() + "?sentinel_password=" + url.QueryEscape(sentinelSecret)
		o := &watchedOutput{w: startWatch(t, "--interval", "20ms", "--addr", addr, "k"), shown: urltext.Redacted(addr)}
		require.False(t, o.next(t), "the first refresh: %s", o.out.String())

		// The sentinel goes; the primary drops every client, so that
		// each redial asks the sentinel, which is not there.
		primary := s.Primary(t)
		s.Sentinels.Sentinels[0].Stop()
		primary.Do(t, "CLIENT", "KILL", "TYPE", "normal")
		primary.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
		o.until(t, true, 2)
		out := o.stop(t)
		t.Logf("%d refreshes, %d failed: no password", o.refresh, o.failed)
		requireNoSecretIn(t, sentinelSecret, out)
		require.Contains(t, out, urltext.Redacted(addr))

		for _, args := range [][]string{
			{"inspect", "--addr", addr, "k"},
			{"probe", "--addr", addr},
			{"bench", "--addr", addr, "--duration", "100ms"},
		} {
			r := runBaton(t, benchTimeout, nil, args...)
			requireFailedNaming(t, r, addr, 1)
			requireNoSecretIn(t, sentinelSecret, r.stdout+r.stderr, "%v", args)
		}
	})
}
