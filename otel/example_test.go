package batonotel_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonlock/baton/lock"
	batonotel "github.com/batonlock/baton/otel"
)

var redisAddr = "localhost:6379" // TestMain points it at a throwaway server

// Example wires a Locker to the OpenTelemetry SDK, takes a lock and lets
// it go, and prints the names of the metrics that were recorded. A
// program would give the SDK a periodic reader and an exporter instead of
// the manual reader, and a batching span processor.
func Example() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(ctx)

	obs, err := batonotel.New(batonotel.WithMeterProvider(mp), batonotel.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	l, err := lock.Open(ctx, redisAddr, lock.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := l.Lock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	l.Close() // delivers every event to the observer

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Println(name)
	}
	// Output:
	// baton.lock.acquisitions
	// baton.lock.hold.duration
	// baton.lock.leases.ended
	// baton.lock.leases.held
	// baton.lock.wait.duration
	// baton.lock.waiters
}
