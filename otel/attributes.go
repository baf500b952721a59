package batonotel

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/batonlock/baton/observe"
)

// The attributes this package sets. Their values are the short words of
// the functions below, never an error's text or, unless WithKeyLabel says
// how, a key.
const (
	attrMode        = attribute.Key("baton.lock.mode")
	attrOp          = attribute.Key("baton.lock.op")
	attrHow         = attribute.Key("baton.lock.how")
	attrEndReason   = attribute.Key("baton.lock.lease.end_reason")
	attrErrorType   = attribute.Key("error.type")
	attrKey         = attribute.Key("baton.lock.key")
	attrToken       = attribute.Key("baton.lock.token")
	attrHandoffTime = attribute.Key("baton.lock.handoff.duration")
)

// The values of baton.lock.mode and baton.lock.op are observe's names of
// modes and operations (Mode.String, Op.String), single words all; how a
// lease was obtained and why it ended are spelt apart below, since
// observe's names of those have spaces.

// howValue is how's value of baton.lock.how.
func howValue(h observe.How) string {
	switch h {
	case observe.Free:
		return "free"
	case observe.AfterWait:
		return "after_wait"
	case observe.Handed:
		return "handed_over"
	}
	return "unknown"
}

// reasonValue is a reason's value of baton.lock.lease.end_reason.
func reasonValue(r observe.Reason) string {
	switch r {
	case observe.Released:
		return "released"
	case observe.Expired:
		return "expired"
	case observe.Lost:
		return "lost"
	case observe.ExtensionFailed:
		return "extension_failed"
	case observe.Closed:
		return "closed"
	case observe.Removed:
		return "removed"
	case observe.Overwritten:
		return "overwritten"
	case observe.Flushed:
		return "flushed"
	case observe.Vanished:
		return "vanished"
	}
	return "unknown"
}

// attrs says which attributes a measurement carries: each field that is
// not zero is one.
type attrs struct {
	mode      observe.Mode
	op        observe.Op
	how       observe.How
	reason    observe.Reason
	errorType string
	key       string // the key's label, from WithKeyLabel
}

// list appends the attributes to kvs.
func (a attrs) list(kvs []attribute.KeyValue) []attribute.KeyValue {
	if a.mode != 0 {
		kvs = append(kvs, attrMode.String(a.mode.String()))
	}
	if a.op != 0 {
		kvs = append(kvs, attrOp.String(a.op.String()))
	}
	if a.how != 0 {
		kvs = append(kvs, attrHow.String(howValue(a.how)))
	}
	if a.reason != 0 {
		kvs = append(kvs, attrEndReason.String(reasonValue(a.reason)))
	}
	if a.errorType != "" {
		kvs = append(kvs, attrErrorType.String(a.errorType))
	}
	if a.key != "" {
		kvs = append(kvs, attrKey.String(a.key))
	}
	return kvs
}

// measure is the options of a measurement with one set of attributes,
// as the instruments' Add and Record take them: kept in slices made
// once, which the instruments only read, so that passing them costs no
// allocation.
type measure struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func newMeasure(a attrs) *measure {
	var buf [6]attribute.KeyValue
	opt := metric.WithAttributeSet(attribute.NewSet(a.list(buf[:0])...))
	return &measure{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
}

// attrCache keeps the measure of each combination of attributes without
// a key label: they are few (modes, operations, ways and reasons, error
// types), and building a set for every measurement would cost
// allocations on every event. Combinations with a key label are built
// each time, so that the cache stays as small as the vocabulary whatever
// the label function returns.
type attrCache struct {
	mu       sync.RWMutex
	measures map[attrs]*measure // guarded by mu
}

// measure is the measure that carries a.
func (c *attrCache) measure(a attrs) *measure {
	if a.key != "" {
		return newMeasure(a)
	}
	c.mu.RLock()
	m, ok := c.measures[a]
	c.mu.RUnlock()
	if ok {
		return m
	}
	m = newMeasure(a)
	c.mu.Lock()
	if c.measures == nil {
		c.measures = make(map[attrs]*measure)
	}
	c.measures[a] = m
	c.mu.Unlock()
	return m
}
