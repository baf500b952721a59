package batonotel_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/internal/urltext"
	"github.com/batonlock/baton/lock"
)

// attrText is kvs as text, key=value each.
func attrText(kvs []attribute.KeyValue) string {
	var b strings.Builder
	for _, kv := range kvs {
		fmt.Fprintf(&b, "%s=%s ", kv.Key, kv.Value.Emit())
	}
	return b.String()
}

// spanTexts is every text of spans a user's exporter sends: each span's
// name, status, attributes, and its events' and links' names and
// attributes (RecordError's exception.message among them).
func spanTexts(spans []sdktrace.ReadOnlySpan) []string {
	var texts []string
	for _, s := range spans {
		texts = append(texts, s.Name(), s.Status().Description, attrText(s.Attributes()))
		for _, e := range s.Events() {
			texts = append(texts, e.Name, attrText(e.Attributes))
		}
		for _, l := range s.Links() {
			texts = append(texts, attrText(l.Attributes))
		}
	}
	return texts
}

// metricTexts is every attribute of every data point of rm, and of its
// exemplars, as text.
func metricTexts(rm metricdata.ResourceMetrics) []string {
	var texts []string
	points := func(attrs attribute.Set, exemplarAttrs ...[]attribute.KeyValue) {
		texts = append(texts, attrText(attrs.ToSlice()))
		for _, kvs := range exemplarAttrs {
			texts = append(texts, attrText(kvs))
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			texts = append(texts, m.Name, m.Description)
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					points(p.Attributes, exemplarAttrs(p.Exemplars)...)
				}
			case metricdata.Sum[float64]:
				for _, p := range data.DataPoints {
					points(p.Attributes, exemplarAttrs(p.Exemplars)...)
				}
			case metricdata.Gauge[int64]:
				for _, p := range data.DataPoints {
					points(p.Attributes, exemplarAttrs(p.Exemplars)...)
				}
			case metricdata.Gauge[float64]:
				for _, p := range data.DataPoints {
					points(p.Attributes, exemplarAttrs(p.Exemplars)...)
				}
			case metricdata.Histogram[int64]:
				for _, p := range data.DataPoints {
					points(p.Attributes, exemplarAttrs(p.Exemplars)...)
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					points(p.Attributes, exemplarAttrs(p.Exemplars)...)
				}
			default:
				texts = append(texts, fmt.Sprintf("%+v", data))
			}
		}
	}
	return texts
}

func exemplarAttrs[N int64 | float64](es []metricdata.Exemplar[N]) [][]attribute.KeyValue {
	var out [][]attribute.KeyValue
	for _, e := range es {
		out = append(out, e.FilteredAttributes)
	}
	return out
}

