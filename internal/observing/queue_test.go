package observing_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/observing"
	"github.com/batonlock/baton/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(hangreport.Watch(m)) }

// gate records events, blocking in Observe while it is shut.
type gate struct {
	open chan struct{}
	rec  observing.Recorder
}

func (g *gate) Observe(e observe.Event) {
	<-g.open
	g.rec.Observe(e)
}

func (g *gate) seen() []observe.Event { return g.rec.All() }

func TestNoObserversMakeNoQueue(t *testing.T) {
	q := observing.Start(nil)
	require.Nil(t, q)
	q.Observe(observe.Event{Kind: observe.Asked}) // a nil queue observes nothing
	q.Close(time.Second, nil)
}

func TestEventsArriveInOrderStamped(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	q := observing.Start([]observe.Observer{g})
	for i := range 100 {
		q.Observe(observe.Event{Kind: observe.Asked, Call: uint64(i)})
	}
	q.Close(time.Minute, nil)
	seen := g.seen()
	require.Len(t, seen, 100)
	for i, e := range seen {
		require.Equal(t, uint64(i), e.Call)
		require.False(t, e.Time.IsZero())
	}
	q.Observe(observe.Event{Kind: observe.Asked}) // after Close: dropped, no panic
	q.Close(time.Minute, nil)
}

func TestAFullQueueDropsAndCountsInPlace(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	q := observing.Start([]observe.Observer{g})
	q.Observe(observe.Event{Kind: observe.Asked, Call: 1})
	// The deliverer has taken the first event, and waits in Observe.
	require.Eventually(t, func() bool { return observing.Queued(q) == 0 }, 10*time.Second, time.Millisecond)
	for i := range observe.QueueSize + 7 {
		q.Observe(observe.Event{Kind: observe.Asked, Call: uint64(2 + i)})
	}
	close(g.open)
	require.Eventually(t, func() bool { return len(g.seen()) == 1+observe.QueueSize }, 10*time.Second, time.Millisecond)
	q.Observe(observe.Event{Kind: observe.Confirming})
	q.Close(time.Minute, nil)
	seen := g.seen()
	require.Len(t, seen, 1+observe.QueueSize+2)
	require.Equal(t, uint64(1+observe.QueueSize), seen[observe.QueueSize].Call, "the events queued before the drops come first")
	require.Equal(t, observe.Dropped, seen[len(seen)-2].Kind)
	require.Equal(t, 7, seen[len(seen)-2].Count)
	require.Equal(t, observe.Confirming, seen[len(seen)-1].Kind)
}

func TestDropsWithNoEventAfterThemAreCountedAtClose(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	q := observing.Start([]observe.Observer{g})
	q.Observe(observe.Event{Kind: observe.Asked})
	require.Eventually(t, func() bool { return observing.Queued(q) == 0 }, 10*time.Second, time.Millisecond)
	for range observe.QueueSize + 3 {
		q.Observe(observe.Event{Kind: observe.Asked})
	}
	close(g.open)
	q.Close(time.Minute, nil)
	seen := g.seen()
	require.Len(t, seen, 1+observe.QueueSize+1)
	require.Equal(t, observe.Dropped, seen[len(seen)-1].Kind)
	require.Equal(t, 3, seen[len(seen)-1].Count)
}

type panicky struct{}

func (panicky) Observe(observe.Event) { panic("observer") }

func TestAPanicLosesOneEventForOneObserver(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	q := observing.Start([]observe.Observer{panicky{}, g})
	for range 10 {
		q.Observe(observe.Event{Kind: observe.Asked})
	}
	q.Close(time.Minute, nil)
	require.Len(t, g.seen(), 10)
}

func TestCloseGivesUpOnTheQueueAfterItsBound(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	q := observing.Start([]observe.Observer{g})
	for range 100 {
		q.Observe(observe.Event{Kind: observe.Asked})
	}
	// The observer returns only after the bound has passed: Close waits
	// for that call, and drops the rest.
	time.AfterFunc(200*time.Millisecond, func() { close(g.open) })
	q.Close(20*time.Millisecond, nil)
	require.Len(t, g.seen(), 1)
}

func TestAFullQueueKeepsTheEndOfEveryStartItQueued(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	q := observing.Start([]observe.Observer{g})
	q.Observe(observe.Event{Kind: observe.Asked}) // taken by the deliverer, which waits in Observe
	require.Eventually(t, func() bool { return observing.Queued(q) == 0 }, 10*time.Second, time.Millisecond)
	q.Observe(observe.Event{Kind: observe.CallBegan, Call: 1})
	q.Observe(observe.Event{Kind: observe.LeaseGranted, Call: 1})
	// Fill what is left: the ends take no room.
	for range observe.QueueSize - 2 {
		q.Observe(observe.Event{Kind: observe.Asked})
	}
	// Full: dropped, and its end with it.
	q.Observe(observe.Event{Kind: observe.CallBegan, Call: 2})
	q.Observe(observe.Event{Kind: observe.Asked})
	q.Observe(observe.Event{Kind: observe.CallEnded, Call: 2})
	// Queued, full as the queue is.
	q.Observe(observe.Event{Kind: observe.LeaseEnded, Call: 1})
	q.Observe(observe.Event{Kind: observe.CallEnded, Call: 1})
	close(g.open)
	q.Close(time.Minute, nil)

	var calls []observe.Event
	dropped := 0
	for _, e := range g.seen() {
		switch e.Kind {
		case observe.Asked:
		case observe.Dropped:
			dropped += e.Count
		default:
			calls = append(calls, e)
		}
	}
	kinds := make([]observe.Kind, len(calls))
	for i, e := range calls {
		kinds[i] = e.Kind
		require.Equal(t, uint64(1), e.Call, "only call 1 was queued")
	}
	require.Equal(t, []observe.Kind{observe.CallBegan, observe.LeaseGranted, observe.LeaseEnded, observe.CallEnded}, kinds)
	require.Equal(t, 3, dropped, "call 2's start and end, and the Asked between them")
}

