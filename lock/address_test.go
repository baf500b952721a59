package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