// churnTraced makes every kind of call on l from a few goroutines, until
// ctx ends: Lock, Extend, Unlock and TryLock, each bounded so that a call
// waiting for a redial gives up.
func churnTraced(ctx context.Context, l *lock.Locker) {
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("k%d", (g+i)%4)
				call, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				if ls, err := l.Lock(call, key); err == nil {
					_ = ls.Extend(call, time.Second)
					_ = ls.Unlock(call)
				}
				_, _ = l.TryLock(call, key+"t")
				cancel()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// TestNoSpanOrMetricCarriesThePassword runs calls of every kind through
// faults that make a Locker redial or give up (a server that goes away
// and comes back, restarts five times, refuses the password; a sentinel
// that goes down), with the Observer on an SDK that keeps every span and
// metric, and searches them all for the password: a failed call's span
// records its error (RecordError's exception.message), the one place
// where an error's text reaches telemetry. The password has a '/' so
// that its percent-encoded form, as a URL holds it, differs from the
// plain one.
func TestNoSpanOrMetricCarriesThePassword(t *testing.T) {
	const secret = "s3cr3t/pw"
	withPassword := func(host string) string {
		return (&url.URL{Scheme: "redis", User: url.UserPassword("", secret), Host: host}).String()
	}
	single := func(t *testing.T) (*redistest.Server, string) {
		srv := redistest.Start(t, redistest.WithConfig("requirepass "+secret))
		return srv, withPassword(srv.Addr)
	}
	for _, m := range lockModes {
		t.Run(m.name+"/away", func(t *testing.T) {
			srv, _ := single(t)
			proxy, err := faultproxy.Start(srv.Addr)
			require.NoError(t, err)
			t.Cleanup(func() { _ = proxy.Close() })
			requireNoSecretTraced(t, withPassword(proxy.Addr()), secret, m.opts, func() {
				proxy.Refuse(true)
				proxy.Reset()
				time.Sleep(1500 * time.Millisecond)
				proxy.Refuse(false)
			})
		})
		t.Run(m.name+"/restart", func(t *testing.T) {
			srv, addr := single(t)
			requireNoSecretTraced(t, addr, secret, m.opts, func() {
				// A restart is quick and fails a call or two: five
				// fail enough to tell.
				for range 5 {
					srv.Restart(t)
					time.Sleep(200 * time.Millisecond)
				}
			})
		})
		t.Run(m.name+"/refused password", func(t *testing.T) {
			_, addr := single(t)
			requireNoSecretTraced(t, addr, secret, m.opts, func() {
				// Another password, and every client dropped: each
				// redial is refused until it is set back.
				admin, err := conn.Dial(context.Background(), addr)
				require.NoError(t, err)
				defer admin.Close()
				_, err = admin.DoMulti(context.Background(),
					[]string{"CONFIG", "SET", "requirepass", "other"},
					[]string{"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"},
					[]string{"CLIENT", "KILL", "TYPE", "pubsub"})
				require.NoError(t, err)
				time.Sleep(1500 * time.Millisecond)
				_, err = admin.Do(context.Background(), "CONFIG", "SET", "requirepass", secret)
				require.NoError(t, err)
			})
		})
	}
	t.Run("sentinel down", func(t *testing.T) {
		const sentinelSecret = "s3nt1nel/pw"
		s := redistest.StartSentinels(t, 1, 1, "requirepass "+sentinelSecret)
		addr := s.URL() + "?sentinel_password=" + url.QueryEscape(sentinelSecret)
		requireNoSecretTraced(t, addr, sentinelSecret, nil, func() {
			// The sentinel goes; the primary drops every client, so
			// that each redial asks the sentinel, which is not there.
			primary := s.Primary(t)
			s.Sentinels.Sentinels[0].Stop()
			primary.Do(t, "CLIENT", "KILL", "TYPE", "normal")
			primary.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
			time.Sleep(1500 * time.Millisecond)
		})
	})
}

// minFaultErrors is how many calls a fault must fail, other than by
// finding the lock held, for its run to tell anything: each failed
// call's span carries its error's text.
const minFaultErrors = 3

// requireNoSecretTraced opens a Locker on addr observed by an Observer
// on an SDK that keeps everything, churns calls on it while fault runs
// (and a moment before and after), closes it, and fails t if any span or
// metric says secret in any form; or if fewer than minFaultErrors calls
// failed because of the fault, or none of their errors quoted the
// address, for then the search proves nothing.
func requireNoSecretTraced(t *testing.T, addr, secret string, opts []lock.Option, fault func()) {
	t.Helper()
	tm := newTelemetry(t)
	opened, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.Open(opened, addr, append([]lock.Option{
		lock.WithObserver(tm.obs), lock.WithReleaseTimeout(time.Second), lock.WithTTL(2 * time.Second),
	}, opts...)...)
	require.NoError(t, err)

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { churnTraced(ctx, l) })
	time.Sleep(200 * time.Millisecond)
	fault()
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()
	_ = l.Close() // its error may be the fault's; every event is delivered once it returns

	var rm metricdata.ResourceMetrics
	require.NoError(t, tm.reader.Collect(context.Background(), &rm))
	// Started holds every span, ended or not, as it is now.
	spans := readOnly(tm.spans.Started())
	texts := append(spanTexts(spans), metricTexts(rm)...)
	for _, text := range texts {
		for _, form := range redistest.SecretForms(secret) {
			require.NotContains(t, text, form)
		}
	}

	// The errors that quote the address, redacted: where the password
	// would be, were it printed.
	shown := urltext.Redacted(addr)
	faultErrors, recorded, quoting := 0, 0, 0
	for _, s := range tm.spans.Ended() {
		if s.Status().Code != codes.Error || s.Status().Description == "not_acquired" {
			continue
		}
		faultErrors++
		for _, e := range s.Events() {
			if e.Name == "exception" {
				recorded++
				if strings.Contains(attrText(e.Attributes), shown) {
					quoting++
				}
			}
		}
	}
	t.Logf("%d spans, %d texts searched: no password; %d calls failed by the fault, their spans recorded %d errors, %d quoting the address",
		len(tm.spans.Ended()), len(texts), faultErrors, recorded, quoting)
	require.GreaterOrEqual(t, faultErrors, minFaultErrors, "the fault failed too few calls to tell")
	require.Equal(t, faultErrors, recorded, "every failed call's span records its error")
	require.Positive(t, quoting, "no recorded error quoted the address: the search looked nowhere a password would be")
}

// readOnly is spans as ReadOnlySpans.
func readOnly(spans []sdktrace.ReadWriteSpan) []sdktrace.ReadOnlySpan {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = s
	}
	return out
}