func TestTheEndOfAStartThatWasDroppedIsDroppedToo(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	q := observing.Start([]observe.Observer{g})
	q.Observe(observe.Event{Kind: observe.Asked}) // taken by the deliverer, which waits in Observe
	require.Eventually(t, func() bool { return observing.Queued(q) == 0 }, 10*time.Second, time.Millisecond)
	for range observe.QueueSize {
		q.Observe(observe.Event{Kind: observe.Asked})
	}
	q.Observe(observe.Event{Kind: observe.LeaseGranted, Call: 1}) // the queue is full
	close(g.open)
	require.Eventually(t, func() bool { return len(g.seen()) == 1+observe.QueueSize }, 10*time.Second, time.Millisecond)
	// Room again, but the lease's start was never told: its end must not be.
	q.Observe(observe.Event{Kind: observe.LeaseEnded, Call: 1})
	q.Observe(observe.Event{Kind: observe.Asked})
	q.Close(time.Minute, nil)

	dropped := 0
	for _, e := range g.seen() {
		require.NotEqual(t, observe.LeaseEnded, e.Kind, "an end whose start was dropped")
		if e.Kind == observe.Dropped {
			dropped += e.Count
		}
	}
	require.Equal(t, 2, dropped, "the start and its end")
}

func TestStartsStillOpenTakeNoRoomFromOtherEvents(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	q := observing.Start([]observe.Observer{g})
	// Leases held for long, as a service with a lock per customer holds
	// them: their ends come later, or never before Close.
	const held = observe.QueueSize - 1
	for i := range held {
		q.Observe(observe.Event{Kind: observe.LeaseGranted, Call: uint64(1 + i)})
	}
	require.Eventually(t, func() bool { return len(g.seen()) == held }, 10*time.Second, time.Millisecond,
		"starts were dropped from a queue with room for them: the ends not yet come took it")
	// The queue is empty: a call now is told, whatever is held.
	q.Observe(observe.Event{Kind: observe.CallBegan, Call: held + 1})
	q.Observe(observe.Event{Kind: observe.CallEnded, Call: held + 1})
	require.Eventually(t, func() bool { return len(g.seen()) >= held+2 }, 10*time.Second, time.Millisecond,
		"the call was dropped from an empty queue")
	q.Close(time.Minute, nil)
	for _, e := range g.seen() {
		require.NotEqual(t, observe.Dropped, e.Kind)
	}
}

func TestCloseEndsTheStartsStillOpen(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	q := observing.Start([]observe.Observer{g})
	began := time.Now().Add(-time.Second)
	q.Observe(observe.Event{Kind: observe.CallBegan, Time: began, Call: 1, Op: observe.Lock, Key: "k", Mode: observe.Fair})
	q.Observe(observe.Event{Kind: observe.LeaseGranted, Call: 1, Key: "k", Mode: observe.Fair, Token: 7})
	q.Observe(observe.Event{Kind: observe.CallEnded, Call: 1, Op: observe.Lock, Key: "k", Mode: observe.Fair})
	q.Observe(observe.Event{Kind: observe.CallBegan, Time: began, Call: 2, Op: observe.Modify, Key: "t", Mode: observe.Fair})
	closed := errors.New("closed")
	q.Close(time.Minute, closed)
	q.Observe(observe.Event{Kind: observe.CallEnded, Call: 2, Op: observe.Modify, Key: "t"}) // too late: dropped

	seen := g.seen()
	require.Len(t, seen, 6)
	lease, call := seen[4], seen[5] // the lease, granted later, first
	require.Equal(t, observe.LeaseEnded, lease.Kind)
	require.Equal(t, uint64(1), lease.Call)
	require.Equal(t, observe.Closed, lease.Reason)
	require.Equal(t, uint64(7), lease.Token)
	require.Equal(t, "k", lease.Key)
	require.Equal(t, observe.Fair, lease.Mode)
	require.Equal(t, observe.CallEnded, call.Kind)
	require.Equal(t, uint64(2), call.Call)
	require.Equal(t, observe.Modify, call.Op)
	require.Equal(t, "t", call.Key)
	require.ErrorIs(t, call.Err, closed)
	require.GreaterOrEqual(t, call.Duration, time.Second)
}
