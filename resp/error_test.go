package resp_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/resp"
)

func TestErrorReplies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         string
		wantType   resp.Type
		wantPrefix string
		wantMsg    string
		is         resp.Prefix // errors.Is must match it
		isNot      resp.Prefix // and must not match this one
	}{
		{name: "ERR", in: "-ERR unknown command 'FOO'\r\n", wantType: resp.ErrorReply, wantPrefix: "ERR", wantMsg: "ERR unknown command 'FOO'", is: resp.Err, isNot: resp.NoScript},
		{name: "NOSCRIPT", in: "-NOSCRIPT No matching script. Please use EVAL.\r\n", wantType: resp.ErrorReply, wantPrefix: "NOSCRIPT", wantMsg: "NOSCRIPT No matching script. Please use EVAL.", is: resp.NoScript, isNot: resp.Err},
		{name: "WRONGTYPE", in: "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", wantType: resp.ErrorReply, wantPrefix: "WRONGTYPE", wantMsg: "WRONGTYPE Operation against a key holding the wrong kind of value", is: resp.WrongType, isNot: resp.Err},
		{name: "MOVED", in: "-MOVED 3999 127.0.0.1:6381\r\n", wantType: resp.ErrorReply, wantPrefix: "MOVED", wantMsg: "MOVED 3999 127.0.0.1:6381", is: resp.Moved, isNot: resp.Ask},
		{name: "ASK", in: "-ASK 3999 127.0.0.1:6381\r\n", wantType: resp.ErrorReply, wantPrefix: "ASK", wantMsg: "ASK 3999 127.0.0.1:6381", is: resp.Ask, isNot: resp.Moved},
		{name: "LOADING", in: "-LOADING Redis is loading the dataset in memory\r\n", wantType: resp.ErrorReply, wantPrefix: "LOADING", wantMsg: "LOADING Redis is loading the dataset in memory", is: resp.Loading, isNot: resp.Busy},
		{name: "NOPERM", in: "-NOPERM this user has no permissions\r\n", wantType: resp.ErrorReply, wantPrefix: "NOPERM", wantMsg: "NOPERM this user has no permissions", is: resp.NoPerm, isNot: resp.NoAuth},
		{name: "prefix alone", in: "-READONLY\r\n", wantType: resp.ErrorReply, wantPrefix: "READONLY", wantMsg: "READONLY", is: resp.ReadOnly, isNot: resp.Err},
		{name: "prefix is case sensitive", in: "-err lower case\r\n", wantType: resp.ErrorReply, wantPrefix: "err", wantMsg: "err lower case", is: resp.Prefix("err"), isNot: resp.Err},
		{name: "prefix is a whole word", in: "-ERRORS many\r\n", wantType: resp.ErrorReply, wantPrefix: "ERRORS", wantMsg: "ERRORS many", is: resp.Prefix("ERRORS"), isNot: resp.Err},
		{name: "unknown prefix", in: "-MYMODULE something broke\r\n", wantType: resp.ErrorReply, wantPrefix: "MYMODULE", wantMsg: "MYMODULE something broke", is: resp.Prefix("MYMODULE"), isNot: resp.Err},
		{name: "bulk error", in: "!21\r\nSYNTAX invalid syntax\r\n", wantType: resp.BulkError, wantPrefix: "SYNTAX", wantMsg: "SYNTAX invalid syntax", is: resp.Prefix("SYNTAX"), isNot: resp.Err},
		{name: "bulk error with CRLF", in: "!14\r\nBUSY a\r\nscript\r\n", wantType: resp.BulkError, wantPrefix: "BUSY", wantMsg: "BUSY a\r\nscript", is: resp.Busy, isNot: resp.Err},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := resp.NewReader(strings.NewReader(tc.in)).Read()
			require.NoError(t, err, "an error reply is a value, not a read error")
			require.Equal(t, tc.wantType, v.Type)
			require.Equal(t, tc.wantMsg, v.Str)

			replyErr := v.Err()
			require.Error(t, replyErr)
			require.ErrorIs(t, replyErr, tc.is)
			require.NotErrorIs(t, replyErr, tc.isNot)
			require.NotErrorIs(t, replyErr, resp.ErrProtocol)
			require.Equal(t, "server error: "+tc.wantMsg, replyErr.Error())

			// Wrapped, as the packages above do, it still matches.
			wrapped := fmt.Errorf("lock %q: %w", "k", replyErr)
			require.ErrorIs(t, wrapped, tc.is)
			require.NotErrorIs(t, wrapped, tc.isNot)
			var e *resp.Error
			require.ErrorAs(t, wrapped, &e)
			require.Equal(t, tc.wantPrefix, e.Prefix)
			require.Equal(t, tc.wantMsg, e.Message)
		})
	}
}

func TestErrOfNonErrors(t *testing.T) {
	for _, v := range []resp.Value{
		simple("ERR not an error"),
		bulk("ERR not an error"),
		integer(0),
		null(),
		agg(resp.Array, resp.Value{Type: resp.ErrorReply, Str: "ERR nested"}),
		{},
	} {
		require.NoError(t, v.Err(), "%v", v)
	}
}

func TestErrorIsOnlyPrefix(t *testing.T) {
	err := error(&resp.Error{Prefix: "ERR", Message: "ERR x"})
	require.NotErrorIs(t, err, errors.New("ERR"), "a plain error with the same text is not a prefix")
	require.NotErrorIs(t, err, resp.ErrProtocol)
	require.ErrorIs(t, err, resp.Err)
	require.Equal(t, "NOSCRIPT error reply", resp.NoScript.Error())
}
