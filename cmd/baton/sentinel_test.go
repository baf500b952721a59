package main_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// Every command that takes --addr reaches the primary through sentinels
// given a redis+sentinel URL, and names the URL as given.
func TestEveryCommandTakesASentinelAddress(t *testing.T) {
	s := redistest.StartSentinels(t, 1, 3)
	url := s.URL()
	primary := s.Primary(t)

	t.Run("probe", func(t *testing.T) {
		rep := runProbeJSON(t, "--addr", url, "--rounds", "20")
		require.Equal(t, url, rep.Addr)
		require.Equal(t, 20, rep.Rounds)
		for _, st := range rep.Styles {
			require.Empty(t, st.Error, st.Style)
		}
	})
	t.Run("inspect", func(t *testing.T) {
		l, err := lock.Open(context.Background(), url)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, l.Close()) })
		ls, err := l.Lock(context.Background(), "orders:42")
		require.NoError(t, err)
		doc := inspectJSON(t, "--addr", url, "orders:42")
		require.True(t, doc.Held)
		require.NotNil(t, doc.Token)
		require.Equal(t, ls.Token(), *doc.Token)
		require.Equal(t, int64(1), primary.Do(t, "EXISTS", "baton:{orders:42}").Int, "the lock is on the primary")
		require.NoError(t, ls.Unlock(context.Background()))
	})
	t.Run("bench", func(t *testing.T) {
		r := runBaton(t, benchTimeout, nil, "bench", "--addr", url, "--duration", benchShort)
		require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
		first, _, _ := strings.Cut(r.stdout, "\n")
		require.Equal(t, "server: "+url+" (given with --addr)", first)
		require.Contains(t, r.stdout, "fast ")
		requireNoBenchKeys(t, primary)
	})
	t.Run("demo", func(t *testing.T) {
		r := runBaton(t, demoTimeout, nil, "demo", "--runs", "1", "--addr", url)
		require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
		require.Contains(t, r.stdout, url)
		require.Contains(t, r.stdout, "every count was exact")
	})
}
