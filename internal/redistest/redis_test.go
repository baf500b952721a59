package redistest_test

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

func TestMissingRedisServer(t *testing.T) {
	tests := []struct {
		name, require string
		skipped       bool
	}{
		{"skips", "", true},
		{"fails when required", "1", false},
	}
	starts := []struct {
		name  string
		start func(r *recorder)
	}{
		{"Start", func(r *recorder) { redistest.Start(r) }},
		{"StartCluster", func(r *recorder) { redistest.StartCluster(r, 3, 1) }},
	}
	for _, tt := range tests {
		for _, s := range starts {
			t.Run(s.name+"/"+tt.name, func(t *testing.T) {
				t.Setenv("PATH", t.TempDir())
				t.Setenv(redistest.RequireRedisEnv, tt.require)
				r := record(t, s.start)
				r.runCleanups()
				msg := r.fatal
				if tt.skipped {
					require.Empty(t, r.fatal)
					msg = r.skip
				} else {
					require.Empty(t, r.skip)
				}
				require.Contains(t, msg, "apt-get install redis-server")
			})
		}
	}
}

// The server lives as long as the test: its cleanup stops it and removes
// its files.
func TestStartStopsAtCleanup(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var s *redistest.Server
	r := record(t, func(r *recorder) { s = redistest.Start(r, redistest.WithUnixSocket()) })
	if r.skip != "" {
		t.Skip(r.skip)
	}
	require.Empty(t, r.fatal)
	require.Equal(t, "PONG", s.Do(t, "PING").Str)

	r.runCleanups()
	_, err := net.Dial("tcp", s.Addr)
	require.Error(t, err, "nothing listens after the cleanup")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// Where redisproc returns an error, the wrappers fail the test with it.
func TestWrappersFailTheTest(t *testing.T) {
	s := redistest.Start(t)
	require.Equal(t, "OK", s.Do(t, "SET", "k", "v").Str)
	s.Restart(t)
	require.Equal(t, resp.Null, s.Do(t, "GET", "k").Type, "no persistence")
	s.Stop()

	for name, call := range map[string]func(r *recorder){
		"Do":      func(r *recorder) { s.Do(r, "PING") },
		"Restart": func(r *recorder) { s.Restart(r) },
		"Pause":   func(r *recorder) { s.Pause(r, time.Second) },
	} {
		t.Run(name, func(t *testing.T) {
			r := record(t, func(r *recorder) {
				call(r)
				t.Errorf("%s returned", name)
			})
			require.NotEmpty(t, r.fatal)
		})
	}
}

// However long the pause, its cleanup thaws the server.
func TestPauseEndsAtCleanup(t *testing.T) {
	s := redistest.Start(t)
	r := record(t, func(r *recorder) { s.Pause(r, time.Hour) })
	require.Empty(t, r.fatal)
	r.runCleanups()
	require.Equal(t, "PONG", s.Do(t, "PING").Str)
}
