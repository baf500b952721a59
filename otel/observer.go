package batonotel

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonlock/baton/observe"
)

// ScopeName is the instrumentation scope of the Observer's meter and
// tracer: what a view or a sampler selects this package's instruments
// and spans by.
const ScopeName = "github.com/batonlock/baton/otel"

// Observer turns a Locker's events into OpenTelemetry metrics and spans.
// Give it to lock.WithObserver; one Observer may serve any number of
// Lockers at once. Make it with New.
type Observer struct {
	in     *instruments
	tracer trace.Tracer
	label  func(key string) string // from WithKeyLabel; nil: no key attribute
	attrs  attrCache

	mu sync.Mutex
	// calls are the Lock, TryLock and Modify calls between their
	// CallBegan and their CallEnded, by Event.Call; guarded by mu.
	calls map[uint64]call
}

// New returns an Observer whose meter and tracer come from the providers
// opts name, or the global ones. It fails only if the meter provider
// refuses to make an instrument.
func New(opts ...Option) (*Observer, error) {
	s := buildSettings(opts)
	in, err := newInstruments(s.meterProvider.Meter(ScopeName))
	if err != nil {
		return nil, err
	}
	return &Observer{
		in:     in,
		tracer: s.tracerProvider.Tracer(ScopeName),
		label:  s.keyLabel,
		calls:  make(map[uint64]call),
	}, nil
}

// Observe records e: it implements observe.Observer. It is safe for
// concurrent use, as an observer of several Lockers must be.
func (o *Observer) Observe(e observe.Event) {
	ctx := context.Background()
	switch e.Kind {
	case observe.CallBegan:
		o.callBegan(e)
	case observe.Asked:
		o.step(e, "asked")
	case observe.HandedOver:
		o.in.handoffDuration.Record(ctx, e.Duration.Seconds(), o.measure(attrs{mode: e.Mode, key: o.keyLabel(e.Key)}).record...)
		o.step(e, "handed over", attrHandoffTime.Float64(e.Duration.Seconds()))
	case observe.Confirming:
		o.step(e, "confirming")
	case observe.WritingBack:
		o.step(e, "writing back")
	case observe.LeaseGranted:
		o.leaseGranted(e)
	case observe.CallEnded:
		o.callEnded(e)
	case observe.LeaseEnded:
		o.leaseEnded(e)
	case observe.Uncertain:
		o.in.uncertain.Add(ctx, 1, o.measure(attrs{mode: e.Mode, op: e.Op, key: o.keyLabel(e.Key)}).add...)
	case observe.ExtendFailed:
		o.in.extendFailures.Add(ctx, 1, o.failure(e).add...)
	case observe.ReleaseFailed:
		o.in.releaseFailures.Add(ctx, 1, o.failure(e).add...)
	case observe.Reconnected:
		o.in.reconnects.Add(ctx, 1, o.measure(attrs{mode: e.Mode}).add...)
	case observe.HealthCheckFailed:
		o.in.healthCheckFailures.Add(ctx, 1, o.failure(e).add...)
	case observe.Dropped:
		o.in.dropped.Add(ctx, int64(e.Count), o.measure(attrs{mode: e.Mode}).add...)
	case observe.WaitersSkipped:
		o.in.skippedWaiters.Add(ctx, int64(e.Count), o.measure(attrs{mode: e.Mode, key: o.keyLabel(e.Key)}).add...)
	}
}

// leaseEnded records a lease's end: how long it was held, and why it
// ended.
func (o *Observer) leaseEnded(e observe.Event) {
	ctx := context.Background()
	label := o.keyLabel(e.Key)
	o.in.leasesHeld.Add(ctx, -1, o.measure(attrs{mode: e.Mode, key: label}).add...)
	ended := o.measure(attrs{mode: e.Mode, reason: e.Reason, key: label})
	o.in.holdDuration.Record(ctx, e.Duration.Seconds(), ended.record...)
	o.in.leasesEnded.Add(ctx, 1, ended.add...)
	switch e.Reason {
	case observe.Lost, observe.Expired, observe.ExtensionFailed,
		observe.Removed, observe.Overwritten, observe.Flushed, observe.Vanished:
		o.in.leasesLost.Add(ctx, 1, ended.add...)
	}
}

// failure is the attributes of a failure that no caller sees: the
// event's mode and operation where it has them, and its error's type.
func (o *Observer) failure(e observe.Event) *measure {
	a := attrs{mode: e.Mode, op: e.Op, key: o.keyLabel(e.Key)}
	if e.Err != nil {
		a.errorType = errorType(e.Err)
	}
	return o.measure(a)
}

// measure is the measurement options carrying a.
func (o *Observer) measure(a attrs) *measure { return o.attrs.measure(a) }

// keyLabel is key's label, or "" for none.
func (o *Observer) keyLabel(key string) string {
	if o.label == nil || key == "" {
		return ""
	}
	return o.label(key)
}
