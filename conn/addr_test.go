package conn_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
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
	} {
		t.Run(addr, func(t *testing.T) {
			_, err := conn.NewClient(addr)
			require.Error(t, err)
			c, err := conn.Dial(context.Background(), addr)
			require.Error(t, err)
			require.Nil(t, c)
		})
	}
}
