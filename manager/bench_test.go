package manager_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/manager"
)

// BenchmarkModify is an uncontended Modify (two round trips: acquire and
// load, then write-back and release), and a back-to-back Modify on a held
// lock (WithHold: one round trip), beside a bare PING round trip on a
// socket the calling goroutine writes and reads, against the same server in
// the same run. Compare with
//
//	benchstat -col /impl
func BenchmarkModify(b *testing.B) {
	srv := redistest.Start(b)
	b.Run("impl=raw-ping", func(b *testing.B) { redistest.BenchPing(b, srv.Addr, 1) })
	for _, mode := range []string{"modify", "held"} {
		b.Run("impl="+mode, func(b *testing.B) {
			var opts []manager.Option
			if mode == "held" {
				opts = append(opts, manager.WithHold(5*time.Second))
			}
			m := newManager(b, openLocker(b, srv), opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Modify(ctx, "bench-"+mode, increment); err != nil {
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
