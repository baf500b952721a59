package redisproc_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/resp"
)

// A paused server leaves a command unanswered past its deadline, and
// answers it once thawed.
func TestPauseOutlastsADeadline(t *testing.T) {
	s := start(t)
	c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	ping(t, c)

	const pause = 300 * time.Millisecond
	start := time.Now()
	require.NoError(t, s.Pause(pause))
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
	require.Equal(t, "PONG", do(t, s, "PING").Str)
}

// However long the pause, Resume thaws the server at once, and Stop (here
// within Restart) acts at once rather than after its grace period.
func TestPauseEndsAtResumeAndRestart(t *testing.T) {
	s := start(t)
	require.NoError(t, s.Pause(time.Hour))
	s.Resume()
	s.Resume()
	require.Equal(t, "PONG", do(t, s, "PING").Str)

	require.NoError(t, s.Pause(time.Hour))
	begun := time.Now()
	require.NoError(t, s.Restart())
	require.Less(t, time.Since(begun), 4*time.Second, "a SIGTERM to the paused process took effect at once")
	require.Equal(t, "PONG", do(t, s, "PING").Str)
}

// A Pause during another ends that one and starts over: the server is
// frozen for the second one's length, not the first's. (Do gives up long
// before an hour.)
func TestPauseDuringPause(t *testing.T) {
	s := start(t)
	require.NoError(t, s.Pause(time.Hour))
	require.NoError(t, s.Pause(100*time.Millisecond))
	require.Equal(t, "PONG", do(t, s, "PING").Str)
}
