package batonotel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	batonotel "github.com/batonlock/baton/otel"
)

func TestAnUncontendedLockIsMeasuredAndTraced(t *testing.T) {
	for _, m := range lockModes {
		t.Run(m.name, func(t *testing.T) {
			srv := redistest.Start(t)
			tm := newTelemetry(t)
			l := tm.open(t, srv, m.opts...)
			ctx, caller := tm.tracer.Start(context.Background(), "caller")
			ls, err := l.Lock(ctx, "k")
			require.NoError(t, err)
			require.NoError(t, ls.Unlock(ctx))
			caller.End()
			require.NoError(t, l.Close())

			c := tm.collect(t)
			require.EqualValues(t, 1, c.sum("baton.lock.acquisitions", mode(m.name), op("lock"), how("free")))
			require.EqualValues(t, 1, c.sum("baton.lock.acquisitions"))
			require.EqualValues(t, 1, c.count("baton.lock.wait.duration", mode(m.name), op("lock"), how("free")))
			require.EqualValues(t, 1, c.count("baton.lock.hold.duration", mode(m.name), reason("released")))
			require.EqualValues(t, 1, c.sum("baton.lock.leases.ended", reason("released")))
			require.Len(t, c["baton.lock.leases.held"], 1, "a lease was held")
			require.Zero(t, c.sum("baton.lock.leases.held"), "and is no more")
			require.Len(t, c["baton.lock.waiters"], 1, "a call waited")
			require.Zero(t, c.sum("baton.lock.waiters"), "and waits no more")
			require.Zero(t, c.sum("baton.lock.leases.lost"))

			spans := tm.ended("baton.lock")
			require.Len(t, spans, 1)
			s := spans[0]
			require.Equal(t, caller.SpanContext().SpanID(), s.Parent().SpanID(), "the caller's span is the parent")
			require.Equal(t, caller.SpanContext().TraceID(), s.SpanContext().TraceID())
			require.Equal(t, trace.SpanKindInternal, s.SpanKind())
			require.Equal(t, []string{"lease granted"}, eventNames(s))
			require.Contains(t, s.Events()[0].Attributes, attribute.Int64("baton.lock.token", int64(ls.Token())))
			require.Contains(t, s.Events()[0].Attributes, how("free"))
			require.Subset(t, s.Attributes(), []attribute.KeyValue{mode(m.name), op("lock"), how("free")})
			require.Equal(t, codes.Unset, s.Status().Code)
			require.False(t, s.EndTime().Before(s.StartTime()))
		})
	}
}

func TestAHandOffIsMeasuredOnTheWaiter(t *testing.T) {
	for _, m := range lockModes {
		t.Run(m.name, func(t *testing.T) {
			srv := redistest.Start(t)
			tm := newTelemetry(t)
			holder := open(t, srv, m.opts...)
			waiter := tm.open(t, srv, m.opts...)
			held, err := holder.Lock(context.Background(), "k")
			require.NoError(t, err)
			got := make(chan error, 1)
			go func() {
				ls, err := waiter.Lock(context.Background(), "k")
				if err == nil {
					err = ls.Unlock(context.Background())
				}
				got <- err
			}()
			require.Eventually(t, tm.asked, 10*time.Second, time.Millisecond, "the waiter never asked")
			c := tm.collect(t)
			require.EqualValues(t, 1, c.sum("baton.lock.waiters", mode(m.name), op("lock")), "the waiter waits")
			require.NoError(t, held.Unlock(context.Background()))
			require.NoError(t, <-got)
			require.NoError(t, waiter.Close())

			c = tm.collect(t)
			require.EqualValues(t, 1, c.sum("baton.lock.acquisitions", mode(m.name), how("handed_over")))
			require.EqualValues(t, 1, c.sum("baton.lock.acquisitions"))
			require.EqualValues(t, 1, c.count("baton.lock.handoff.duration", mode(m.name)))
			require.EqualValues(t, 1, c.count("baton.lock.wait.duration", how("handed_over")))
			require.Zero(t, c.sum("baton.lock.waiters"))
			require.Zero(t, c.sum("baton.lock.leases.held"))
			spans := tm.ended("baton.lock")
			require.Len(t, spans, 1)
			require.Equal(t, []string{"asked", "handed over", "lease granted"}, eventNames(spans[0]))
			handed := spans[0].Events()[1]
			require.Len(t, handed.Attributes, 1)
			require.Equal(t, attribute.Key("baton.lock.handoff.duration"), handed.Attributes[0].Key)
			require.GreaterOrEqual(t, handed.Attributes[0].Value.AsFloat64(), 0.0)
		})
	}
}

