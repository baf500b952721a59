package lock_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// BenchmarkLockUnlock is an uncontended Lock and Unlock from one goroutine:
// two round trips, in fast mode (impl=lock) and fair mode (impl=fair). Two
// baselines run against the same server in the same run, on a bare
// net.Conn written and read by the calling goroutine:
// impl=raw is two PING round trips; impl=raw-scripts is the lock's own two
// round trips (the acquire script, then PING and the release script), which
// shows what the server's script execution adds. Compare with
//
//	benchstat -col /impl
func BenchmarkLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	b.Run("impl=raw", func(b *testing.B) { redistest.BenchPing(b, srv.Addr, 2) })
	b.Run("impl=raw-scripts", func(b *testing.B) {
		raw := redistest.DialRaw(b, srv.Addr)
		acquire := resp.AppendCommand(nil, lock.RawAcquire("baton:{raw}", "owner")...)
		release := resp.AppendCommand(resp.AppendCommand(nil, "PING"), lock.RawRelease("baton:{raw}", "owner")...)
		raw.RoundTrip(b, acquire, 1)
		if v := raw.Do(b, release, 2); v.Int != 1 {
			b.Fatalf("the release script answered %v, not 1 (deleted): its arguments are not the release's", v)
		}
		b.ReportAllocs()
		for b.Loop() {
			raw.RoundTrip(b, acquire, 1)
			raw.RoundTrip(b, release, 2) // PONG, then the release's reply
		}
	})
	for _, impl := range []string{"lock", "lock-cancellable", "fair"} {
		b.Run("impl="+impl, func(b *testing.B) {
			mode, ctxKind, _ := strings.Cut(impl, "-")
			l := open(b, srv, modeOptions(mode)...)
			// A context that can end, as a request's, or one that cannot.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if ctxKind != "cancellable" {
				ctx = context.Background()
			}
			b.ReportAllocs()
			for b.Loop() {
				ls, err := l.Lock(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if err := ls.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLockUnlockDone is Lock and Unlock in each mode with the
// lease's Done asked for (done=asked) and not (done=no): what having a
// lease watched for a loss on the server costs. Asking has the
// Subscriber read the lock's key on its own connection, a GET the server
// then tracks, and the release's DEL sends that connection an
// invalidation. The Subscriber sends its GET from its own goroutine, and
// an Unlock right after Done stops the watch before it does, so in both
// rows the lease holds the lock for one round trip of work, a PING on a
// bare connection, as a lease that does anything under its lock would.
// redis-cmds/op is the server's commands per lease, the PING included
// (INFO commandstats), where the GET shows. Compare with
//
//	benchstat -filter .name:LockUnlockDone -col /done
func BenchmarkLockUnlockDone(b *testing.B) {
	srv := redistest.Start(b)
	ping := resp.AppendCommand(nil, "PING")
	for _, mode := range []string{"fast", "fair"} {
		for _, done := range []string{"no", "asked"} {
			b.Run("mode="+mode+"/done="+done, func(b *testing.B) {
				l := open(b, srv, modeOptions(mode)...)
				work := redistest.DialRaw(b, srv.Addr)
				ctx := context.Background()
				srv.Do(b, "CONFIG", "RESETSTAT")
				b.ReportAllocs()
				for b.Loop() {
					ls, err := l.Lock(ctx, "bench-done")
					if err != nil {
						b.Fatal(err)
					}
					if done == "asked" {
						ls.Done()
					}
					work.RoundTrip(b, ping, 1)
					if err := ls.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(commandCalls(b, srv))/float64(b.N), "redis-cmds/op")
			})
		}
	}
}

// BenchmarkLockParallel is Lock and Unlock from 64 goroutines, each on a key
// of its own, through one Locker.
func BenchmarkLockParallel(b *testing.B) {
	srv := redistest.Start(b)
	lockParallel(b, open(b, srv))
}

// lockParallel takes and releases locks through l from 64 goroutines,
// each on a key of its own.
func lockParallel(b *testing.B, l *lock.Locker) {
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := "k" + strconv.FormatInt(next.Add(1), 10)
		for pb.Next() {
			ls, err := l.Lock(ctx, key)
			if err != nil {
				b.Error(err)
				return
			}
			if err := ls.Unlock(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkHandOff measures, with 8 waiters on one key, the time from a
// holder starting its release to the next holder's Lock returning, in fast
// and in fair mode. It reports the median and the 99th percentile, and the
// commands Redis ran per acquisition (INFO commandstats: every command,
// those run inside scripts included).
func BenchmarkHandOff(b *testing.B) {
	srv := redistest.Start(b)
	for _, mode := range []string{"fast", "fair"} {
		b.Run("mode="+mode+"/waiters=8", func(b *testing.B) {
			opts := modeOptions(mode)
			l := open(b, srv, opts...)
			ctx := context.Background()
			var (
				mu        sync.Mutex
				releaseAt time.Time // when the current holder began to release
				latencies []time.Duration
				remaining atomic.Int64
			)
			remaining.Store(int64(b.N))
			srv.Do(b, "CONFIG", "RESETSTAT")
			b.ResetTimer()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for remaining.Add(-1) >= 0 {
						ls, err := l.Lock(ctx, "handoff")
						if err != nil {
							b.Error(err)
							return
						}
						now := time.Now()
						mu.Lock()
						if !releaseAt.IsZero() {
							latencies = append(latencies, now.Sub(releaseAt))
						}
						releaseAt = time.Now()
						mu.Unlock()
						if err := ls.Unlock(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			reportPercentiles(b, latencies)
			b.ReportMetric(float64(commandCalls(b, srv))/float64(b.N), "redis-cmds/acquire")
		})
	}
}

// commandCalls sums the calls of every command in INFO commandstats.
func commandCalls(b testing.TB, srv *redistest.Server) int64 {
	var total int64
	for _, line := range strings.Split(srv.Do(b, "INFO", "commandstats").Str, "\n") {
		_, stats, ok := strings.Cut(line, ":calls=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(stats[:strings.IndexByte(stats, ',')], 10, 64)
		if err != nil {
			b.Fatalf("commandstats line %q: %v", line, err)
		}
		total += n
	}
	return total
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}
