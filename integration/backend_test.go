package integration_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServersForgetOnRestartAndAnswerAfterAPause(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		srv := b.start(t, spec{tls: true})
		require.Equal(t, "PONG", srv.Do(t, "PING").Str)
		srv.Do(t, "SET", "x", "1")
		srv.Restart(t)
		require.True(t, srv.Do(t, "GET", "x").IsNull())
		srv.Pause(t, 300*time.Millisecond)
		start := time.Now()
		require.Equal(t, "PONG", srv.Do(t, "PING").Str)
		t.Log("answered after", time.Since(start))
	})
}
