package conn_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/internal/redistest"
)

// tlsPort is the port of s's TLS listener.
func tlsPort(t *testing.T, s *redistest.Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(s.TLSAddr)
	require.NoError(t, err)
	return port
}

// A rediss+sentinel address reaches the sentinels, and the primary they
// name, over TLS, and so does the watcher that follows a failover: a
// primary and a replica that replicate over TLS, and a sentinel that
// watches them over TLS, so that every address it names is a TLS port.
func TestASentinelAddressOverTLSFollowsAFailover(t *testing.T) {
	files, tlsConf, err := redisproc.WriteTLSFiles(t.TempDir())
	require.NoError(t, err)
	shared := redistest.WithSharedTLS(files, tlsConf)
	node := redistest.WithConfig(append([]string{"tls-replication yes"}, redisproc.SentinelNodeConf...)...)
	primary := redistest.Start(t, shared, node)
	replica := redistest.Start(t, shared, node, redistest.WithConfig("replicaof 127.0.0.1 "+tlsPort(t, primary)))
	sentinel := redistest.Start(t, shared, redistest.WithBinary("redis-sentinel"), redistest.WithConfig(
		append([]string{"tls-replication yes"}, redisproc.SentinelConf("127.0.0.1", mustAtoi(t, tlsPort(t, primary)), 1)...)...))
	// Promotable: the sentinel has reached the replica itself (over
	// TLS), and it follows the primary.
	redistest.Eventually(t, func() bool {
		v, err := sentinel.Server.Do("SENTINEL", "REPLICAS", "mymaster")
		if err != nil || len(v.Elems) != 1 {
			return false
		}
		fields := map[string]string{}
		for i := 0; i+1 < len(v.Elems[0].Elems); i += 2 {
			fields[v.Elems[0].Elems[i].Str] = v.Elems[0].Elems[i+1].Str
		}
		return fields["flags"] == "slave" && fields["master-link-status"] == "ok"
	}, 30*time.Second, 50*time.Millisecond, "the sentinel never reached the replica")

	c, err := conn.NewClient("rediss+sentinel://"+sentinel.TLSAddr+"/mymaster", conn.WithTLS(tlsConf))
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, primary.Do(t, "CONFIG", "GET", "port").Elems[1].Str, portOf(c), "the primary, reached over TLS")
	v, err := c.Do(context.Background(), "CLIENT", "INFO")
	require.NoError(t, err)
	require.Contains(t, v.Str, "laddr=127.0.0.1:"+tlsPort(t, primary), "the connection came to the TLS port")
	redistest.Eventually(t, func() bool {
		v, err := sentinel.Server.Do("CLIENT", "LIST")
		return err == nil && anySubscribed(v.Str)
	}, 10*time.Second, 10*time.Millisecond, "no watcher listens to the sentinel")

	reply, err := sentinel.Server.Do("SENTINEL", "FAILOVER", "mymaster")
	require.NoError(t, err)
	require.NoError(t, reply.Err())
	replicaPort := replica.Do(t, "CONFIG", "GET", "port").Elems[1].Str
	redistest.Eventually(t, func() bool { return portOf(c) == replicaPort }, 30*time.Second, 10*time.Millisecond,
		"the client never reached the promoted replica")
	v, err = c.Do(context.Background(), "CLIENT", "INFO")
	require.NoError(t, err)
	require.Contains(t, v.Str, "laddr=127.0.0.1:"+tlsPort(t, replica), "over TLS")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
