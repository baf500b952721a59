package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
)

// benchScanCount is how many keys one SCAN looks at.
const benchScanCount = "1000"

// benchPrefix returns a prefix of this run alone: its keys cannot meet
// anyone else's, and the cleanup deletes exactly them. It holds no glob
// characters, so that it can be matched by SCAN as it is.
func benchPrefix() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making the key prefix: %w", err)
	}
	return "baton-bench:" + hex.EncodeToString(b[:]) + ":", nil
}

// benchKeys names n keys k0, k1, ...
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	return keys
}

// removeBenchKeys deletes every key under prefix and returns how many it
// deleted. The bench never runs FLUSHALL: the server may hold others'
// data.
func removeBenchKeys(ctx context.Context, c *conn.Client, prefix string) (int, error) {
	removed := 0
	cursor := "0"
	for {
		v, err := c.Do(ctx, "SCAN", cursor, "MATCH", prefix+"*", "COUNT", benchScanCount)
		if err != nil {
			return removed, fmt.Errorf("removing the run's keys (%s*): %w", prefix, err)
		}
		if len(v.Elems) != 2 {
			return removed, fmt.Errorf("removing the run's keys (%s*): %w: SCAN replied %s", prefix, resp.ErrProtocol, v)
		}
		if keys := v.Elems[1].Elems; len(keys) > 0 {
			args := []string{"UNLINK"}
			for _, k := range keys {
				args = append(args, k.Str)
			}
			n, err := c.Do(ctx, args...)
			if err != nil {
				return removed, fmt.Errorf("removing the run's keys (%s*): %w", prefix, err)
			}
			removed += int(n.Int)
		}
		cursor = v.Elems[0].Str
		if cursor == "0" {
			return removed, nil
		}
	}
}
