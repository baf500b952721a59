package conn_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redistest"
)

// TestMain starts a throwaway redis-server for the examples (see
// example_test.go's redisAddr) and fails the run if any goroutine outlives
// the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(redistest.WithExampleServer(m, &redisAddr)))
}

// dial connects to addr and closes the connection when the test ends.
func dial(t testing.TB, addr string, opts ...conn.Option) *conn.Conn {
	t.Helper()
	c, err := conn.Dial(context.Background(), addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// forWaits runs test once with callers that sleep until their reply comes
// (the default) and once with callers that spin for it first
// (WithSpinWait).
func forWaits(t *testing.T, test func(t *testing.T, opts ...conn.Option)) {
	t.Run("wait=sleep", func(t *testing.T) { test(t) })
	t.Run("wait=spin", func(t *testing.T) { test(t, conn.WithSpinWait(200*time.Microsecond)) })
}

// wireLog records what a tap sees, one entry per socket Write or Read.
type wireLog struct {
	mu     sync.Mutex
	writes [][]byte
	reads  [][]byte
}

func (w *wireLog) tap(dir conn.Direction, p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := append([]byte(nil), p...)
	if dir == conn.Write {
		w.writes = append(w.writes, b)
	} else {
		w.reads = append(w.reads, b)
	}
}

// ReadBytes is everything read so far, in one piece.
func (w *wireLog) ReadBytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Join(w.reads, nil)
}

func (w *wireLog) Writes() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.writes...)
}
