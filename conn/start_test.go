package conn_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// startBound is how long Start may take: far below the write timeout, 5s,
// which a Start that wrote to a full socket itself would wait for, and far
// above what a machine busy with other tests adds (212ms seen while the
// integration suite ran beside it; 1–10ms alone).
const startBound = time.Second

// fillCommands returns n SET commands of 256 KiB each.
func fillCommands(n int) [][]string {
	value := strings.Repeat("x", 256<<10)
	cmds := make([][]string, n)
	for i := range cmds {
		cmds[i] = []string{"SET", "fill:" + strconv.Itoa(i), value}
	}
	return cmds
}

// fillBytes is more than a loopback socket's buffers on both ends hold
// while the server reads nothing: some 4 MiB on Linux, as the tapped test
// shows.
const fillBytes = 6 << 20

// TestStartDoesNotBlockOnAStalledServer has a server that reads nothing,
// and Starts commands until far more than the socket buffers hold is
// queued: each Start must return at once, the one that fills the socket
// and those after it included, and Close must then stop the writer
// goroutine that was left with the rest.
func TestStartDoesNotBlockOnAStalledServer(t *testing.T) {
	for _, tapped := range []bool{false, true} {
		name := "plain"
		if tapped {
			name = "tapped"
		}
		t.Run(name, func(t *testing.T) {
			fake := redistest.NewFake(t, func(s *redistest.Session) { s.Pause(time.Hour) })
			var wire wireLog
			opts := []conn.Option{conn.WithWriteTimeout(5 * time.Second)}
			if tapped {
				opts = append(opts, conn.WithTap(wire.tap))
			}
			c, err := conn.Dial(context.Background(), fake.Addr, opts...)
			require.NoError(t, err)

			var started []*conn.Pending
			queued := 0
			var slowest time.Duration
			for _, cmd := range fillCommands(fillBytes / (256 << 10)) {
				began := time.Now()
				p, err := c.Start(cmd)
				took := time.Since(began)
				require.NoError(t, err)
				require.Less(t, took, startBound, "Start with %d bytes queued before it", queued)
				slowest = max(slowest, took)
				started = append(started, p)
				queued += len(resp.AppendCommand(nil, cmd...))
			}
			t.Logf("the slowest Start took %v", slowest)
			if tapped {
				written := 0
				for _, w := range wire.Writes() {
					written += len(w)
				}
				t.Logf("the socket took %d of %d bytes", written, queued)
				require.Less(t, written, queued, "the socket never filled")
			}
			began := time.Now()
			p, err := c.Start([]string{"PING"}, []string{"ECHO", "x"})
			took := time.Since(began)
			require.NoError(t, err)
			require.Less(t, took, startBound, "Start behind a full socket")
			started = append(started, p)

			began = time.Now()
			require.NoError(t, c.Close())
			require.Less(t, time.Since(began), time.Second, "Close waiting for the writer goroutine")
			for _, p := range started {
				_, err := p.Wait(context.Background())
				var uncertain *conn.UncertainError
				require.ErrorAs(t, err, &uncertain)
				require.ErrorIs(t, err, conn.ErrClosed)
			}
		})
	}
}

