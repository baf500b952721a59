package redisproc_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// clusterPass is the password of TestCluster's nodes: Do, MigrateSlot,
// MigrateClusterSlot and the replicas must all use it.
const clusterPass = "secret"

// One cluster, looked at from every side in turn, and stopped last: a
// cluster takes over two seconds to start.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, 1, redisproc.WithConfig("maxmemory-policy allkeys-lru", "requirepass "+clusterPass))
	nodes := c.Nodes()
	require.Len(t, nodes, 6)
	primaries, replicas := nodes[:3], nodes[3:]

	t.Run("every node has the options", func(t *testing.T) {
		for _, n := range nodes {
			require.Equal(t, "allkeys-lru", configGet(t, n, "maxmemory-policy"), n.Addr)
			require.Equal(t, clusterPass, configGet(t, n, "requirepass"), n.Addr)
			require.Equal(t, clusterPass, configGet(t, n, "masterauth"), "%s: its replicas can sync", n.Addr)
			require.Equal(t, strconv.FormatInt(redisproc.MemberNodeTimeout.Milliseconds(), 10),
				configGet(t, n, "cluster-node-timeout"), n.Addr)
		}
	})

	t.Run("seeds", func(t *testing.T) {
		seeds := c.Seeds()
		require.Len(t, seeds, len(nodes))
		seen := map[string]bool{}
		for i, seed := range seeds {
			require.Equal(t, nodes[i].Addr, seed)
			require.False(t, seen[seed], "%s twice", seed)
			seen[seed] = true
			host, port := splitHostPort(t, seed)
			require.Equal(t, "127.0.0.1", host)
			require.LessOrEqual(t, port, 55535, "the cluster bus listens 10000 above")
		}
	})

	t.Run("the primaries share the slots, each with its replica", func(t *testing.T) {
		for _, tt := range []struct {
			slot, primary int
		}{
			{0, 0}, {5460, 0}, {5461, 1}, {10921, 1}, {10922, 2}, {16383, 2},
		} {
			got, err := c.Primary(tt.slot)
			require.NoError(t, err)
			require.Same(t, primaries[tt.primary], got, "slot %d", tt.slot)
		}
		for i, r := range replicas {
			requireReplicaOf(t, r, primaries[i])
		}
		// What a cluster client is told, by any node.
		for _, n := range nodes {
			slots := do(t, n, "CLUSTER", "SLOTS")
			require.Len(t, slots.Elems, 3, "CLUSTER SLOTS of %s: %s", n.Addr, slots)
			for _, r := range slots.Elems {
				require.Len(t, r.Elems, 4, "a range, its primary and one replica: %s", r)
			}
		}
		_, err := c.Primary(16384)
		require.Error(t, err)
	})

	t.Run("keys land on the node of their slot", func(t *testing.T) {
		cli, cliErr := exec.LookPath("redis-cli")
		for _, via := range []string{"redis-cli -c", "the right node"} {
			for _, key := range []string{"a", "b", "c", "{user}.1", "{user}.2", "x{y}z", "{}", "a{}b"} {
				t.Run(via+"/"+key, func(t *testing.T) {
					slot := cluster.Slot(key)
					owner, err := c.Primary(slot)
					require.NoError(t, err)
					value := via + " " + key
					switch via {
					case "redis-cli -c":
						if cliErr != nil {
							t.Skip(cliErr)
						}
						// From another node: redis-cli follows the MOVED.
						from := primaries[(slices.Index(primaries, owner)+1)%len(primaries)]
						host, port := splitHostPort(t, from.Addr)
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						cmd := exec.CommandContext(ctx, cli, "-c", "-h", host, "-p", strconv.Itoa(port), "SET", key, value)
						cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+clusterPass)
						out, err := cmd.CombinedOutput()
						require.NoError(t, err, "%s", out)
						require.Equal(t, "OK", strings.TrimSpace(string(out)))
					default:
						require.Equal(t, "OK", do(t, owner, "SET", key, value).Str)
					}
					require.Equal(t, value, do(t, owner, "GET", key).Str)
					for _, p := range primaries {
						if p != owner {
							movedTo(t, do(t, p, "GET", key), slot, owner.Addr)
						}
					}
				})
			}
		}
	})

	t.Run("the checks on members", func(t *testing.T) { testMembers(t, c) })

	t.Run("MigrateSlot", func(t *testing.T) { testMigrateSlot(t, c) })

	t.Run("MigrateClusterSlot", func(t *testing.T) { testMigrateClusterSlot(t, c) })

	t.Run("Stop", func(t *testing.T) {
		var pids []int
		for _, n := range nodes {
			pid, err := strconv.Atoi(infoField(do(t, n, "INFO", "server").Str, "process_id"))
			require.NoError(t, err)
			pids = append(pids, pid)
		}
		_, err := os.Stat(c.Dir())
		require.NoError(t, err)

		var wg sync.WaitGroup
		for range 3 {
			wg.Go(c.Stop)
		}
		wg.Wait()
		c.Stop()
		for i, pid := range pids {
			p, err := os.FindProcess(pid)
			if err == nil {
				err = p.Signal(syscall.Signal(0))
			}
			require.Error(t, err, "process %d of node %s is gone", pid, nodes[i].Addr)
			_, err = net.Dial("tcp", nodes[i].Addr)
			require.Error(t, err, "nothing listens on %s", nodes[i].Addr)
		}
		_, err = os.Stat(c.Dir())
		require.ErrorIs(t, err, os.ErrNotExist, "the cluster's directory is gone")
		require.ErrorIs(t, nodes[0].Restart(), redisproc.ErrStopped)
		require.ErrorIs(t, c.Kill(nodes[0]), redisproc.ErrStopped)
		_, err = c.Primary(0)
		require.Error(t, err)
	})
}

