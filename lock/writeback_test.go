package lock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// A write-back and release whose connection breaks with it in flight may
// have written the state. If the retry on a new connection is then
// refused with an error reply, the error must not say that nothing was
// written: the first attempt may have written it.
func TestARefusedRetryOfAWriteBackDoesNotSayNothingWasWritten(t *testing.T) {
	srv := redistest.Start(t)
	var commits atomic.Int32
	l := onFake(t, srv, func(_ int32, cmd []string) string {
		switch fastScript(cmd) {
		case fastAcquire:
			return ":1764000000000000\r\n"
		case fastCommit:
			if commits.Add(1) == 1 {
				return "" // the connection dies with the write-back in flight
			}
			return "-ERR refused\r\n"
		case fastRelease:
			return ":0\r\n" // the plain release finds the lock gone: the first write-back released it
		}
		return ":1\r\n"
	})
	ls, err := l.TryLock(context.Background(), "k")
	require.NoError(t, err)
	_, err = ls.Commit(context.Background(), lock.Write{Key: "baton:{k}:state", Value: "v", TTL: time.Minute, Unlock: true})
	require.Error(t, err)
	t.Logf("Commit: %v", err)
	require.Equal(t, int32(2), commits.Load(), "the write-back was sent again")
	var uncertain *conn.UncertainError
	require.ErrorAs(t, err, &uncertain, "the first attempt may have written")
	require.NotContains(t, err.Error(), "nothing written", "the first attempt may have written the state")
}
