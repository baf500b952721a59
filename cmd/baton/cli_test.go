package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
)

// TestUsageErrorsAreOneLineAndExitTwo: every mistake on the command line
// is one line on stderr, with exit code 2 and no stack trace.
func TestUsageErrorsAreOneLineAndExitTwo(t *testing.T) {
	cases := [][]string{
		{},
		{"nosuchcommand"},
		{"demo", "--nosuchflag"},
		{"demo", "extra-argument"},
		{"probe"},
		{"probe", "--rounds", "many", "--addr", "127.0.0.1:1"},
		{"bench", "--mode", "sideways"},
		{"inspect", "--addr", "127.0.0.1:1"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			r := runBaton(t, 30*time.Second, nil, args...)
			require.Equal(t, 2, r.code, "stderr: %s", r.stderr)
			if len(args) == 0 {
				require.Contains(t, r.stdout, "Usage: baton <command>")
				return
			}
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "stderr: %q", r.stderr)
			require.NotContains(t, r.stderr, "goroutine")
			require.Empty(t, r.stdout)
		})
	}
}

// TestHelpOnEveryCommand: --help prints the command's usage on stdout and
// exits 0.
func TestHelpOnEveryCommand(t *testing.T) {
	r := runBaton(t, 30*time.Second, nil, "--help")
	require.Equal(t, 0, r.code)
	for _, name := range []string{"demo", "probe", "bench", "inspect"} {
		require.Contains(t, r.stdout, name)
		r := runBaton(t, 30*time.Second, nil, name, "--help")
		require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
		require.Equal(t, 1, strings.Count(r.stdout, "Usage: baton "+name), "stdout: %s", r.stdout)
		require.Contains(t, r.stdout, "-json")
	}
}

// TestPasswordsStayHidden: a password in a URL address appears in no
// command's output, not even in its errors, whatever the mistake in the
// address.
func TestPasswordsStayHidden(t *testing.T) {
	const secret = "hunter2"
	host := redistest.ClosedAddr(t)
	addrs := append([]string{
		"redis://:" + secret + "@" + host,
		"redis+sentinel://:" + secret + "@" + host + "/mymaster",
		"redis+sentinel://" + host + "/mymaster?sentinel_password=" + secret,
	}, redistest.AddressMistakes(host, secret)...)
	for _, addr := range addrs {
		for _, args := range [][]string{
			{"demo", "--addr", addr},
			{"bench", "--addr", addr, "--duration", "100ms"},
			{"probe", "--addr", addr},
			{"inspect", "--addr", addr, "k"},
		} {
			r := runBaton(t, 30*time.Second, nil, args...)
			require.NotEqual(t, 0, r.code, "%v: stderr: %s", args, r.stderr)
			require.NotContains(t, r.stdout+r.stderr, secret, "%v", args)
		}
	}
}
