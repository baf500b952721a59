package batonotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures New. The With functions of this package make them;
// each documents its default. A zero Option changes nothing.
type Option struct {
	apply func(*settings)
}

// settings are an Observer's, as its options leave them. The defaults are
// documented on the options that set them.
type settings struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	keyLabel       func(key string) string
}

func option(apply func(*settings)) Option { return Option{apply} }

func buildSettings(opts []Option) settings {
	var s settings
	for _, opt := range opts {
		if opt.apply != nil {
			opt.apply(&s)
		}
	}
	if s.meterProvider == nil {
		s.meterProvider = otel.GetMeterProvider()
	}
	if s.tracerProvider == nil {
		s.tracerProvider = otel.GetTracerProvider()
	}
	return s
}

// WithMeterProvider has the Observer make its instruments with mp's
// meter of the scope ScopeName. Default: otel.GetMeterProvider(), the
// global provider as it is when New is called (a global provider set
// later still receives the measurements: the global one delegates to
// it). A nil mp is ignored.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return option(func(s *settings) {
		if mp != nil {
			s.meterProvider = mp
		}
	})
}

// WithTracerProvider has the Observer start its spans with tp's tracer
// of the scope ScopeName. Default: otel.GetTracerProvider(), the global
// provider as it is when New is called (delegating, as the meter
// provider does, to one set later). A nil tp is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return option(func(s *settings) {
		if tp != nil {
			s.tracerProvider = tp
		}
	})
}

// WithKeyLabel has the Observer put label(key) on the metrics and spans
// of every event that names a lock's key (or a Modify's token), as the
// attribute baton.lock.key; an empty label puts none. label must be safe
// for concurrent use, cheap, and give the same label for the same key
// every time: a lease's +1 and its -1 on baton.lock.leases.held must
// land on the same series. Make it map keys onto a few labels (a
// prefix, a tenant class), not one label per key: every distinct label
// is a series of its own on every metric that carries it. Default: no
// baton.lock.key attribute at all, since keys are as many as the things
// they lock. A nil label is ignored.
func WithKeyLabel(label func(key string) string) Option {
	return option(func(s *settings) {
		if label != nil {
			s.keyLabel = label
		}
	})
}
