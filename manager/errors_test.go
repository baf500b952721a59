package manager_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// TestSentinelsOfOneMeaningAreOneValue: a closed Locker and a closed
// Manager, and a bad argument refused by either package with nothing
// sent, are one condition each, so each is one value, and a caller
// matches it with either package's name.
func TestSentinelsOfOneMeaningAreOneValue(t *testing.T) {
	for _, tt := range []struct {
		name          string
		manager, lock error
	}{
		{"ErrClosed", manager.ErrClosed, lock.ErrClosed},
		{"ErrInvalid", manager.ErrInvalid, lock.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.True(t, tt.manager == tt.lock, "manager.%s is not lock.%[1]s", tt.name)
		})
	}
}

// documentedError is one promise of a doc comment that an error matches a
// target, provoked through the public API.
type documentedError struct {
	doc       string                                          // the doc that promises it, and the case
	call      func(t *testing.T, srv *redistest.Server) error // provokes the error, on srv flushed
	is        []error                                         // what errors.Is must match
	uncertain bool                                            // whether errors.As must find a *conn.UncertainError
}

// TestEveryDocumentedErrorMatches provokes every error that a doc of
// package manager promises a call returns, and checks that it matches
// what the doc says with errors.Is and errors.As: one row per promise,
// named after the doc that makes it. ErrClosed and ErrInvalid are
// lock's values, and match under either package's name.
func TestEveryDocumentedErrorMatches(t *testing.T) {
	srv := redistest.Start(t)
	bg := context.Background()
	invalid := []error{manager.ErrInvalid, lock.ErrInvalid}
	closed := []error{manager.ErrClosed, lock.ErrClosed}
	modify := func(m *manager.Manager[counter]) error { return m.Modify(bg, "k", increment) }
	get := func(m *manager.Manager[counter]) error {
		_, err := m.Get(bg, "k")
		return err
	}
	// onNew is a call on a Manager made with opts.
	onNew := func(call func(*manager.Manager[counter]) error, opts ...manager.Option) func(*testing.T, *redistest.Server) error {
		return func(t *testing.T, srv *redistest.Server) error {
			return call(newManager(t, openLocker(t, srv), opts...))
		}
	}
	// lostDuringFn is a Modify whose lease is lost while fn runs: the lock
	// deleted, as if it expired, and taken by another Locker.
	lostDuringFn := func(hold time.Duration) func(*testing.T, *redistest.Server) error {
		return func(t *testing.T, srv *redistest.Server) error {
			m := newManager(t, openLocker(t, srv), manager.WithHold(hold))
			require.NoError(t, m.Modify(bg, "k", increment))
			other := openLocker(t, srv)
			return m.Modify(bg, "k", func(c *counter) error {
				srv.Do(t, "DEL", "baton:{k}")
				_, err := other.TryLock(bg, "k")
				require.NoError(t, err)
				c.N++
				return nil
			})
		}
	}
	// cancelledDuringFn is a Modify whose fn cancels its context.
	cancelledDuringFn := func(hold time.Duration) func(*testing.T, *redistest.Server) error {
		return func(t *testing.T, srv *redistest.Server) error {
			m := newManager(t, openLocker(t, srv), manager.WithHold(hold))
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			return m.Modify(ctx, "k", func(c *counter) error { cancel(); c.N++; return nil })
		}
	}
	// endsInFlight is a Modify (the second, held under hold) whose
	// context ends with its write-back on its way: the server holds
	// writes back for longer than the context lasts.
	endsInFlight := func(hold time.Duration) func(*testing.T, *redistest.Server) error {
		return func(t *testing.T, srv *redistest.Server) error {
			m := newManager(t, openLocker(t, srv), manager.WithHold(hold))
			require.NoError(t, m.Modify(bg, "k", increment))
			ctx, cancel := context.WithTimeout(bg, 60*time.Millisecond)
			defer cancel()
			t.Cleanup(func() { srv.Do(t, "CLIENT", "UNPAUSE") })
			return m.Modify(ctx, "k", func(c *counter) error {
				srv.Do(t, "CLIENT", "PAUSE", "2000", "WRITE") // on a connection of its own
				c.N++
				return nil
			})
		}
	}
	// afterClose is a Modify on a Manager that Close ended.
	afterClose := func(hold time.Duration) func(*testing.T, *redistest.Server) error {
		return func(t *testing.T, srv *redistest.Server) error {
			m := newManager(t, openLocker(t, srv), manager.WithHold(hold))
			require.NoError(t, m.Modify(bg, "k", increment))
			require.NoError(t, m.Close())
			return m.Modify(bg, "k", increment)
		}
	}
	// lockerClosed is call on a Manager whose Locker is closed.
	lockerClosed := func(call func(*manager.Manager[counter]) error) func(*testing.T, *redistest.Server) error {
		return func(t *testing.T, srv *redistest.Server) error {
			l, err := lock.Open(bg, srv.Addr)
			require.NoError(t, err)
			m := newManager(t, l)
			require.NoError(t, l.Close())
			return call(m)
		}
	}
	boom := errors.New("boom")

	rows := []documentedError{
		// ErrInvalid, lock's value.
		{doc: "New: a nil Locker, reported by every call", is: invalid,
			call: func(t *testing.T, _ *redistest.Server) error {
				m := manager.New[counter](nil)
				t.Cleanup(func() { require.NoError(t, m.Close()) })
				return modify(m)
			}},
		{doc: "WithCodec: not a Codec for the Manager's T", is: invalid,
			call: onNew(modify, manager.WithCodec[int](manager.JSON[int]{}))},
		{doc: "WithStateTTL: under 1ms", is: invalid, call: onNew(modify, manager.WithStateTTL(0))},
		{doc: "WithStateTTL: over 100 years", is: invalid, call: onNew(modify, manager.WithStateTTL(101*365*24*time.Hour))},
		{doc: "WithStateTTL: every call, Get too, returns the refusal", is: invalid, call: onNew(get, manager.WithStateTTL(0))},
		{doc: "ErrInvalid: a hold out of range (WithHold)", is: invalid, call: onNew(modify, manager.WithHold(-time.Second))},
		{doc: "ErrInvalid: a close wait out of range (WithCloseWait)", is: invalid, call: onNew(modify, manager.WithCloseWait(-time.Second))},
		{doc: "ErrInvalid: a state size limit out of range (WithMaxStateSize)", is: invalid, call: onNew(modify, manager.WithMaxStateSize(0))},
		{doc: "WithKeyPrefix: a state prefix whose hash tag is not the lock's", is: invalid,
			call: onNew(modify, manager.WithKeyPrefix("svc{a}:"))},
		{doc: "ErrInvalid: an empty token (Modify)", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error { return m.Modify(bg, "", increment) })},
		{doc: "ErrInvalid: an empty token (Get)", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error { _, err := m.Get(bg, ""); return err })},
		{doc: "ErrInvalid: a token that begins with '}'", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error { return m.Modify(bg, "}k", increment) })},
		{doc: "ErrInvalid: a token the lock refuses, over its 1024-byte limit (Modify)", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error { return m.Modify(bg, strings.Repeat("k", 1025), increment) })},
		{doc: "ErrInvalid: a token the lock refuses, over its 1024-byte limit (Get)", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error { _, err := m.Get(bg, strings.Repeat("k", 1025)); return err })},
		{doc: "ErrInvalid: a nil context (Modify)", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error {
				return m.Modify(nil, "k", increment) //nolint:staticcheck // the nil context is the case
			})},
		{doc: "ErrInvalid: a nil context (Get)", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error {
				_, err := m.Get(nil, "k") //nolint:staticcheck // the nil context is the case
				return err
			})},
		{doc: "ErrInvalid: a nil function", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error { return m.Modify(bg, "k", nil) })},
		{doc: "Modify: a result over the state size limit (WithMaxStateSize)", is: invalid,
			call: onNew(func(m *manager.Manager[counter]) error {
				return m.Modify(bg, "k", func(c *counter) error { c.N = 1_000_000; return nil })
			}, manager.WithMaxStateSize(5))},

		// ErrUndecodable.
		{doc: "Modify: undecodable state", is: []error{manager.ErrUndecodable},
			call: func(t *testing.T, srv *redistest.Server) error {
				srv.Do(t, "SET", "baton:{k}:state", "not json")
				return onNew(modify)(t, srv)
			}},
		{doc: "ErrUndecodable: undecodable state (Get)", is: []error{manager.ErrUndecodable},
			call: func(t *testing.T, srv *redistest.Server) error {
				srv.Do(t, "SET", "baton:{k}:state", "not json")
				return onNew(get)(t, srv)
			}},

		// lock.ErrNotHeld, and fn's own error.
		{doc: "Modify: the lease lost by the time of the write-back", is: []error{lock.ErrNotHeld}, call: lostDuringFn(0)},
		{doc: "Modify: the lease lost by the time of the write-back (WithHold, held)", is: []error{lock.ErrNotHeld},
			call: lostDuringFn(time.Hour)},
		{doc: "Modify: fn's error comes back wrapped", is: []error{boom},
			call: onNew(func(m *manager.Manager[counter]) error {
				return m.Modify(bg, "k", func(*counter) error { return boom })
			})},

		// ErrClosed, lock's value.
		{doc: "Manager.Close: Modify fails afterwards", is: closed, call: afterClose(0)},
		{doc: "Manager.Close: Modify fails afterwards (WithHold)", is: closed, call: afterClose(time.Hour)},
		{doc: "Manager.Close: the Modify whose fn runs as Close begins", is: closed,
			call: func(t *testing.T, srv *redistest.Server) error {
				m := newManager(t, openLocker(t, srv))
				return m.Modify(bg, "k", func(c *counter) error {
					require.NoError(t, m.Close())
					c.N++
					return nil
				})
			}},
		{doc: "ErrClosed: a Modify whose Locker is closed", is: closed, call: lockerClosed(modify)},
		{doc: "ErrClosed: a Get whose Locker is closed", is: closed, call: lockerClosed(get)},

		// conn.UncertainError.
		{doc: "Modify: ctx ends during fn (and it matches ctx's error)", is: []error{context.Canceled}, uncertain: true,
			call: cancelledDuringFn(0)},
		{doc: "Modify: ctx ends during fn, WithHold (and it matches ctx's error)", is: []error{context.Canceled}, uncertain: true,
			call: cancelledDuringFn(time.Hour)},
		{doc: "Modify: ctx ends with the write-back on its way (and it matches ctx's error)", is: []error{context.DeadlineExceeded}, uncertain: true,
			call: endsInFlight(0)},
		{doc: "Modify: ctx ends with the held write-back on its way, WithHold (and it matches ctx's error)", is: []error{context.DeadlineExceeded}, uncertain: true,
			call: endsInFlight(time.Hour)},
	}
	for _, row := range rows {
		t.Run(row.doc, func(t *testing.T) {
			srv.Do(t, "FLUSHALL")
			err := row.call(t, srv)
			require.Error(t, err)
			t.Log(err)
			for _, target := range row.is {
				require.ErrorIs(t, err, target)
			}
			if row.uncertain {
				require.ErrorAs(t, err, new(*conn.UncertainError))
			}
		})
	}
}
