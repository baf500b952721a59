package lock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/subscriber"
)

// movesOnceAndCannotListen is a single server on which the lock's slot
// seems to move once (stale), after which no subscriber can be had on
// the node it moved to: as when a context ends, or Close begins, during
// the subscription there.
type movesOnceAndCannotListen struct {
	single
	moved         atomic.Bool
	subscriptions atomic.Int32
}

func (b *movesOnceAndCannotListen) stale(*subscriber.Subscriber, string) bool {
	return b.moved.CompareAndSwap(false, true)
}

func (b *movesOnceAndCannotListen) subscriber(context.Context, string) (*subscriber.Subscriber, error) {
	if b.subscriptions.Add(1) > 1 {
		return nil, errors.New("no subscriber on the node the slot moved to")
	}
	return b.sub, nil
}

// A fair waiter that cannot listen again after its lock's slot moved
// returns the error, and leaves the queue: it does not panic on the
// listener it no longer has.
func TestAFairWaiterThatCannotListenAgainReturnsTheError(t *testing.T) {
	srv := redistest.Start(t)
	node := func() single {
		c, err := conn.NewClient(srv.Addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		s, err := subscriber.New(context.Background(), srv.Addr, subscriber.WithoutKeyspaceEvents())
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return single{c, s}
	}
	o, err := buildSettings([]Option{WithFair()})
	require.NoError(t, err)
	holder := newLocker(node(), o, plainChannels)
	t.Cleanup(func() { _ = holder.Close() })
	held, err := holder.Lock(context.Background(), "k")
	require.NoError(t, err)

	waiter := newLocker(&movesOnceAndCannotListen{single: node()}, o, plainChannels)
	t.Cleanup(func() { _ = waiter.Close() })
	returned := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				returned <- errors.New("Lock panicked")
			}
		}()
		_, err := waiter.Lock(context.Background(), "k")
		returned <- err
	}()
	select {
	case err := <-returned:
		require.ErrorContains(t, err, "no subscriber on the node the slot moved to")
	case <-time.After(5 * time.Second):
		t.Fatal("Lock did not return")
	}
	redistest.Eventually(t, func() bool { return srv.Do(t, "ZCARD", "baton:{k}:queue").Int == 0 }, 5*time.Second, time.Millisecond,
		"the waiter that gave up is still queued")
	require.NoError(t, held.Unlock(context.Background()))
}