func TestATryLockOnAHeldLockIsAFailedCall(t *testing.T) {
	srv := redistest.Start(t)
	tm := newTelemetry(t)
	l := tm.open(t, srv)
	held, err := open(t, srv).Lock(context.Background(), "k")
	require.NoError(t, err)
	_, err = l.TryLock(context.Background(), "k")
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	require.NoError(t, held.Unlock(context.Background()))
	require.NoError(t, l.Close())

	c := tm.collect(t)
	require.EqualValues(t, 1, c.count("baton.lock.wait.duration", mode("fast"), op("trylock"), errType("not_acquired")))
	require.EqualValues(t, 1, c.count("baton.lock.wait.duration"))
	require.Zero(t, c.sum("baton.lock.acquisitions"))
	require.Zero(t, c.sum("baton.lock.waiters"))
	require.Empty(t, c["baton.lock.leases.held"], "no lease was granted")
	spans := tm.ended("baton.trylock")
	require.Len(t, spans, 1)
	require.Equal(t, codes.Error, spans[0].Status().Code)
	require.Equal(t, "not_acquired", spans[0].Status().Description)
	require.Contains(t, spans[0].Attributes(), errType("not_acquired"))
	require.Equal(t, []string{"exception"}, eventNames(spans[0]), "the error is recorded")
}

func TestALeaseThatRunsOutIsLost(t *testing.T) {
	srv := redistest.Start(t)
	tm := newTelemetry(t)
	l := tm.open(t, srv, lock.WithTTL(50*time.Millisecond))
	ls, err := l.Lock(context.Background(), "k")
	require.NoError(t, err)
	<-ls.Done()
	require.NoError(t, l.Close())

	c := tm.collect(t)
	require.EqualValues(t, 1, c.sum("baton.lock.leases.lost", reason("expired")))
	require.EqualValues(t, 1, c.sum("baton.lock.leases.lost"))
	require.EqualValues(t, 1, c.sum("baton.lock.leases.ended", mode("fast"), reason("expired")))
	require.EqualValues(t, 1, c.sum("baton.lock.leases.ended"))
	require.EqualValues(t, 1, c.count("baton.lock.hold.duration", reason("expired")))
	require.Zero(t, c.sum("baton.lock.leases.held"))
}

func TestALeaseThatRanOutUnwatchedIsLost(t *testing.T) {
	srv := redistest.Start(t)
	tm := newTelemetry(t)
	const ttl = 300 * time.Millisecond
	l := tm.open(t, srv, lock.WithTTL(ttl))
	// Nobody asks for Done: the one unlocked and the one left for Close
	// ran out all the same.
	unlocked, err := l.Lock(context.Background(), "unlocked")
	require.NoError(t, err)
	_, err = l.Lock(context.Background(), "left")
	require.NoError(t, err)
	time.Sleep(2 * ttl) // past both deadlines, taken from before the acquires
	require.ErrorIs(t, unlocked.Unlock(context.Background()), lock.ErrNotHeld)
	require.NoError(t, l.Close())

	c := tm.collect(t)
	require.EqualValues(t, 2, c.sum("baton.lock.leases.lost", mode("fast"), reason("expired")))
	require.EqualValues(t, 2, c.sum("baton.lock.leases.lost"))
	require.EqualValues(t, 2, c.sum("baton.lock.leases.ended", reason("expired")))
	require.EqualValues(t, 2, c.sum("baton.lock.leases.ended"), "none released or closed")
	require.EqualValues(t, 2, c.count("baton.lock.hold.duration", reason("expired")))
	require.LessOrEqual(t, c.total("baton.lock.hold.duration", reason("expired")), 2*ttl.Seconds(),
		"each held until its deadline, not until it was noticed")
	require.Zero(t, c.sum("baton.lock.leases.held"))
}

