package batonotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonlock/baton/observe"
)

// call is what an Observer keeps of a call between its CallBegan and its
// CallEnded: never the call's context, which the span's parent was taken
// from.
type call struct {
	span trace.Span
	// waiting is the attributes the call was counted with in
	// baton.lock.waiters, while it is counted there: from a Lock's or
	// TryLock's CallBegan to its LeaseGranted or its CallEnded, whichever
	// comes first. Nil for a Modify, which is no waiter.
	waiting *measure
}

// spanNames are the spans' names by the call's operation.
var spanNames = map[observe.Op]string{
	observe.Lock:    "baton.lock",
	observe.TryLock: "baton.trylock",
	observe.Modify:  "baton.modify",
}

// internalSpan is the kind of every span, as a start option made once.
var internalSpan = trace.WithSpanKind(trace.SpanKindInternal)

// callBegan starts the call's span, as a child of the caller's, and
// counts a Lock or TryLock as a waiter.
func (o *Observer) callBegan(e observe.Event) {
	if e.Call == 0 {
		return // not a call's event: nothing to match its end with
	}
	name, ok := spanNames[e.Op]
	if !ok {
		name = "baton." + e.Op.String()
	}
	parent := e.Context
	if parent == nil {
		parent = context.Background()
	}
	a := attrs{mode: e.Mode, op: e.Op, key: o.keyLabel(e.Key)}
	var buf [6]attribute.KeyValue
	_, span := o.tracer.Start(parent, name, trace.WithTimestamp(e.Time),
		internalSpan, trace.WithAttributes(a.list(buf[:0])...))
	c := call{span: span}
	if e.Op == observe.Lock || e.Op == observe.TryLock {
		c.waiting = o.measure(a)
		o.in.waiters.Add(context.Background(), 1, c.waiting.add...)
	}
	o.mu.Lock()
	o.calls[e.Call] = c
	o.mu.Unlock()
}

// step adds a step of the call as an event of its span. A step of a call
// begun before the Observer was attached has no span to go to.
func (o *Observer) step(e observe.Event, name string, kvs ...attribute.KeyValue) {
	o.mu.Lock()
	c, ok := o.calls[e.Call]
	o.mu.Unlock()
	if ok {
		c.span.AddEvent(name, trace.WithTimestamp(e.Time), trace.WithAttributes(kvs...))
	}
}

// leaseGranted counts the lease as held, and its call as no longer
// waiting.
func (o *Observer) leaseGranted(e observe.Event) {
	o.in.leasesHeld.Add(context.Background(), 1, o.measure(attrs{mode: e.Mode, key: o.keyLabel(e.Key)}).add...)
	o.mu.Lock()
	c, ok := o.calls[e.Call]
	waiting := c.waiting
	if waiting != nil {
		c.waiting = nil
		o.calls[e.Call] = c
	}
	o.mu.Unlock()
	if waiting != nil {
		o.in.waiters.Add(context.Background(), -1, waiting.add...)
	}
	if ok {
		c.span.AddEvent("lease granted", trace.WithTimestamp(e.Time), trace.WithAttributes(
			attrHow.String(howValue(e.How)), attrToken.Int64(int64(e.Token))))
	}
}

// callEnded records the call's duration and outcome, and ends its span.
// A call begun before the Observer was attached is measured, with no
// span.
func (o *Observer) callEnded(e observe.Event) {
	o.mu.Lock()
	c, ok := o.calls[e.Call]
	delete(o.calls, e.Call)
	o.mu.Unlock()
	ctx := context.Background()
	if ok {
		if c.waiting != nil {
			o.in.waiters.Add(ctx, -1, c.waiting.add...)
		}
		// Measurements in the span's context, for exemplars that link
		// a slow call to its trace.
		ctx = trace.ContextWithSpan(ctx, c.span)
	}
	a := attrs{mode: e.Mode, op: e.Op, key: o.keyLabel(e.Key)}
	if e.Err != nil {
		a.errorType = errorType(e.Err)
	} else {
		a.how = e.How
	}
	switch e.Op {
	case observe.Lock, observe.TryLock:
		m := o.measure(a)
		o.in.waitDuration.Record(ctx, e.Duration.Seconds(), m.record...)
		if e.Err == nil {
			o.in.acquisitions.Add(ctx, 1, m.add...)
		}
	case observe.Modify:
		o.in.modifyDuration.Record(ctx, e.Duration.Seconds(), o.measure(a).record...)
	}
	if !ok {
		return
	}
	if e.Err != nil {
		c.span.RecordError(e.Err, trace.WithTimestamp(e.Time))
		c.span.SetStatus(codes.Error, a.errorType)
		c.span.SetAttributes(attrErrorType.String(a.errorType))
	} else if e.How != 0 {
		c.span.SetAttributes(attrHow.String(howValue(e.How)))
	}
	c.span.End(trace.WithTimestamp(e.Time))
}
