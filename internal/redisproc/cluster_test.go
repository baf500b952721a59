package redisproc_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/resp"
)

func TestClusterOfOneNode(t *testing.T) {
	s := start(t, redisproc.WithCluster())
	_, portText, err := net.SplitHostPort(s.Addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	require.LessOrEqual(t, port, 55535, "the cluster bus listens 10000 above")
	id := do(t, s, "CLUSTER", "MYID").Str
	require.NotEmpty(t, id)

	for _, run := range []string{"started", "restarted"} {
		if run == "restarted" {
			require.NoError(t, s.Restart())
			require.Equal(t, id, do(t, s, "CLUSTER", "MYID").Str, "nodes.conf brought back the same node")
		}
		require.Contains(t, do(t, s, "CLUSTER", "INFO").Str, "cluster_state:ok")
		for _, tt := range []struct {
			name string
			keys [2]string
			want error
		}{
			{name: "one hash tag", keys: [2]string{"{k}a", "{k}b"}},
			{name: "two slots", keys: [2]string{"a", "b"}, want: resp.Prefix("CROSSSLOT")},
		} {
			t.Run(run+"/"+tt.name, func(t *testing.T) {
				v := do(t, s, "MSET", tt.keys[0], "1", tt.keys[1], "2")
				if tt.want == nil {
					require.NoError(t, v.Err())
					require.Equal(t, "OK", v.Str)
				} else {
					require.ErrorIs(t, v.Err(), tt.want)
				}
			})
		}
	}
}

// A cluster node needs its bus port too: when another process holds it,
// Restart says so, quoting the log.
func TestClusterRestartOnTakenBusPortFails(t *testing.T) {
	s := start(t, redisproc.WithCluster())
	s.Halt()
	host, portText, err := net.SplitHostPort(s.Addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port+10000)))
	require.NoError(t, err)
	defer ln.Close()

	err = s.Restart()
	require.ErrorContains(t, err, "already in use")
	require.ErrorContains(t, err, strconv.Itoa(port+10000), "the log names the bus port")
}
