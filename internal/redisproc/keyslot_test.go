package redisproc_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redisproc"
)

// KeySlot against known slots and the hash tag rules; TestCluster checks
// it against a real node's CLUSTER KEYSLOT for many more keys.
func TestKeySlot(t *testing.T) {
	tests := []struct {
		key      string
		want     int      // the slot, or -1 to compare with sameAs
		sameAs   string   // a key that must share the slot
		differs  []string // keys that must not share it (by the rules, not by chance: checked here)
		describe string
	}{
		{key: "", want: 0, describe: "the empty key"},
		{key: "123456789", want: 0x31c3, describe: "CRC-16/XMODEM's check value"},
		{key: "foo", want: 12182},
		{key: "somekey", want: 11058, describe: "from the CLUSTER KEYSLOT page"},
		{key: "foo{hash_tag}", want: 2515, sameAs: "bar{hash_tag}", describe: "from the CLUSTER KEYSLOT page"},
		{key: "{user1000}.following", want: -1, sameAs: "{user1000}.followers"},
		{key: "{user1000}.following", want: -1, sameAs: "user1000"},
		{key: "{}", want: -1, differs: []string{""}, describe: "empty tag: the whole key"},
		{key: "a{}b", want: -1, differs: []string{"ab", ""}, describe: "empty tag: the whole key"},
		{key: "{}{a}", want: -1, differs: []string{"a"}, describe: "only the first { counts"},
		{key: "{{a}}", want: -1, sameAs: "{a", describe: "from the first { to the first } after it"},
		{key: "a{b}c{d}", want: -1, sameAs: "b", describe: "the first tag"},
		{key: "a}b{c}", want: -1, sameAs: "c", describe: "a } before the first { does not count"},
		{key: "{a", want: -1, differs: []string{"a"}, describe: "unclosed: the whole key"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got := redisproc.KeySlot(tt.key)
			require.GreaterOrEqual(t, got, 0)
			require.Less(t, got, 16384)
			if tt.want >= 0 {
				require.Equal(t, tt.want, got, tt.describe)
			}
			if tt.sameAs != "" {
				require.Equal(t, redisproc.KeySlot(tt.sameAs), got, tt.describe)
			}
			for _, k := range tt.differs {
				require.NotEqual(t, redisproc.KeySlot(k), got, "%s: %q", tt.describe, k)
			}
		})
	}
}