// testMigrateSlot moves a slot holding keys from one primary to another
// while a client reads those keys and writes new ones, following
// redirections, as a cluster client does.
func testMigrateSlot(t *testing.T, c *redisproc.Cluster) {
	const tag, keys = "{migrate}", 250 // more than one batch of MIGRATE
	slot := cluster.Slot(tag)
	from, err := c.Primary(slot)
	require.NoError(t, err)
	var to *redisproc.Server
	for _, n := range c.Nodes() {
		if n != from && do(t, n, "ROLE").Elems[0].Str == "master" {
			to = n
			break
		}
	}
	require.NotNil(t, to)
	for i := range keys {
		require.Equal(t, "OK", do(t, from, "SET", fmt.Sprintf("%s:%d", tag, i), strconv.Itoa(i)).Str)
	}

	// The client starts every command at the old primary.
	var (
		wg        sync.WaitGroup
		stop      = make(chan struct{})
		clientErr error
		ops       int
		redirects = map[string]int{}
		written   int
	)
	wg.Go(func() {
		for ; ; ops++ {
			select {
			case <-stop:
				return
			default:
			}
			var v resp.Value
			var hops []string
			var want string
			if ops%2 == 0 {
				key := fmt.Sprintf("%s:%d", tag, ops/2%keys)
				want = strconv.Itoa(ops / 2 % keys)
				v, hops, clientErr = clusterDo(from.Addr, clusterPass, "GET", key)
			} else {
				want = "OK"
				v, hops, clientErr = clusterDo(from.Addr, clusterPass, "SET", fmt.Sprintf("%s:new:%d", tag, written), "x")
				written++
			}
			if clientErr == nil && v.Str != want {
				clientErr = fmt.Errorf("reply %s, want %q", v, want)
			}
			if clientErr != nil {
				return
			}
			for _, h := range hops {
				redirects[h]++
			}
		}
	})
	stopClient := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopClient()
	begun := time.Now()
	err = c.MigrateSlot(slot, to)
	took := time.Since(begun)
	stopClient()
	require.NoError(t, err)
	require.NoError(t, clientErr)
	t.Logf("slot %d moved with its %d keys in %v, during which the client made %d calls, redirected %v",
		slot, keys, took.Round(time.Millisecond), ops, redirects)

	got, err := c.Primary(slot)
	require.NoError(t, err)
	require.Same(t, to, got)
	countKeys := func(s *redisproc.Server) int64 {
		return do(t, s, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)).Int
	}
	require.Equal(t, int64(keys+written), countKeys(to), "the keys moved, and those written meanwhile went there too")
	require.Zero(t, countKeys(from))
	key := tag + ":7"
	require.Equal(t, "7", do(t, to, "GET", key).Str)
	movedTo(t, do(t, from, "GET", key), slot, to.Addr)
	v, hops, err := clusterDo(from.Addr, clusterPass, "GET", key)
	require.NoError(t, err)
	require.Equal(t, "7", v.Str)
	require.Equal(t, []string{"MOVED"}, hops)

	require.NoError(t, c.MigrateSlot(slot, to), "to where it is already")
	replica := c.Nodes()[len(c.Nodes())-1]
	require.ErrorContains(t, c.MigrateSlot(slot, replica), "is a replica")
	require.NoError(t, c.WaitHealthy(10*time.Second))
}

// configGet returns the value of one CONFIG GET parameter.
func configGet(t *testing.T, s *redisproc.Server, param string) string {
	t.Helper()
	v := do(t, s, "CONFIG", "GET", param)
	require.Len(t, v.Elems, 2, "CONFIG GET %s: %s", param, v)
	return v.Elems[1].Str
}

func splitHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, portText, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	return host, port
}

// infoField returns the value of the "name:value" line of an INFO text.
func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// A cluster that cannot start says why and leaves nothing behind.
func TestStartClusterFails(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, tt := range []struct {
		name                  string
		primaries, replicasEa int
		opts                  []redisproc.Option
		want                  string
	}{
		{"no primaries", 0, 1, nil, "need 1 to 16384 primaries"},
		{"negative replicas", 1, -1, nil, "need 1 to 16384 primaries"},
		{"bad config", 2, 1, []redisproc.Option{redisproc.WithConfig("no-such-directive 1")}, "Bad directive"},
		// Every node starts, and then none can be joined.
		{"no CLUSTER command", 2, 1, []redisproc.Option{redisproc.WithConfig(`rename-command CLUSTER ""`)}, "unknown command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redisproc.StartCluster(tt.primaries, tt.replicasEa, tt.opts...)
			redistest.SkipIfNoBinary(t, err)
			require.Nil(t, c)
			require.ErrorContains(t, err, tt.want)
			requireEmpty(t, tmp)
		})
	}
}
