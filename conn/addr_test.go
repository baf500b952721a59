package conn_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
)

func TestBadAddressesAreRefusedBeforeDialing(t *testing.T) {
	for _, addr := range []string{
		"",
		"localhost",
		":6379",
		"localhost:",
		"http://localhost:6379",
		"redis://",
		"redis://localhost:6379/x",
		"redis://localhost:6379/-1",
		"redis://localhost:6379/0?timeout=3",
		"unix://",
		"unix:///tmp/redis.sock?db=two",
		"redis://local host:6379",
		"redis://[bad",
		"app:pw@localhost:6379",
	} {
		t.Run(addr, func(t *testing.T) {
			_, err := conn.NewClient(addr)
			require.ErrorIs(t, err, conn.ErrInvalid)
			c, err := conn.Dial(context.Background(), addr)
			require.ErrorIs(t, err, conn.ErrInvalid)
			require.Nil(t, c)
		})
	}
}

// TestAddressErrorsQuoteNoPassword: errors travel into logs; whatever
// the mistake in an address, its password is in none of them.
func TestAddressErrorsQuoteNoPassword(t *testing.T) {
	const secret = "s3cret"
	for _, addr := range redistest.AddressMistakes(redistest.ClosedAddr(t), secret) {
		t.Run(addr, func(t *testing.T) {
			_, err := conn.NewClient(addr)
			redistest.RequireNoSecret(t, err, secret)
			c, err := conn.Dial(context.Background(), addr)
			require.Error(t, err)
			require.Nil(t, c)
			redistest.RequireNoSecret(t, err, secret)
		})
	}
}
