package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// TestOpenErrorsQuoteNoPassword: Open's errors travel into a service's
// logs; whatever the mistake in the address, single server or cluster,
// its password is in none of them.
func TestOpenErrorsQuoteNoPassword(t *testing.T) {
	const secret = "s3cret"
	for _, addr := range redistest.AddressMistakes(redistest.ClosedAddr(t), secret) {
		t.Run(addr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			l, err := lock.Open(ctx, addr)
			require.Error(t, err)
			require.Nil(t, l)
			redistest.RequireNoSecret(t, err, secret)
		})
	}
}

// TestAnAddressOpenCannotReadIsInvalid: a malformed address, for one
// server or a cluster, is a bad argument (lock.ErrInvalid) and an
// address conn cannot read (conn.ErrInvalid), and nothing is dialled.
func TestAnAddressOpenCannotReadIsInvalid(t *testing.T) {
	for _, addr := range []string{"redis://[bad", "redis://h:1/x", "localhost", "ftp://h", "redis+cluster://h:1/2", "redis+cluster://h?nope=1"} {
		t.Run(addr, func(t *testing.T) {
			l, err := lock.Open(context.Background(), addr)
			require.Nil(t, l)
			require.ErrorIs(t, err, lock.ErrInvalid)
			require.ErrorIs(t, err, conn.ErrInvalid)
		})
	}
}
