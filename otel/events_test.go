package batonotel_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	"github.com/batonlock/baton/observe"
	batonotel "github.com/batonlock/baton/otel"
)

// These tests hand the Observer events as a Locker would, for the cases
// a real server does not produce on cue.

// failedCall tells obs of a Lock call that failed with err.
func failedCall(obs observe.Observer, err error) {
	call, began := observe.NewCall(), time.Now()
	obs.Observe(observe.Event{Kind: observe.CallBegan, Time: began, Call: call, Op: observe.Lock, Key: "k",
		Mode: observe.Fast, Context: context.Background()})
	obs.Observe(observe.Event{Kind: observe.CallEnded, Time: began.Add(time.Millisecond), Call: call, Op: observe.Lock,
		Key: "k", Mode: observe.Fast, Duration: time.Millisecond, Err: err})
}

func TestAFailedCallsErrorTypeIsItsKindNotItsText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("lock %q: %w", "k", lock.ErrNotAcquired), "not_acquired"},
		{fmt.Errorf("unlock %q: %w", "k", lock.ErrNotHeld), "not_held"},
		{lock.ErrClosed, "closed"},
		{manager.ErrClosed, "closed"},
		{fmt.Errorf("%w: empty key", lock.ErrInvalid), "invalid"},
		{manager.ErrInvalid, "invalid"},
		{manager.ErrUndecodable, "undecodable"},
		{fmt.Errorf("lock %q: %w", "k", &conn.UncertainError{Cause: context.DeadlineExceeded}), "uncertain"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("lock %q: %w", "k", context.DeadlineExceeded), "deadline_exceeded"},
		{errors.New("lock: not acquired"), "other"}, // the text of a sentinel is not the sentinel
	} {
		t.Run(tc.want, func(t *testing.T) {
			tm := newTelemetry(t)
			failedCall(tm.obs, tc.err)
			c := tm.collect(t)
			require.EqualValues(t, 1, c.count("baton.lock.wait.duration", errType(tc.want)))
			require.Zero(t, c.sum("baton.lock.acquisitions"))
			spans := tm.ended("baton.lock")
			require.Len(t, spans, 1)
			require.Equal(t, codes.Error, spans[0].Status().Code)
			require.Equal(t, tc.want, spans[0].Status().Description)
		})
	}
}

func TestWhatNoCallerSeesIsCounted(t *testing.T) {
	uncertain := &conn.UncertainError{Cause: errors.New("connection reset")}
	for _, tc := range []struct {
		name  string
		event observe.Event
		want  string // the metric
		attrs []attribute.KeyValue
		value int64
	}{
		{"uncertain", observe.Event{Kind: observe.Uncertain, Op: observe.Unlock, Key: "k", Mode: observe.Fast, Err: uncertain},
			"baton.lock.uncertain", []attribute.KeyValue{mode("fast"), op("unlock")}, 1},
		{"extend failed", observe.Event{Kind: observe.ExtendFailed, Op: observe.Extend, Key: "k", Mode: observe.Fair, Token: 3, Err: context.DeadlineExceeded},
			"baton.lock.extend.failures", []attribute.KeyValue{mode("fair"), op("extend"), errType("deadline_exceeded")}, 1},
		{"release failed", observe.Event{Kind: observe.ReleaseFailed, Op: observe.Release, Key: "k", Mode: observe.Fast, Err: uncertain},
			"baton.lock.release.failures", []attribute.KeyValue{mode("fast"), op("release"), errType("uncertain")}, 1},
		{"reconnected", observe.Event{Kind: observe.Reconnected, Duration: time.Millisecond},
			"baton.subscriber.reconnects", nil, 1},
		{"health check failed", observe.Event{Kind: observe.HealthCheckFailed, Err: context.DeadlineExceeded},
			"baton.subscriber.health_check.failures", []attribute.KeyValue{errType("deadline_exceeded")}, 1},
		{"dropped", observe.Event{Kind: observe.Dropped, Count: 7},
			"baton.observe.dropped", nil, 7},
		{"waiters skipped", observe.Event{Kind: observe.WaitersSkipped, Key: "k", Mode: observe.Fair, Count: 3},
			"baton.lock.release.skipped_waiters", []attribute.KeyValue{mode("fair")}, 3},
		{"lost", observe.Event{Kind: observe.LeaseEnded, Key: "k", Mode: observe.Fast, Reason: observe.Lost},
			"baton.lock.leases.lost", []attribute.KeyValue{reason("lost")}, 1},
		{"extension failed", observe.Event{Kind: observe.LeaseEnded, Key: "k", Mode: observe.Fair, Reason: observe.ExtensionFailed},
			"baton.lock.leases.lost", []attribute.KeyValue{mode("fair"), reason("extension_failed")}, 1},
		{"removed", observe.Event{Kind: observe.LeaseEnded, Key: "k", Mode: observe.Fast, Reason: observe.Removed},
			"baton.lock.leases.lost", []attribute.KeyValue{reason("removed")}, 1},
		{"overwritten", observe.Event{Kind: observe.LeaseEnded, Key: "k", Mode: observe.Fair, Reason: observe.Overwritten},
			"baton.lock.leases.lost", []attribute.KeyValue{reason("overwritten")}, 1},
		{"flushed", observe.Event{Kind: observe.LeaseEnded, Key: "k", Mode: observe.Fast, Reason: observe.Flushed},
			"baton.lock.leases.lost", []attribute.KeyValue{reason("flushed")}, 1},
		{"vanished", observe.Event{Kind: observe.LeaseEnded, Key: "k", Mode: observe.Fast, Reason: observe.Vanished},
			"baton.lock.leases.lost", []attribute.KeyValue{reason("vanished")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTelemetry(t)
			tc.event.Time = time.Now()
			tm.obs.Observe(tc.event)
			c := tm.collect(t)
			require.Len(t, c[tc.want], 1)
			require.Equal(t, tc.value, c.sum(tc.want, tc.attrs...))
			require.Empty(t, tm.spans.Ended())
		})
	}
}

