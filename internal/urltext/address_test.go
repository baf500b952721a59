package urltext_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/urltext"
)

// holder keeps an Address where fmt cannot call its methods.
type holder struct{ addr urltext.Address }

// TestAnAddressPrintsNoPasswordWhateverTheVerb: an Address wrapped in an
// error, printed with any verb, marshalled or logged, hides the
// password; only Raw gives it.
func TestAnAddressPrintsNoPasswordWhateverTheVerb(t *testing.T) {
	const raw = "redis+sentinel://app:s3cret@a:1,b:2/m?sentinel_password=t0p"
	a := urltext.NewAddress(raw)
	require.Equal(t, raw, a.Raw())
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("dial", "addr", a)
	js, err := json.Marshal(struct{ Addr urltext.Address }{a})
	require.NoError(t, err)
	wrapped := fmt.Errorf("dial %v: %w", a, errors.New("refused"))
	for _, text := range []string{
		a.String(), fmt.Sprint(a), fmt.Sprintf("%v %s %q %+v %#v %x %20s %-30v", a, a, a, a, a, a, a, a),
		fmt.Sprintf("%v", struct{ A urltext.Address }{a}), fmt.Sprintf("%+v", &struct{ A urltext.Address }{a}),
		fmt.Sprintf("%v", []urltext.Address{a}), fmt.Sprintf("%v %+v %#v", holder{a}, holder{a}, &holder{a}),
		wrapped.Error(), logged.String(), string(js),
	} {
		require.NotContains(t, text, "s3cret")
		require.NotContains(t, text, "t0p")
	}
	require.Equal(t, `"redis+sentinel://app:xxxxx@a:1,b:2/m?sentinel_password=xxxxx"`, fmt.Sprintf("%q", a))
	require.Equal(t, "", urltext.Address{}.String())
}
