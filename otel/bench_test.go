package batonotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonlock/baton/internal/latency"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	batonotel "github.com/batonlock/baton/otel"
)

// BenchmarkLockUnlock is an uncontended Lock and Unlock from one
// goroutine, with no observer (observer=none) and with this package's on
// the SDK (observer=otel): a meter provider read by a manual reader, and
// a tracer provider with no exporter, so that spans are made and
// recorded but go nowhere. The observer runs on the Locker's own
// goroutine, concurrently with the loop; the allocations counted are
// the whole process's, the observer's included. Beside ns/op (the mean),
// it reports the median latency of a Lock and Unlock (p50-ns), from an
// HDR histogram. Compare with
//
//	benchstat -col /observer
func BenchmarkLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	for _, name := range []string{"none", "otel"} {
		b.Run("observer="+name, func(b *testing.B) {
			var opts []lock.Option
			var reader *sdkmetric.ManualReader
			if name == "otel" {
				reader = sdkmetric.NewManualReader()
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
				tp := sdktrace.NewTracerProvider()
				b.Cleanup(func() {
					require.NoError(b, mp.Shutdown(context.Background()))
					require.NoError(b, tp.Shutdown(context.Background()))
				})
				obs, err := batonotel.New(batonotel.WithMeterProvider(mp), batonotel.WithTracerProvider(tp))
				require.NoError(b, err)
				opts = append(opts, lock.WithObserver(obs))
			}
			l, err := lock.Open(context.Background(), srv.Addr, opts...)
			require.NoError(b, err)
			ctx := context.Background()
			rec := latency.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				ls, err := l.Lock(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if err := ls.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
				rec.Record(time.Since(start))
			}
			b.ReportMetric(float64(rec.Summary().P50.Nanoseconds()), "p50-ns")
			require.NoError(b, l.Close())
			if reader != nil {
				tm := telemetry{reader: reader}
				// Events the observer did not keep up with: none is
				// expected, and any would make the allocations look
				// smaller than they are.
				b.ReportMetric(float64(tm.collect(b).sum("baton.observe.dropped"))/float64(b.N), "dropped/op")
			}
		})
	}
}