func TestALostConnectionAloneRecordsNothing(t *testing.T) {
	tm := newTelemetry(t)
	tm.obs.Observe(observe.Event{Kind: observe.ConnectionLost, Time: time.Now(), Err: errors.New("EOF")})
	require.Empty(t, tm.collect(t))
}

func TestACallBegunBeforeTheObserverIsMeasuredWithoutASpan(t *testing.T) {
	tm := newTelemetry(t)
	call, now := observe.NewCall(), time.Now()
	for _, e := range []observe.Event{
		{Kind: observe.Asked, Call: call, Key: "k", Mode: observe.Fair},
		{Kind: observe.HandedOver, Call: call, Key: "k", Mode: observe.Fair, Duration: time.Microsecond},
		{Kind: observe.LeaseGranted, Call: call, Key: "k", Mode: observe.Fair, How: observe.Handed, Token: 9},
		{Kind: observe.CallEnded, Call: call, Op: observe.Lock, Key: "k", Mode: observe.Fair, How: observe.Handed, Token: 9, Duration: time.Second},
	} {
		e.Time = now
		tm.obs.Observe(e)
	}
	c := tm.collect(t)
	require.EqualValues(t, 1, c.count("baton.lock.wait.duration", mode("fair"), how("handed_over")))
	require.EqualValues(t, 1, c.sum("baton.lock.acquisitions", how("handed_over")))
	require.EqualValues(t, 1, c.count("baton.lock.handoff.duration"))
	require.EqualValues(t, 1, c.sum("baton.lock.leases.held"))
	require.Empty(t, c["baton.lock.waiters"], "a call never counted is not taken off")
	require.Empty(t, tm.spans.Started())
}

// refusingMeter fails to make counters.
type refusingMeter struct{ noop.Meter }

func (refusingMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return nil, errors.New("no counters here")
}

type refusingProvider struct{ noop.MeterProvider }

func (refusingProvider) Meter(string, ...metric.MeterOption) metric.Meter { return refusingMeter{} }

func TestNewFailsWhereTheMeterRefusesAnInstrument(t *testing.T) {
	obs, err := batonotel.New(batonotel.WithMeterProvider(refusingProvider{}))
	require.ErrorContains(t, err, "no counters here")
	require.Nil(t, obs)
}

func TestDefaultsAreTheGlobalProviders(t *testing.T) {
	obs, err := batonotel.New()
	require.NoError(t, err)
	failedCall(obs, lock.ErrNotAcquired) // to the global no-op providers: nothing to see, nothing breaks
}
