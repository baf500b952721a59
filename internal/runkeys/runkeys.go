package runkeys

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/batonlock/baton/resp"
)

// scanCount is how many keys one SCAN looks at.
const scanCount = "1000"

// NewPrefix returns base followed by 16 random hex digits and a colon: a
// prefix no other run shares. It holds no glob characters of its own, so
// that SCAN MATCH finds exactly its keys when base has none either.
func NewPrefix(base string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a key prefix: %w", err)
	}
	return base + hex.EncodeToString(b[:]) + ":", nil
}

// Doer is a connection: *conn.Conn and *conn.Client both are.
type Doer interface {
	Do(ctx context.Context, args ...string) (resp.Value, error)
	DoMulti(ctx context.Context, cmds ...[]string) ([]resp.Value, error)
}

// Remove deletes every key under prefix and returns how many it deleted.
// Each key gets an UNLINK of its own, all in one write per SCAN page: the
// keys of a run sit under many hash tags, which one multi-key UNLINK
// would mix.
func Remove(ctx context.Context, c Doer, prefix string) (int, error) {
	removed := 0
	for cursor := "0"; ; {
		v, err := c.Do(ctx, "SCAN", cursor, "MATCH", prefix+"*", "COUNT", scanCount)
		if err != nil {
			return removed, fmt.Errorf("removing the run's keys (%s*): %w", prefix, err)
		}
		if len(v.Elems) != 2 {
			return removed, fmt.Errorf("removing the run's keys (%s*): %w: SCAN replied %s", prefix, resp.ErrProtocol, v)
		}
		if keys := v.Elems[1].Elems; len(keys) > 0 {
			cmds := make([][]string, len(keys))
			for i, k := range keys {
				cmds[i] = []string{"UNLINK", k.Str}
			}
			replies, err := c.DoMulti(ctx, cmds...)
			if err != nil {
				return removed, fmt.Errorf("removing the run's keys (%s*): %w", prefix, err)
			}
			for _, r := range replies {
				removed += int(r.Int)
			}
		}
		if cursor = v.Elems[0].Str; cursor == "0" {
			return removed, nil
		}
	}
}
