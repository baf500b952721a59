package conn_test

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
)

// BenchmarkDo compares one goroutine's PING round trip through Conn.Do with
// two baselines on a bare net.Conn, against the same server in the same run:
// impl=raw writes and reads in the calling goroutine; impl=handoff reads in
// a second goroutine that hands each reply to the caller over a channel,
// the least that any connection with a dedicated reader goroutine pays.
// impl=conn-cancellable is Conn.Do under a context that can end, which
// reads between frames (see lead.go); impl=conn-spin is Conn.Do with
// callers that spin for their reply (WithSpinWait). Compare them with
//
//	benchstat -col /impl
func BenchmarkDo(b *testing.B) {
	srv := redistest.Start(b)
	b.Run("impl=raw", func(b *testing.B) { redistest.BenchPing(b, srv.Addr, 1) })
	b.Run("impl=handoff", func(b *testing.B) {
		nc, err := net.Dial("tcp", srv.Addr)
		require.NoError(b, err)
		br := bufio.NewReader(nc)
		replies := make(chan string, 1)
		var reader sync.WaitGroup
		reader.Go(func() {
			defer close(replies)
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				replies <- string(line)
			}
		})
		defer reader.Wait()
		defer nc.Close()
		ping := []byte("*1\r\n$4\r\nPING\r\n")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := nc.Write(ping); err != nil {
				b.Fatal(err)
			}
			if line := <-replies; line != "+PONG\r\n" {
				b.Fatalf("%q", line)
			}
		}
	})
	for _, impl := range []string{"conn", "conn-cancellable", "conn-spin"} {
		b.Run("impl="+impl, func(b *testing.B) {
			var opts []conn.Option
			if impl == "conn-spin" {
				opts = append(opts, conn.WithSpinWait(benchSpinWait))
			}
			c := dial(b, srv.Addr, opts...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if impl != "conn-cancellable" {
				ctx = context.Background()
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Do(ctx, "PING"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchSpinWait is the spin wait (WithSpinWait) the benchmarks try: about
// two loopback round trips on the machines measured.
const benchSpinWait = 100 * time.Microsecond

// BenchmarkDoParallel measures PING throughput on one Conn from 1 and from
// 64 goroutines; coalesced writes are what make the second faster. Compare
// with
//
//	benchstat -col /goroutines
func BenchmarkDoParallel(b *testing.B) {
	srv := redistest.Start(b)
	for _, goroutines := range []int{1, 64} {
		b.Run("goroutines="+strconv.Itoa(goroutines), func(b *testing.B) {
			c := dial(b, srv.Addr)
			ctx := context.Background()
			b.ReportAllocs()
			// RunParallel starts parallelism × GOMAXPROCS goroutines.
			b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
			if goroutines == 1 {
				for b.Loop() {
					if _, err := c.Do(ctx, "PING"); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Do(ctx, "PING"); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDoMulti sends PING and a release-style EVAL in one call.
func BenchmarkDoMulti(b *testing.B) {
	srv := redistest.Start(b)
	c := dial(b, srv.Addr)
	ctx := context.Background()
	ping := []string{"PING"}
	eval := []string{"EVAL", releaseScript, "1", "lock:{bench}", "token"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.DoMulti(ctx, ping, eval); err != nil {
			b.Fatal(err)
		}
	}
}
