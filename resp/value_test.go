package resp_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/resp"
)

func TestValueString(t *testing.T) {
	for _, tc := range []struct {
		v    resp.Value
		want string
	}{
		{simple("OK"), "OK"},
		{bulk("a\"b\r\n"), `"a\"b\r\n"`},
		{integer(-3), "-3"},
		{null(), "(nil)"},
		{resp.Value{Type: resp.ErrorReply, Str: "ERR x"}, "(error) ERR x"},
		{resp.Value{Type: resp.BulkError, Str: "SYNTAX y"}, "(error) SYNTAX y"},
		{resp.Value{Type: resp.Boolean, Int: 1}, "true"},
		{resp.Value{Type: resp.Boolean}, "false"},
		{resp.Value{Type: resp.Double, Float: 1.5, Str: "1.5"}, "1.5"},
		{resp.Value{Type: resp.Double, Float: math.Inf(-1), Str: "-inf"}, "-Inf"},
		{resp.Value{Type: resp.BigNumber, Str: "-12345678901234567890"}, "-12345678901234567890"},
		{resp.Value{Type: resp.Verbatim, Format: "txt", Str: "hi"}, `"hi"`},
		{agg(resp.Array, integer(1), agg(resp.Set, simple("a")), null()), "[1 [a] (nil)]"},
		{agg(resp.Map, simple("k"), bulk("v")), `[k "v"]`},
		{agg(resp.Push), "[]"},
		{resp.Value{Type: '?'}, "type '?'"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, tc.v.String())
		})
	}
}

func TestValuePredicates(t *testing.T) {
	for _, tc := range []struct {
		name         string
		v            resp.Value
		isNull, bool bool
	}{
		{name: "null", v: null(), isNull: true},
		{name: "true", v: resp.Value{Type: resp.Boolean, Int: 1}, bool: true},
		{name: "false", v: resp.Value{Type: resp.Boolean}},
		{name: "integer 1", v: integer(1), bool: true},
		{name: "integer -1", v: integer(-1), bool: true},
		{name: "integer 0", v: integer(0)},
		{name: "bulk", v: bulk("1")},
		{name: "empty bulk", v: bulk("")},
		{name: "empty array", v: agg(resp.Array)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.isNull, tc.v.IsNull())
			require.Equal(t, tc.bool, tc.v.Bool())
		})
	}
}

func TestTypeString(t *testing.T) {
	require.Equal(t, "simple string", resp.SimpleString.String())
	require.Equal(t, "push", resp.Push.String())
	require.Equal(t, "attribute", resp.Attribute.String())
	require.Equal(t, "type '?'", resp.Type('?').String())
}