func TestASubscribersReconnectIsCounted(t *testing.T) {
	srv := redistest.Start(t)
	tm := newTelemetry(t)
	l := tm.open(t, srv)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	require.Eventually(t, func() bool {
		c, err := tm.read()
		return err == nil && c.sum("baton.subscriber.reconnects") == 1
	}, 10*time.Second, 5*time.Millisecond, "no reconnect counted")
	require.NoError(t, l.Close())
	c := tm.collect(t)
	require.EqualValues(t, 1, c.sum("baton.subscriber.reconnects"))
	require.Empty(t, c["baton.subscriber.health_check.failures"])
}

// counter is a Manager's state in these tests.
type counter struct{ N int }

func TestAModifyIsMeasuredAndTraced(t *testing.T) {
	srv := redistest.Start(t)
	tm := newTelemetry(t)
	l := tm.open(t, srv)
	m := manager.New[counter](l)
	ctx, caller := tm.tracer.Start(context.Background(), "caller")
	require.NoError(t, m.Modify(ctx, "session-1", func(c *counter) error { c.N++; return nil }))
	caller.End()
	require.NoError(t, m.Close())
	require.NoError(t, l.Close())

	c := tm.collect(t)
	require.EqualValues(t, 1, c.count("baton.modify.duration", mode("fast"), op("modify")))
	require.EqualValues(t, 1, c.count("baton.modify.duration"))
	for _, p := range c["baton.modify.duration"] {
		_, failed := p.attrs.Value("error.type")
		require.False(t, failed)
	}
	require.EqualValues(t, 1, c.sum("baton.lock.acquisitions", op("lock")), "the Modify's own Lock")
	require.Zero(t, c.sum("baton.lock.waiters"))
	require.Zero(t, c.sum("baton.lock.leases.held"))

	modify := tm.ended("baton.modify")
	require.Len(t, modify, 1)
	require.Equal(t, []string{"writing back"}, eventNames(modify[0]))
	require.Equal(t, caller.SpanContext().SpanID(), modify[0].Parent().SpanID())
	require.Subset(t, modify[0].Attributes(), []attribute.KeyValue{mode("fast"), op("modify")})
	locked := tm.ended("baton.lock")
	require.Len(t, locked, 1)
	require.Equal(t, []string{"lease granted"}, eventNames(locked[0]))
}

func TestTheKeyAttributeIsTheLabelsAlone(t *testing.T) {
	prefix := func(key string) string {
		p, _, _ := strings.Cut(key, ":")
		return p
	}
	for _, tc := range []struct {
		name  string
		opts  []batonotel.Option
		label string // "": no attribute at all
	}{
		{"no label", nil, ""},
		{"prefix", []batonotel.Option{batonotel.WithKeyLabel(prefix)}, "orders"},
		{"empty label", []batonotel.Option{batonotel.WithKeyLabel(func(string) string { return "" })}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			tm := newTelemetry(t, tc.opts...)
			l := tm.open(t, srv)
			ls, err := l.Lock(context.Background(), "orders:42")
			require.NoError(t, err)
			_, err = l.TryLock(context.Background(), "orders:42")
			require.ErrorIs(t, err, lock.ErrNotAcquired)
			require.NoError(t, ls.Unlock(context.Background()))
			require.NoError(t, l.Close())

			c := tm.collect(t)
			require.NotEmpty(t, c)
			for name, points := range c {
				for _, p := range points {
					v, ok := p.attrs.Value("baton.lock.key")
					if tc.label == "" {
						require.False(t, ok, "%s has a key attribute", name)
						continue
					}
					require.True(t, ok, "%s has no key attribute", name)
					require.Equal(t, tc.label, v.AsString())
				}
			}
			spans := tm.spans.Ended()
			require.Len(t, spans, 2)
			for _, s := range spans {
				attrs := s.Attributes()
				for _, e := range s.Events() {
					attrs = append(attrs, e.Attributes...)
				}
				if tc.label == "" {
					for _, a := range attrs {
						require.NotEqual(t, attribute.Key("baton.lock.key"), a.Key, "span %s", s.Name())
					}
					continue
				}
				require.Contains(t, s.Attributes(), attribute.String("baton.lock.key", tc.label))
			}
		})
	}
}
