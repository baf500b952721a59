package manager_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	"github.com/batonlock/baton/resp"
)

// BenchmarkModify is an uncontended Modify (two round trips: acquire and
// load, then write-back and release), and a back-to-back Modify on a held
// lock (WithHold: one round trip), beside two baselines on a socket the
// calling goroutine writes and reads, against the same server in the same
// run: a bare PING round trip (impl=raw-ping), and the very bytes an
// uncontended Modify writes, replayed write by write (impl=raw-modify),
// which is what the server's side of a Modify costs. The -spin variants
// have callers spin for their replies (conn.WithSpinWait). Compare with
//
//	benchstat -col /impl
func BenchmarkModify(b *testing.B) {
	srv := redistest.Start(b)
	b.Run("impl=raw-ping", func(b *testing.B) { redistest.BenchPing(b, srv.Addr, 1) })
	b.Run("impl=raw-modify", func(b *testing.B) {
		writes := modifyWrites(b, srv)
		raw := redistest.DialRaw(b, srv.Addr)
		b.ReportAllocs()
		for b.Loop() {
			for _, w := range writes {
				raw.RoundTrip(b, w.bytes, w.commands)
			}
		}
	})
	for _, impl := range []string{"modify", "modify-spin", "held", "held-spin"} {
		b.Run("impl="+impl, func(b *testing.B) {
			var opts []manager.Option
			if strings.HasPrefix(impl, "held") {
				opts = append(opts, manager.WithHold(5*time.Second))
			}
			var lockOpts []lock.Option
			if strings.HasSuffix(impl, "-spin") {
				lockOpts = append(lockOpts, lock.WithConnOptions(conn.WithSpinWait(100*time.Microsecond)))
			}
			m := newManager(b, openLocker(b, srv, lockOpts...), opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Modify(ctx, "bench-"+impl, increment); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkModifyParallel is Modify from 32 goroutines, each on a token of
// its own, through one Manager.
func BenchmarkModifyParallel(b *testing.B) {
	srv := redistest.Start(b)
	m := manager.New[counter](openLocker(b, srv))
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(16) // 32 goroutines with GOMAXPROCS=2
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		token := "t" + strconv.FormatInt(next.Add(1)%32, 10)
		for pb.Next() {
			if err := m.Modify(ctx, token, increment); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// recordedWrite is one write of a connection, and how many commands it
// holds.
type recordedWrite struct {
	bytes    []byte
	commands int
}

// modifyWrites returns the writes of one uncontended Modify, after a first
// Modify that made the state exist.
func modifyWrites(b *testing.B, srv *redistest.Server) []recordedWrite {
	var mu sync.Mutex
	var writes [][]byte
	recording := false
	tap := conn.WithTap(func(dir conn.Direction, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		if recording && dir == conn.Write {
			writes = append(writes, bytes.Clone(p))
		}
	})
	m := manager.New[counter](openLocker(b, srv, lock.WithConnOptions(tap)))
	ctx := context.Background()
	if err := m.Modify(ctx, "bench-raw", increment); err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	recording = true
	mu.Unlock()
	if err := m.Modify(ctx, "bench-raw", increment); err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	recording = false
	if len(writes) != 2 {
		b.Fatalf("an uncontended Modify made %d writes, want 2", len(writes))
	}
	var recorded []recordedWrite
	for _, w := range writes {
		rd := resp.NewReader(bytes.NewReader(w))
		n := 0
		for {
			if _, err := rd.Read(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatalf("reading a recorded write: %v", err)
			}
			n++
		}
		recorded = append(recorded, recordedWrite{bytes: w, commands: n})
	}
	return recorded
}
