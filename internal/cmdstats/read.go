package cmdstats

import (
	"context"
	"fmt"

	"github.com/batonlock/baton/resp"
)

// Doer sends one command and returns its reply, an error reply as an
// error: a *conn.Client does.
type Doer interface {
	Do(ctx context.Context, args ...string) (resp.Value, error)
}

// Read takes a reading with INFO commandstats. The reply is a bulk string
// in RESP2 and a verbatim string in RESP3; anything else matches
// ErrMalformed. This INFO is counted by the next reading.
func Read(ctx context.Context, c Doer) (Stats, error) {
	v, err := c.Do(ctx, "INFO", "commandstats")
	if err != nil {
		return nil, fmt.Errorf("cmdstats: INFO commandstats: %w", err)
	}
	if v.Type != resp.Bulk && v.Type != resp.Verbatim {
		return nil, fmt.Errorf("%w: INFO replied with a %s", ErrMalformed, v.Type)
	}
	return Parse(v.Str)
}