// TestStartWritesEverythingOnceTheServerReadsAgain stalls a real server
// (DEBUG SLEEP) on each kind of connection (TLS has no socket to try a
// write on without blocking, so its writes all go to the writer goroutine),
// Starts more than the socket buffers hold, and checks that each Start
// returned at once and that, once the server wakes, every byte arrived in
// order: every reply is right, and what the tap saw written is exactly the
// commands.
func TestStartWritesEverythingOnceTheServerReadsAgain(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("enable-debug-command yes"), redistest.WithUnixSocket(), redistest.WithTLS())
	ctx := context.Background()
	for _, kind := range []struct {
		name string
		addr string
		opts []conn.Option
	}{
		{name: "tcp", addr: srv.Addr},
		{name: "unix", addr: "unix://" + srv.UnixSocket},
		{name: "tls", addr: srv.TLSAddr, opts: []conn.Option{conn.WithTLS(srv.TLSConfig())}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			var wire wireLog
			c := dial(t, kind.addr, append(kind.opts, conn.WithTap(wire.tap))...)
			stallServer(t, srv.Addr)

			fill := fillCommands(fillBytes / (256 << 10))
			var batches [][][]string
			for i := 0; i < len(fill); i += 2 {
				batches = append(batches, fill[i:i+2])
			}
			batches = append(batches,
				[][]string{{"STRLEN", "fill:0"}, {"PING"}},
				[][]string{{"ECHO", "last"}})
			var want []byte
			var started []*conn.Pending
			for _, batch := range batches {
				began := time.Now()
				p, err := c.Start(batch...)
				took := time.Since(began)
				require.NoError(t, err)
				require.Less(t, took, startBound, "Start on a stalled server")
				started = append(started, p)
				for _, cmd := range batch {
					want = resp.AppendCommand(want, cmd...)
				}
			}

			var got []resp.Value
			for _, p := range started {
				replies, err := p.Wait(ctx)
				require.NoError(t, err)
				got = append(got, replies...)
			}
			for _, v := range got[:len(fill)] {
				require.Equal(t, "OK", v.Str)
			}
			require.Equal(t, int64(256<<10), got[len(fill)].Int)
			require.Equal(t, "PONG", got[len(fill)+1].Str)
			require.Equal(t, "last", got[len(fill)+2].Str)

			require.NoError(t, c.Err())
			// The tap hears of a write once it is done, which may be after
			// its reply came back; Close waits for every writer.
			require.NoError(t, c.Close())
			require.True(t, bytes.Equal(want, bytes.Join(wire.Writes(), nil)), "the bytes written are not the commands, in order")
		})
	}
}

// stallServer makes the server stop reading for a second (DEBUG SLEEP) and
// returns once it has, as a PING that times out shows.
func stallServer(t *testing.T, addr string) {
	t.Helper()
	staller, prober := dial(t, addr), dial(t, addr)
	if _, err := staller.Start([]string{"DEBUG", "SLEEP", "1"}); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := prober.Do(ctx, "PING")
		return errors.Is(err, context.DeadlineExceeded)
	}, 5*time.Second, time.Millisecond, "the server did not stall")
}

// TestStartSendsABatchInOneWrite Starts PING + EVAL pairs, alone and among
// other callers, and checks with the tap that each pair leaves in one write.
func TestStartSendsABatchInOneWrite(t *testing.T) {
	srv := redistest.Start(t)
	var wire wireLog
	c := dial(t, srv.Addr, conn.WithTap(wire.tap))
	ctx := context.Background()
	ping := []string{"PING"}
	eval := []string{"EVAL", releaseScript, "1", "lock:{a}", "token-1"}
	pair := resp.AppendCommand(resp.AppendCommand(nil, ping...), eval...)

	// Alone: the pair is the one write.
	p, err := c.Start(ping, eval)
	require.NoError(t, err)
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, [][]byte{pair}, wire.Writes())

	// Among others whose writes it shares.
	stop := bystanders(t, c, 8)
	for range 200 {
		p, err := c.Start(ping, eval)
		require.NoError(t, err)
		replies, err := p.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, "PONG", replies[0].Str)
		require.Equal(t, int64(0), replies[1].Int)
	}
	require.NoError(t, stop())

	found := 0
	for _, w := range wire.Writes() {
		found += bytes.Count(w, pair)
		// No write may hold a part of the pair without the whole of it.
		require.Equal(t, bytes.Count(w, []byte("$4\r\nEVAL\r\n")), bytes.Count(w, pair))
	}
	require.Equal(t, 201, found)
}

// TestStartsFromManyGoroutines mixes Start with Do on one connection, many
// goroutines at once, and checks that every reply reaches its caller.
func TestStartsFromManyGoroutines(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv.Addr)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				want := strings.Repeat("v", g*100+i)
				var got string
				var err error
				if i%2 == 0 {
					var p *conn.Pending
					if p, err = c.Start([]string{"ECHO", want}, []string{"PING"}); err == nil {
						var replies []resp.Value
						if replies, err = p.Wait(ctx); err == nil {
							got = replies[0].Str
						}
					}
				} else {
					var v resp.Value
					v, err = c.Do(ctx, "ECHO", want)
					got = v.Str
				}
				if err == nil && got != want {
					err = errors.New("a reply reached the wrong caller")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, c.Pending())
}
