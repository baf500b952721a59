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

// TestFlagsMayFollowArguments: every command reads its flags wherever
// they stand among its arguments, --help among them, and "--" ends the
// flags.
func TestFlagsMayFollowArguments(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		code int
		// out is in stdout when code is 0, else in stderr's one line.
		out string
	}{
		"demo: --help after an argument":           {[]string{"demo", "stray", "--help"}, 0, "Usage: baton demo"},
		"probe: --help after an argument":          {[]string{"probe", "stray", "--help"}, 0, "Usage: baton probe"},
		"bench: --help after an argument":          {[]string{"bench", "stray", "--help"}, 0, "Usage: baton bench"},
		"inspect: --help after KEY":                {[]string{"inspect", "k", "--help"}, 0, "Usage: baton inspect"},
		"a flag's mistake after an argument":       {[]string{"demo", "stray", "--nosuchflag"}, 2, "-nosuchflag"},
		"a flag after an argument is read":         {[]string{"probe", "stray", "--rounds", "many"}, 2, `"many"`},
		"a stray argument between flags":           {[]string{"bench", "--duration", "1s", "stray", "--mode", "fast"}, 2, `unexpected argument "stray"`},
		"after --, a flag is an argument":          {[]string{"probe", "--addr", "127.0.0.1:1", "--", "--json"}, 2, `unexpected argument "--json"`},
		"a flag's value is never a flag":           {[]string{"demo", "--addr", "--json", "stray"}, 2, `unexpected argument "stray"`},
		"a flag at the end without its value":      {[]string{"inspect", "k", "--addr"}, 2, "flag needs an argument: -addr"},
		"inspect: after --, a flag is an argument": {[]string{"inspect", "--addr", "127.0.0.1:1", "--", "k", "--json"}, 2, `unexpected argument "--json"`},
	} {
		t.Run(name, func(t *testing.T) {
			r := runBaton(t, 30*time.Second, nil, c.args...)
			require.Equal(t, c.code, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			if c.code == 0 {
				require.Contains(t, r.stdout, c.out)
				require.Empty(t, r.stderr)
				return
			}
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			require.Contains(t, r.stderr, c.out)
			require.Empty(t, r.stdout)
		})
	}
}
