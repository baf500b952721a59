package batonotel_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	batonotel "github.com/batonlock/baton/otel"
)

// TestMain starts a throwaway redis-server for the examples (see
// example_test.go's redisAddr) and fails the run if any goroutine outlives
// the tests; or, with deadWaiterEnv set, is a waiter to be killed.
func TestMain(m *testing.M) {
	if addr := os.Getenv(deadWaiterEnv); addr != "" {
		os.Exit(waitInLine(addr)) // a process to kill (see TestADeadFairWaiterIsCountedAsSkipped)
	}
	goleak.VerifyTestMain(hangreport.Watch(redistest.WithExampleServer(m, &redisAddr)))
}

// telemetry is an Observer on an SDK meter provider read by hand and a
// tracer provider that records its spans.
type telemetry struct {
	obs    *batonotel.Observer
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tracer trace.Tracer // the caller's, for parent spans
}

func newTelemetry(t testing.TB, opts ...batonotel.Option) *telemetry {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() {
		require.NoError(t, mp.Shutdown(context.Background()))
		require.NoError(t, tp.Shutdown(context.Background()))
	})
	obs, err := batonotel.New(append([]batonotel.Option{
		batonotel.WithMeterProvider(mp), batonotel.WithTracerProvider(tp),
	}, opts...)...)
	require.NoError(t, err)
	return &telemetry{obs: obs, reader: reader, spans: spans, tracer: tp.Tracer("caller")}
}

// open returns a Locker on srv observed by tm, closed when the test ends;
// close it before reading tm, so that every event has been delivered.
func (tm *telemetry) open(t testing.TB, srv *redistest.Server, opts ...lock.Option) *lock.Locker {
	t.Helper()
	return open(t, srv, append(opts, lock.WithObserver(tm.obs))...)
}

// open returns a Locker on srv, closed when the test ends.
func open(t testing.TB, srv *redistest.Server, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.Open(context.Background(), srv.Addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

// point is one data point of a metric: its attributes, and its value (a
// sum's) or its count and the sum of its values (a histogram's).
type point struct {
	attrs attribute.Set
	value int64
	count uint64
	total float64
}

// collected is the metrics read at once, by name.
type collected map[string][]point

// collect reads tm's metrics.
func (tm *telemetry) collect(t testing.TB) collected {
	t.Helper()
	c, err := tm.read()
	require.NoError(t, err)
	return c
}

// read reads tm's metrics, failing nothing: for conditions that
// require.Eventually polls from another goroutine.
func (tm *telemetry) read() (collected, error) {
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		return nil, err
	}
	c := collected{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					c[m.Name] = append(c[m.Name], point{attrs: p.Attributes, value: p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					c[m.Name] = append(c[m.Name], point{attrs: p.Attributes, count: p.Count, total: p.Sum})
				}
			}
		}
	}
	return c, nil
}

// sum is the total of name's sum points that have every attribute in kvs.
func (c collected) sum(name string, kvs ...attribute.KeyValue) int64 {
	var n int64
	for _, p := range c.matching(name, kvs) {
		n += p.value
	}
	return n
}

// count is the total count of name's histogram points that have every
// attribute in kvs.
func (c collected) count(name string, kvs ...attribute.KeyValue) uint64 {
	var n uint64
	for _, p := range c.matching(name, kvs) {
		n += p.count
	}
	return n
}

// total is the sum of the values recorded in name's histogram points
// that have every attribute in kvs.
func (c collected) total(name string, kvs ...attribute.KeyValue) float64 {
	var n float64
	for _, p := range c.matching(name, kvs) {
		n += p.total
	}
	return n
}

func (c collected) matching(name string, kvs []attribute.KeyValue) []point {
	var ps []point
	for _, p := range c[name] {
		if hasAll(p.attrs.ToSlice(), kvs) {
			ps = append(ps, p)
		}
	}
	return ps
}

// hasAll says whether have includes every attribute of want.
func hasAll(have, want []attribute.KeyValue) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// ended is the spans ended so far that are named name.
func (tm *telemetry) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tm.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// eventNames is the names of s's events, in order.
func eventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

// asked says whether a span in progress has its "asked" event: the
// waiter has found the lock held and asked for it.
func (tm *telemetry) asked() bool {
	for _, s := range tm.spans.Started() {
		for _, e := range s.Events() {
			if e.Name == "asked" {
				return true
			}
		}
	}
	return false
}

// Attributes as the tests expect them.
func mode(m string) attribute.KeyValue   { return attribute.String("baton.lock.mode", m) }
func op(o string) attribute.KeyValue     { return attribute.String("baton.lock.op", o) }
func how(h string) attribute.KeyValue    { return attribute.String("baton.lock.how", h) }
func reason(r string) attribute.KeyValue { return attribute.String("baton.lock.lease.end_reason", r) }
func errType(e string) attribute.KeyValue {
	return attribute.String("error.type", e)
}

// lockModes are the Locker's modes, with the options that make each.
var lockModes = []struct {
	name string
	opts []lock.Option
}{
	{"fast", nil},
	{"fair", []lock.Option{lock.WithFair()}},
}
