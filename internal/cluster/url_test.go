package cluster_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
)

func TestParseURLSeeds(t *testing.T) {
	tests := []struct {
		url   string
		seeds []string
	}{
		{"redis+cluster://10.0.0.1:7000", []string{"10.0.0.1:7000"}},
		{"redis+cluster://10.0.0.1:7000,10.0.0.2:7001/", []string{"10.0.0.1:7000", "10.0.0.2:7001"}},
		{"redis+cluster://node-a,node-b:7001", []string{"node-a:6379", "node-b:7001"}},
		{"redis+cluster://[::1]:7000,[::1]", []string{"[::1]:7000", "[::1]:6379"}},
		{"rediss+cluster://user:p%40ss@a:7000,b:7000/0?protocol=3", []string{"a:7000", "b:7000"}},
		{"redis+cluster://:secret@a:7000?client_name=w1&dial_timeout=2s&read_timeout=0&write_timeout=500ms", []string{"a:7000"}},
		{"redis+cluster://p@ss@a:7000", []string{"a:7000"}}, // the last '@' ends the user
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			seeds, _, err := cluster.ParseURL(tt.url)
			require.NoError(t, err)
			require.Equal(t, tt.seeds, seeds)
		})
	}
}

func TestParseURLRefuses(t *testing.T) {
	for _, u := range []string{
		"",
		"10.0.0.1:7000",
		"redis://10.0.0.1:7000",
		"rediss://10.0.0.1:7000",
		"unix+cluster:///tmp/x",
		"redis+cluster://",
		"redis+cluster://a:7000,",
		"redis+cluster://,a:7000",
		"redis+cluster://a:7000,,b:7000",
		"redis+cluster://a:70000",
		"redis+cluster://a:x",
		"redis+cluster://::1:7000",
		"redis+cluster://[::1:7000",
		"redis+cluster://a b:7000",
		"redis+cluster://a:7000/1",
		"redis+cluster://a:7000/x/y",
		"redis+cluster://a:7000?db=0",
		"redis+cluster://a:7000?protocol=4",
		"redis+cluster://a:7000?protocol=3&protocol=2",
		"redis+cluster://a:7000?dial_timeout=soon",
		"redis+cluster://a:7000?read_timeout=-1s",
		"redis+cluster://a:7000?client_name=a%20b",
		"redis+cluster://a:7000#top",
		"redis+cluster://u:p%zz@a:7000",
	} {
		t.Run(u, func(t *testing.T) {
			_, _, err := cluster.ParseURL(u)
			require.Error(t, err)
		})
	}
}

func TestParseURLHidesThePassword(t *testing.T) {
	for _, u := range append(redistest.AddressMistakes("a:7000", "hunter2"),
		"redis+cluster://u:hunter2@a:70000",
		"redis+cluster://u:hunter2@a:7000?x=1",
		"redis+cluster://u:hunter2%zz@a:7000",
		"redis+cluster://u:12/hunter2@a:7000",
		"redis+cluster://u:hunter2?x@a:7000",
	) {
		_, _, err := cluster.ParseURL(u)
		redistest.RequireNoSecret(t, err, "hunter2")
	}
}

// TestParseURLHandshake: the URL's settings reach every connection, as
// the handshake a fake node reads shows.
func TestParseURLHandshake(t *testing.T) {
	tests := []struct {
		query string // after the host
		want  string // the first command the node reads
	}{
		{"", "CLUSTER SHARDS"},
		{"/?client_name=w1", "CLIENT SETNAME w1"},
		{"?protocol=3&client_name=w1", "HELLO 3 AUTH bob s3cret SETNAME w1"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			a := startNode(t)
			a.setScript(func(args []string) string {
				if isCommand(args, "CLUSTER SHARDS") {
					return allSlotsTo(t, a.Addr)
				}
				return ok
			})
			u := "redis+cluster://" + a.Addr + tt.query
			if strings.Contains(tt.query, "protocol") {
				u = "redis+cluster://bob:s3cret@" + a.Addr + tt.query
			}
			seeds, opts, err := cluster.ParseURL(u)
			require.NoError(t, err)
			newClient(t, seeds, cluster.WithConnOptions(opts...))
			require.Equal(t, tt.want, a.commands()[0])
		})
	}
}

// TestParseURLOnRealCluster: a password and a client name from the URL,
// on a real cluster node.
func TestParseURLOnRealCluster(t *testing.T) {
	srv := redistest.Start(t, redistest.WithCluster(), redistest.WithConfig("requirepass s3cret"))
	seeds, opts, err := cluster.ParseURL("redis+cluster://:s3cret@" + redistest.ClosedAddr(t) + "," + srv.Addr + "?client_name=baton-test")
	require.NoError(t, err)
	c := newClient(t, seeds, cluster.WithConnOptions(opts...))
	v, err := c.Do(testContext(t), "any", "CLIENT", "GETNAME")
	require.NoError(t, err)
	require.Equal(t, "baton-test", v.Str)
}
