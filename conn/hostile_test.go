package conn_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// TestHostileRepliesBreakTheConnectionCleanly serves bytes that no correct
// server sends. Each must fail the call with a clear error, close the
// connection, and never panic, hang past the context, or allocate without
// bound. (Replies that are valid but over a limit fail only their own call:
// see limit_test.go.)
func TestHostileRepliesBreakTheConnectionCleanly(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		opts  []resp.ReaderOption
		cut   bool // close after the reply, rather than stall
		want  error
	}{
		{name: "garbage type byte", reply: "?what\r\n", want: resp.ErrProtocol},
		{name: "truncated frame", reply: "$10\r\nabc", cut: true, want: io.ErrUnexpectedEOF},
		{name: "truncated line", reply: "+OK", cut: true, want: io.ErrUnexpectedEOF},
		{name: "bulk length past int64", reply: "$99999999999999999999\r\n", want: resp.ErrProtocol},
		{name: "negative bulk length", reply: "$-5\r\n", want: resp.ErrProtocol},
		{name: "negative array length", reply: "*-2\r\n", want: resp.ErrProtocol},
		{name: "huge bulk length, cut short", reply: "$99999999999\r\nabc", cut: true, want: io.ErrUnexpectedEOF},
		{name: "deep nesting, cut short", reply: strings.Repeat("*1\r\n", 1000), cut: true, want: io.ErrUnexpectedEOF},
		{name: "bulk over the limit without CRLF", reply: "$2000\r\n" + strings.Repeat("x", 2000) + "XY", opts: []resp.ReaderOption{resp.WithMaxBulkLen(1024)}, want: resp.ErrProtocol},
		{name: "garbage in an array over the limit", reply: "*2000000000\r\n:1\r\n?\r\n", want: resp.ErrProtocol},
		{name: "bare LF", reply: "+OK\n", want: resp.ErrProtocol},
		{name: "bulk without CRLF", reply: "$3\r\nabcXY", want: resp.ErrProtocol},
		{name: "push frame on RESP2", reply: ">2\r\n+message\r\n+x\r\n", want: resp.ErrProtocol},
		{name: "map frame on RESP2", reply: "%1\r\n+a\r\n+b\r\n", want: resp.ErrProtocol},
		{name: "integer overflow", reply: ":9223372036854775808\r\n", want: resp.ErrProtocol},
		{name: "empty length", reply: "$\r\n", want: resp.ErrProtocol},
		{name: "two replies for one command", reply: "+OK\r\n+EXTRA\r\n", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hungUp := make(chan struct{})
			fake := redistest.NewFake(t, func(s *redistest.Session) {
				defer close(hungUp)
				if !s.Expect("GET", "k") {
					return
				}
				assert.NoError(t, s.Send(tt.reply))
				if tt.cut {
					s.Cut()
					return
				}
				// The client must hang up on its own.
				_, err := s.ReadCommand()
				assert.Error(t, err)
			})
			c := dial(t, fake.Addr, conn.WithReaderOptions(tt.opts...))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			_, err := c.Do(ctx, "GET", "k")
			if tt.want == nil { // the reply itself was fine
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, conn.ErrBroken)
				require.ErrorIs(t, err, tt.want)
				require.NotErrorIs(t, err, resp.ErrLimit)
				var uncertain *conn.UncertainError
				require.ErrorAs(t, err, &uncertain)
			}
			require.Eventually(t, func() bool { return errors.Is(c.Err(), conn.ErrBroken) }, 5*time.Second, time.Millisecond)
			<-hungUp

			// Nothing more is sent on a broken connection.
			_, err = c.Do(ctx, "GET", "k")
			require.ErrorIs(t, err, conn.ErrBroken)
			var uncertain *conn.UncertainError
			require.False(t, errors.As(err, &uncertain), "a call refused up front did not run")
		})
	}
}

func TestStalledFrameDoesNotHoldTheCallPastItsContext(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		s.Expect("GET", "k")
		_ = s.Send("$10\r\nabc")
		s.Stall()
	})
	c := dial(t, fake.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Do(ctx, "GET", "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestReplyWithNothingPendingBreaksTheConnection(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		_ = s.Send("+SURPRISE\r\n")
		s.Stall()
	})
	c := dial(t, fake.Addr)
	require.Eventually(t, func() bool { return errors.Is(c.Err(), conn.ErrBroken) }, 5*time.Second, time.Millisecond)
	require.ErrorContains(t, c.Err(), "no command pending")
	_, err := c.Do(context.Background(), "PING")
	require.ErrorIs(t, err, conn.ErrBroken)
}
