package keyevents_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/keyevents"
)

func TestMissing(t *testing.T) {
	cases := []struct{ current, required, missing string }{
		{"", "Kgxe", "Kgxe"},
		{"Kgxe", "Kgxe", ""},
		{"KA", "Kgxe", ""},
		{"A", "Kgxe", "K"},
		{"Ex", "Kgxe", "Kge"},
		{"gxeK", "Kg", ""},
		{"KA", "K$", ""},
		{"Kg", "K$", "$"},
		{"KA", "Km", "m"}, // key misses are not in A
		{"EA", "Kn", "Kn"},
	}
	for _, c := range cases {
		require.Equal(t, c.missing, keyevents.Missing(c.current, c.required), "%q needs %q", c.current, c.required)
	}
}
