package manager_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/observing"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	"github.com/batonlock/baton/observe"
)

func TestAModifyIsObservedAroundItsLock(t *testing.T) {
	for _, mode := range []struct {
		name     string
		opts     []lock.Option
		observed observe.Mode
	}{{"fast", nil, observe.Fast}, {"fair", []lock.Option{lock.WithFair()}, observe.Fair}} {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rec := &observing.Recorder{}
			l, err := lock.Open(context.Background(), srv.Addr, append(mode.opts, lock.WithObserver(rec))...)
			require.NoError(t, err)
			m := manager.New[counter](l)
			require.NoError(t, m.Modify(context.Background(), "session-1", increment))
			refused := errors.New("refused")
			require.ErrorIs(t, m.Modify(context.Background(), "session-1", func(*counter) error { return refused }), refused)
			require.NoError(t, l.Close())

			events := rec.All()
			var kinds []observe.Kind
			var modify []observe.Event
			for _, e := range events {
				kinds = append(kinds, e.Kind)
				if e.Op == observe.Modify || e.Kind == observe.WritingBack {
					modify = append(modify, e)
				}
			}
			one := []observe.Kind{observe.CallBegan, observe.CallBegan, observe.LeaseGranted, observe.CallEnded}
			require.Equal(t, append(append(append(one, observe.WritingBack, observe.LeaseEnded, observe.CallEnded), one...),
				observe.LeaseEnded, observe.CallEnded), kinds)
			require.Len(t, modify, 5)
			began, wrote, ended := modify[0], modify[1], modify[2]
			require.Equal(t, "session-1", began.Key)
			require.Equal(t, mode.observed, began.Mode)
			require.NotNil(t, began.Context)
			require.Equal(t, began.Call, wrote.Call)
			require.Equal(t, began.Call, ended.Call)
			require.NoError(t, ended.Err)
			require.Positive(t, ended.Duration)
			require.ErrorIs(t, modify[4].Err, refused)
			require.NotEqual(t, began.Call, modify[3].Call)
		})
	}
}

func TestAModifyThatItsLockerOutlivesIsObservedToEnd(t *testing.T) {
	srv := redistest.Start(t)
	rec := &observing.Recorder{}
	l, err := lock.Open(context.Background(), srv.Addr, lock.WithObserver(rec))
	require.NoError(t, err)
	m := manager.New[counter](l)
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- m.Modify(context.Background(), "session-1", func(c *counter) error {
			close(entered)
			<-release
			c.N++
			return nil
		})
	}()
	<-entered
	// fn runs, with no call of the Locker's in progress: Close does not
	// wait for the Modify, which ends after it.
	require.NoError(t, l.Close())
	close(release)
	require.ErrorIs(t, <-done, lock.ErrClosed)

	var began []observe.Event
	ended := map[uint64]observe.Event{}
	for _, e := range rec.All() {
		switch e.Kind {
		case observe.CallBegan:
			began = append(began, e)
		case observe.CallEnded:
			_, twice := ended[e.Call]
			require.False(t, twice, "call %d ended twice", e.Call)
			ended[e.Call] = e
		}
	}
	require.Len(t, began, 2) // the Modify and its Lock
	for _, b := range began {
		e, ok := ended[b.Call]
		require.True(t, ok, "the %v call began and never ended", b.Op)
		require.Equal(t, b.Op, e.Op)
		require.Equal(t, b.Key, e.Key)
	}
	require.ErrorIs(t, ended[began[0].Call].Err, lock.ErrClosed)
}
