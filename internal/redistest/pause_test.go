package redistest_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// A paused server leaves a command unanswered past its deadline, and
// answers it once thawed.
func TestPauseOutlastsADeadline(t *testing.T) {
	s := redistest.Start(t)
	c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	ping(t, c)

	const pause = 300 * time.Millisecond
	start := time.Now()
	s.Pause(t, pause)
	_, err = c.Write(resp.AppendCommand(nil, "PING"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = resp.NewReader(c).Read()
	var netErr net.Error
	require.ErrorAs(t, err, &netErr)
	require.True(t, netErr.Timeout(), "no answer during the pause: %v", err)

	// Nothing was read: a new reader takes the PONG that comes after.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	v, err := resp.NewReader(c).Read()
	require.NoError(t, err)
	require.Equal(t, resp.Value{Type: resp.SimpleString, Str: "PONG"}, v)
	require.GreaterOrEqual(t, time.Since(start), pause)
	require.Equal(t, "PONG", s.Do(t, "PING").Str)
}

// However long the pause, its cleanup thaws the server, and Stop (here
// within Restart) acts at once rather than after its grace period.
func TestPauseEndsAtCleanupAndStop(t *testing.T) {
	s := redistest.Start(t)
	r := record(t, func(r *recorder) { s.Pause(r, time.Hour) })
	require.Empty(t, r.fatal)
	r.runCleanups()
	require.Equal(t, "PONG", s.Do(t, "PING").Str)

	s.Pause(t, time.Hour)
	start := time.Now()
	s.Restart(t)
	require.Less(t, time.Since(start), 4*time.Second, "a SIGTERM to the paused process took effect at once")
	require.Equal(t, "PONG", s.Do(t, "PING").Str)
}
