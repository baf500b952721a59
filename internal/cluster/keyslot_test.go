package cluster_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
)

// slotCases are keys with the slots Redis 7.0's CLUSTER KEYSLOT gives
// them: CRC16's check value, plain keys, and the hash tag's edge cases.
var slotCases = []struct {
	key  string
	slot int
}{
	{"", 0},
	{"123456789", 12739}, // CRC-16/XMODEM's check value is 0x31C3
	{"foo", 12182},
	{"bar", 5061},
	{"hello", 866},
	{"user1000", 3443},
	{"{user1000}.following", 3443}, // the tag alone is hashed
	{"{}", 15257},                  // an empty tag: the whole key
	{"a{}b", 13694},
	{"{}{a}", 13650}, // only the first '{' counts, and its tag is empty
	{"{{a}}", 10276}, // the tag is "{a", as is the whole of the next key
	{"{a", 10276},    // no '}': the whole key
	{"a}", 5921},
	{"a{b}c{d}", 3300}, // the first tag: "b"
	{"{a}{b}", 15495},
	{"}{", 12793}, // the '}' before the '{' does not close it
	{"{", 4092},
	{"}", 12090},
	{"ключ", 10303},
	{"{ключ}x", 10303},
	{"日本", 10949},
}

func TestSlotKnownValues(t *testing.T) {
	for _, tt := range slotCases {
		t.Run(tt.key, func(t *testing.T) {
			require.Equal(t, tt.slot, cluster.Slot(tt.key))
		})
	}
}

func TestSlotSharesTaggedKeys(t *testing.T) {
	for _, keys := range [][]string{
		{"{lock}", "lock", "{lock}:fence", "x{lock}y{z}", "{lock}}"},
		{"{a}{b}", "a", "{a}"},
	} {
		for _, k := range keys[1:] {
			require.Equal(t, cluster.Slot(keys[0]), cluster.Slot(k), "%q and %q", keys[0], k)
		}
	}
}

// TestSlotMatchesServer compares Slot with a real cluster node's CLUSTER
// KEYSLOT for the edge cases and a few thousand random keys, drawn from an
// alphabet heavy in braces so that tags of every shape come up, and from
// all bytes.
func TestSlotMatchesServer(t *testing.T) {
	srv := redistest.Start(t, redistest.WithCluster())
	ctx := testContext(t)
	c, err := conn.Dial(ctx, srv.Addr)
	require.NoError(t, err)
	defer c.Close()

	keys := []string{"\x00", "{\x00}", "\xff{\xfe}", "{}}", "{{}}", "{}}{", "{ }", "{a}}b"}
	for _, tt := range slotCases {
		keys = append(keys, tt.key)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const braces = "{}{}ab"
	for range 4000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = braces[rng.IntN(len(braces))]
			}
		}
		keys = append(keys, string(b))
	}

	for len(keys) > 0 {
		batch := keys[:min(500, len(keys))]
		keys = keys[len(batch):]
		cmds := make([][]string, len(batch))
		for i, k := range batch {
			cmds[i] = []string{"CLUSTER", "KEYSLOT", k}
		}
		replies, err := c.DoMulti(ctx, cmds...)
		require.NoError(t, err)
		for i, k := range batch {
			require.NoError(t, replies[i].Err())
			require.Equal(t, int(replies[i].Int), cluster.Slot(k), "key %q", k)
		}
	}
}
