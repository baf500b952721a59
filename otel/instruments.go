package batonotel

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// durationBuckets are the duration histograms' bucket boundaries, in
// seconds: from 10µs, where hand-offs on one machine land, to five
// minutes, for long holds. A view (see the package doc) replaces them.
var durationBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60, 300,
}

// instruments are an Observer's metrics, made once by New. The package
// doc and docs/OBSERVABILITY.md list them with their attributes.
type instruments struct {
	waitDuration    metric.Float64Histogram
	holdDuration    metric.Float64Histogram
	modifyDuration  metric.Float64Histogram
	handoffDuration metric.Float64Histogram

	acquisitions        metric.Int64Counter
	leasesEnded         metric.Int64Counter
	leasesLost          metric.Int64Counter
	uncertain           metric.Int64Counter
	extendFailures      metric.Int64Counter
	releaseFailures     metric.Int64Counter
	skippedWaiters      metric.Int64Counter
	reconnects          metric.Int64Counter
	healthCheckFailures metric.Int64Counter
	dropped             metric.Int64Counter

	leasesHeld metric.Int64UpDownCounter
	waiters    metric.Int64UpDownCounter
}

// newInstruments makes the instruments with m, and returns every error
// the meter gave.
func newInstruments(m metric.Meter) (*instruments, error) {
	mk := maker{m: m}
	in := &instruments{
		waitDuration: mk.histogram("baton.lock.wait.duration",
			"How long a Lock or TryLock call took, from its call to its return, granted or not."),
		holdDuration: mk.histogram("baton.lock.hold.duration",
			"How long a lease was held, from its grant to its end, by the reason it ended."),
		modifyDuration: mk.histogram("baton.modify.duration",
			"How long a Manager's Modify call took, from its call to its return."),
		handoffDuration: mk.histogram("baton.lock.handoff.duration",
			"How long a hand-off's message waited, from its arrival to the waiter reading it."),

		acquisitions: mk.counter("baton.lock.acquisitions", "{acquisition}",
			"Lock and TryLock calls that returned a lease, by how it was obtained."),
		leasesEnded: mk.counter("baton.lock.leases.ended", "{lease}",
			"Leases that ended, by the reason they ended."),
		leasesLost: mk.counter("baton.lock.leases.lost", "{lease}",
			"Leases that ended while their holder held them: lost (on the server or found gone), expired, or run out with failing extensions."),
		uncertain: mk.counter("baton.lock.uncertain", "{operation}",
			"Writes whose outcome is unknown: they may or may not have run on the server."),
		extendFailures: mk.counter("baton.lock.extend.failures", "{extension}",
			"Extensions of the watchdog (lock.WithAutoExtend) that failed."),
		releaseFailures: mk.counter("baton.lock.release.failures", "{release}",
			"Releases in the background that failed or were abandoned; the lock's TTL frees the lock."),
		skippedWaiters: mk.counter("baton.lock.release.skipped_waiters", "{waiter}",
			"Waiters a release passed over because their process was gone or, in fair mode, their place in the queue had run out."),
		reconnects: mk.counter("baton.subscriber.reconnects", "{reconnect}",
			"Subscribe connections that were lost and dialled again."),
		healthCheckFailures: mk.counter("baton.subscriber.health_check.failures", "{check}",
			"Health checks of a subscribe connection that found no answer."),
		dropped: mk.counter("baton.observe.dropped", "{event}",
			"Events a Locker dropped because its observers' queue was full."),

		leasesHeld: mk.upDownCounter("baton.lock.leases.held", "{lease}",
			"Leases granted and not yet ended."),
		waiters: mk.upDownCounter("baton.lock.waiters", "{call}",
			"Lock and TryLock calls in progress that have not been granted a lease."),
	}
	if err := errors.Join(mk.errs...); err != nil {
		return nil, fmt.Errorf("batonotel: making instruments: %w", err)
	}
	return in, nil
}

// maker makes instruments and keeps their errors.
type maker struct {
	m    metric.Meter
	errs []error
}

func (mk *maker) histogram(name, desc string) metric.Float64Histogram {
	h, err := mk.m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	mk.errs = append(mk.errs, err)
	return h
}

func (mk *maker) counter(name, unit, desc string) metric.Int64Counter {
	c, err := mk.m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.errs = append(mk.errs, err)
	return c
}

func (mk *maker) upDownCounter(name, unit, desc string) metric.Int64UpDownCounter {
	c, err := mk.m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.errs = append(mk.errs, err)
	return c
}
