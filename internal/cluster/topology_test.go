package cluster_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/resp"
)

// self, in a topology case's wanted address, stands for the fake node's
// own address.
const self = "self"

// topoCase is a topology reply and what a client makes of it: the owner
// of some slots ("" for none), or an error.
type topoCase struct {
	name  string
	resp3 bool
	// reply is the reply to send, given the fake's port.
	reply   func(port int) string
	want    map[int]string
	wantErr error
}

// nodeOf is a RESP2 node of a shard: name and value pairs, encoded.
func nodeOf(kv ...string) string { return arr(kv...) }

// fixed is a reply that does not depend on the fake's port.
func fixed(reply string) func(int) string { return func(int) string { return reply } }

var shardsCases = []topoCase{
	{
		name:  "one shard",
		reply: fixed(arr(shard([]int{0, 16383}, primary("10.0.0.1", 7000)))),
		want:  map[int]string{0: "10.0.0.1:7000", 16383: "10.0.0.1:7000"},
	},
	{
		name:  "RESP3 maps",
		resp3: true,
		reply: fixed(arr(rmap(
			bulk("slots"), arr(num(0), num(99), num(200), num(16383)),
			bulk("nodes"), arr(rmap(
				bulk("id"), bulk("x"), bulk("port"), num(7000), bulk("ip"), bulk("10.0.0.1"),
				bulk("endpoint"), bulk("10.0.0.1"), bulk("role"), bulk("master"),
				bulk("replication-offset"), num(5), bulk("health"), bulk("online")))),
		)),
		want: map[int]string{0: "10.0.0.1:7000", 99: "10.0.0.1:7000", 100: "", 199: "", 200: "10.0.0.1:7000"},
	},
	{
		name:  "RESP3 null endpoint means the node asked",
		resp3: true,
		reply: fixed(arr(rmap(
			bulk("slots"), arr(num(0), num(16383)),
			bulk("nodes"), arr(rmap(bulk("port"), num(7002), bulk("endpoint"), null3, bulk("ip"), null3,
				bulk("role"), bulk("master"), bulk("health"), bulk("online")))),
		)),
		want: map[int]string{5: "127.0.0.1:7002"},
	},
	{
		name: "empty endpoint and ip mean the node asked, as a lone node sends",
		reply: fixed(arr(shard([]int{0, 16383}, nodeOf(bulk("port"), num(7002), bulk("ip"), bulk(""),
			bulk("endpoint"), bulk(""), bulk("role"), bulk("master"), bulk("health"), bulk("online"))))),
		want: map[int]string{5: "127.0.0.1:7002"},
	},
	{
		name: "two shards, replicas first, several ranges",
		reply: fixed(arr(
			shard([]int{0, 10, 20, 30},
				nodeOf(bulk("port"), num(7003), bulk("endpoint"), bulk("10.0.0.3"), bulk("role"), bulk("replica"), bulk("health"), bulk("online")),
				primary("10.0.0.1", 7000)),
			shard([]int{11, 19, 31, 16383}, primary("10.0.0.2", 7001)),
		)),
		want: map[int]string{0: "10.0.0.1:7000", 10: "10.0.0.1:7000", 11: "10.0.0.2:7001", 25: "10.0.0.1:7000", 16383: "10.0.0.2:7001"},
	},
	{
		name: "a failed primary leaves its slots unmapped; a loading one too",
		reply: fixed(arr(
			shard([]int{0, 99}, nodeOf(bulk("port"), num(7000), bulk("endpoint"), bulk("10.0.0.1"), bulk("role"), bulk("master"), bulk("health"), bulk("failed"))),
			shard([]int{100, 199}, nodeOf(bulk("port"), num(7001), bulk("endpoint"), bulk("10.0.0.2"), bulk("role"), bulk("master"), bulk("health"), bulk("loading"))),
			shard([]int{200, 16383}, primary("10.0.0.3", 7002)),
		)),
		want: map[int]string{0: "", 99: "", 100: "", 200: "10.0.0.3:7002"},
	},
	{
		name: "a shard with replicas alone is unmapped",
		reply: fixed(arr(
			shard([]int{0, 99}, nodeOf(bulk("port"), num(7000), bulk("endpoint"), bulk("10.0.0.1"), bulk("role"), bulk("replica"), bulk("health"), bulk("online"))),
			shard([]int{100, 16383}, primary("10.0.0.3", 7002)),
		)),
		want: map[int]string{0: "", 100: "10.0.0.3:7002"},
	},
	{
		name: "endpoint ? falls back to the ip, else the slots are unmapped",
		reply: fixed(arr(
			shard([]int{0, 99}, nodeOf(bulk("port"), num(7000), bulk("endpoint"), bulk("?"), bulk("ip"), bulk("10.0.0.9"), bulk("role"), bulk("master"))),
			shard([]int{100, 199}, nodeOf(bulk("port"), num(7001), bulk("endpoint"), bulk("?"), bulk("role"), bulk("master"))),
			shard([]int{200, 16383}, primary("10.0.0.3", 7002)),
		)),
		want: map[int]string{0: "10.0.0.9:7000", 100: "", 200: "10.0.0.3:7002"},
	},
	{
		name: "host names and IPv6",
		reply: fixed(arr(
			shard([]int{0, 99}, primary("redis-0.redis.svc", 7000)),
			shard([]int{100, 16383}, primary("::1", 7001)),
		)),
		want: map[int]string{0: "redis-0.redis.svc:7000", 100: "[::1]:7001"},
	},
	{
		name: "the TLS port, when the seed was reached on one",
		reply: func(port int) string {
			return arr(shard([]int{0, 16383}, nodeOf(bulk("port"), num(1234), bulk("tls-port"), num(port),
				bulk("endpoint"), bulk(""), bulk("role"), bulk("master"))))
		},
		want: map[int]string{0: self},
	},
	{
		name: "the plain port, when the seed was reached on one",
		reply: func(port int) string {
			return arr(shard([]int{0, 16383}, nodeOf(bulk("port"), num(port), bulk("tls-port"), num(1234),
				bulk("endpoint"), bulk(""), bulk("role"), bulk("master"))))
		},
		want: map[int]string{0: self},
	},
	{
		name: "a TLS port alone",
		reply: fixed(arr(shard([]int{0, 16383}, nodeOf(bulk("tls-port"), num(7100),
			bulk("endpoint"), bulk("10.0.0.1"), bulk("role"), bulk("master"))))),
		want: map[int]string{0: "10.0.0.1:7100"},
	},
	{
		name:  "unknown fields are skipped; numbers may be strings",
		resp3: true,
		reply: fixed(arr(arr(
			bulk("future"), rmap(bulk("a"), num(1)),
			bulk("slots"), arr(bulk("0"), bulk("16383")),
			bulk("nodes"), arr(nodeOf(bulk("port"), bulk("7000"), bulk("endpoint"), bulk("10.0.0.1"),
				bulk("role"), bulk("master"), bulk("availability-zone"), arr()))))),
		want: map[int]string{100: "10.0.0.1:7000"},
	},
	{name: "no shards", reply: fixed(arr()), wantErr: cluster.ErrNoSlots},
	{name: "no online primary", reply: fixed(arr(shard([]int{0, 16383}, nodeOf(bulk("port"), num(7000), bulk("role"), bulk("master"), bulk("health"), bulk("failed"))))), wantErr: cluster.ErrNoSlots},
	{name: "a shard without slots", reply: fixed(arr(shard(nil, primary("10.0.0.1", 7000)))), wantErr: cluster.ErrNoSlots},

	{name: "not an array", reply: fixed(num(1)), wantErr: resp.ErrProtocol},
	{name: "a string", reply: fixed(bulk("slots")), wantErr: resp.ErrProtocol},
	{name: "shard is a string", reply: fixed(arr(bulk("x"))), wantErr: resp.ErrProtocol},
	{name: "shard has an odd count", reply: fixed(arr(arr(bulk("slots")))), wantErr: resp.ErrProtocol},
	{name: "field name is a number", reply: fixed(arr(arr(num(1), arr()))), wantErr: resp.ErrProtocol},
	{name: "field name is null", reply: fixed(arr(arr(nilBulk, arr()))), wantErr: resp.ErrProtocol},
	{name: "slots is a number", reply: fixed(arr(arr(bulk("slots"), num(0)))), wantErr: resp.ErrProtocol},
	{name: "odd slot count", reply: fixed(arr(shard([]int{0}, primary("10.0.0.1", 7000)))), wantErr: resp.ErrProtocol},
	{name: "slot 16384", reply: fixed(arr(shard([]int{0, 16384}, primary("10.0.0.1", 7000)))), wantErr: resp.ErrProtocol},
	{name: "negative slot", reply: fixed(arr(shard([]int{-1, 5}, primary("10.0.0.1", 7000)))), wantErr: resp.ErrProtocol},
	{name: "huge slot", reply: fixed(arr(arr(bulk("slots"), arr(num(0), ":99999999999999999\r\n")))), wantErr: resp.ErrProtocol},
	{name: "range backwards", reply: fixed(arr(shard([]int{10, 5}, primary("10.0.0.1", 7000)))), wantErr: resp.ErrProtocol},
	{name: "slot not a number", reply: fixed(arr(arr(bulk("slots"), arr(bulk("zero"), num(5))))), wantErr: resp.ErrProtocol},
	{name: "slot is a double", reply: fixed(arr(arr(bulk("slots"), arr(",1.5\r\n", num(5))))), resp3: true, wantErr: resp.ErrProtocol},
	{name: "nodes is a map", resp3: true, reply: fixed(arr(rmap(bulk("nodes"), rmap()))), wantErr: resp.ErrProtocol},
	{name: "node is a number", reply: fixed(arr(shard([]int{0, 5}, num(3)))), wantErr: resp.ErrProtocol},
	{name: "port is an array", reply: fixed(arr(shard([]int{0, 5}, nodeOf(bulk("port"), arr(), bulk("role"), bulk("master"))))), wantErr: resp.ErrProtocol},
	{name: "port 70000", reply: fixed(arr(shard([]int{0, 5}, nodeOf(bulk("port"), num(70000), bulk("role"), bulk("master"))))), wantErr: resp.ErrProtocol},
	{name: "role is a number", reply: fixed(arr(shard([]int{0, 5}, nodeOf(bulk("port"), num(7000), bulk("role"), num(1))))), wantErr: resp.ErrProtocol},
	{name: "health is null", reply: fixed(arr(shard([]int{0, 5}, nodeOf(bulk("health"), nilBulk)))), wantErr: resp.ErrProtocol},
	{name: "endpoint is a URL", reply: fixed(arr(shard([]int{0, 5}, primary("unix:///tmp/x", 7000)))), wantErr: resp.ErrProtocol},
	{name: "endpoint with a space", reply: fixed(arr(shard([]int{0, 5}, primary("a b", 7000)))), wantErr: resp.ErrProtocol},
	{name: "ip with a slash", reply: fixed(arr(shard([]int{0, 5}, nodeOf(bulk("ip"), bulk("10.0.0.1/8"))))), wantErr: resp.ErrProtocol},
	{
		name: "two shards claim a slot",
		reply: fixed(arr(
			shard([]int{0, 100}, primary("10.0.0.1", 7000)),
			shard([]int{100, 16383}, primary("10.0.0.2", 7000)),
		)),
		wantErr: resp.ErrProtocol,
	},
	{name: "not RESP at all", reply: fixed("hello\r\n"), wantErr: resp.ErrProtocol},
}

// slotsNode is a node of a CLUSTER SLOTS range: endpoint, port, id.
func slotsNode(endpoint string, port int) string {
	return arr(endpoint, num(port), bulk("e2b9c3"))
}

var slotsCases = []topoCase{
	{
		name: "ranges with replicas",
		reply: fixed(arr(
			arr(num(0), num(99), slotsNode(bulk("10.0.0.1"), 7000), slotsNode(bulk("10.0.0.4"), 7003)),
			arr(num(100), num(16383), slotsNode(bulk("10.0.0.2"), 7001)),
		)),
		want: map[int]string{0: "10.0.0.1:7000", 99: "10.0.0.1:7000", 100: "10.0.0.2:7001"},
	},
	{
		name:  "null and empty endpoints mean the node asked; ? is unmapped",
		reply: fixed(arr(arr(num(0), num(9), slotsNode(nilBulk, 7000)), arr(num(10), num(19), slotsNode(bulk(""), 7001)), arr(num(20), num(29), slotsNode(bulk("?"), 7002)))),
		want:  map[int]string{0: "127.0.0.1:7000", 10: "127.0.0.1:7001", 20: "", 30: ""},
	},
	{
		name:  "RESP3, with the node's metadata map",
		resp3: true,
		reply: fixed(arr(arr(num(0), num(16383), arr(bulk("host-a"), num(7000), bulk("id"), rmap(bulk("ip"), bulk("10.0.0.1")))))),
		want:  map[int]string{0: "host-a:7000"},
	},
	{name: "no ranges", reply: fixed(arr()), wantErr: cluster.ErrNoSlots},
	{name: "not an array", reply: fixed(bulk("x")), wantErr: resp.ErrProtocol},
	{name: "range is a number", reply: fixed(arr(num(0))), wantErr: resp.ErrProtocol},
	{name: "range without primary", reply: fixed(arr(arr(num(0), num(5)))), wantErr: resp.ErrProtocol},
	{name: "range backwards", reply: fixed(arr(arr(num(5), num(0), slotsNode(bulk("a"), 1)))), wantErr: resp.ErrProtocol},
	{name: "slot 16384", reply: fixed(arr(arr(num(0), num(16384), slotsNode(bulk("a"), 1)))), wantErr: resp.ErrProtocol},
	{name: "primary is a string", reply: fixed(arr(arr(num(0), num(5), bulk("a:1")))), wantErr: resp.ErrProtocol},
	{name: "primary without port", reply: fixed(arr(arr(num(0), num(5), arr(bulk("a"))))), wantErr: resp.ErrProtocol},
	{name: "port 0", reply: fixed(arr(arr(num(0), num(5), slotsNode(bulk("a"), 0)))), wantErr: resp.ErrProtocol},
	{name: "endpoint is a number", reply: fixed(arr(arr(num(0), num(5), arr(num(1), num(7000))))), wantErr: resp.ErrProtocol},
	{name: "endpoint is a URL", reply: fixed(arr(arr(num(0), num(5), slotsNode(bulk("redis://x"), 7000)))), wantErr: resp.ErrProtocol},
	{
		name:    "two ranges claim a slot",
		reply:   fixed(arr(arr(num(0), num(10), slotsNode(bulk("a"), 1)), arr(num(10), num(20), slotsNode(bulk("b"), 1)))),
		wantErr: resp.ErrProtocol,
	},
}

// runTopoCase serves tt's reply from a fake node, to CLUSTER SHARDS or,
// with slots, to CLUSTER SLOTS after an error reply to CLUSTER SHARDS as
// Redis 6 sends, and checks what New makes of it.
func runTopoCase(t *testing.T, tt topoCase, slots bool) {
	n := startNode(t)
	_, port := hostPort(t, n.Addr)
	n.setScript(func(args []string) string {
		switch {
		case isCommand(args, "CLUSTER SHARDS") && slots:
			return errReply("ERR Unknown subcommand or wrong number of arguments for 'SHARDS'. Try CLUSTER HELP.")
		case isCommand(args, "CLUSTER SHARDS"), isCommand(args, "CLUSTER SLOTS"):
			return tt.reply(port)
		}
		return errReply("ERR unexpected")
	})
	var opts []cluster.Option
	if tt.resp3 {
		opts = append(opts, cluster.WithConnOptions(conn.WithRESP3()))
	}
	c, err := cluster.New(testContext(t), []string{n.Addr}, opts...)
	if tt.wantErr != nil {
		require.ErrorIs(t, err, tt.wantErr)
		require.Nil(t, c)
		return
	}
	require.NoError(t, err)
	defer c.Close()
	for slot, want := range tt.want {
		if want == self {
			want = n.Addr
		}
		require.Equal(t, want, c.SlotOwner(slot), "slot %d", slot)
	}
}

func TestTopologyFromShards(t *testing.T) {
	for _, tt := range shardsCases {
		t.Run(tt.name, func(t *testing.T) { runTopoCase(t, tt, false) })
	}
}

func TestTopologyFromSlots(t *testing.T) {
	for _, tt := range slotsCases {
		t.Run(tt.name, func(t *testing.T) { runTopoCase(t, tt, true) })
	}
}

// TestTopologyFailures: a seed that answers with errors to both commands
// is not a cluster node (or not one the client may ask), and New says so
// with the server's replies, which errors.Is can test; the next seed is
// asked.
func TestTopologyFailures(t *testing.T) {
	notCluster := startNode(t)
	notCluster.setScript(func([]string) string { return errReply("ERR This instance has cluster support disabled") })
	_, err := cluster.New(testContext(t), []string{notCluster.Addr})
	require.ErrorIs(t, err, resp.Prefix("ERR"))
	require.Equal(t, []string{"CLUSTER SHARDS", "CLUSTER SLOTS"}, notCluster.commands())

	good := startNode(t)
	good.setScript(func(args []string) string { return allSlotsTo(t, good.Addr) })
	c := newClient(t, []string{notCluster.Addr, good.Addr})
	require.Equal(t, good.Addr, c.SlotOwner(0))
}

// TestSlotsFallbackIsRemembered: once a node answered CLUSTER SHARDS with
// an error and CLUSTER SLOTS with a topology, refreshes ask CLUSTER SLOTS
// alone.
func TestSlotsFallbackIsRemembered(t *testing.T) {
	n := startNode(t)
	_, port := hostPort(t, n.Addr)
	var moved atomic.Bool
	moved.Store(true)
	n.setScript(func(args []string) string {
		switch {
		case isCommand(args, "CLUSTER SHARDS"):
			return errReply("ERR unknown subcommand 'SHARDS'")
		case isCommand(args, "CLUSTER SLOTS"):
			return arr(arr(num(0), num(16383), slotsNode(bulk(""), port)))
		case isCommand(args, "GET k") && moved.Swap(false):
			return errReply(fmt.Sprintf("MOVED %d %s", cluster.Slot("k"), n.Addr))
		}
		return bulk("v")
	})
	c := newClient(t, []string{n.Addr}, cluster.WithRefreshInterval(0))
	v, err := c.Do(testContext(t), "k", "GET", "k")
	require.NoError(t, err)
	require.Equal(t, "v", v.Str)
	require.Equal(t, []string{"CLUSTER SHARDS", "CLUSTER SLOTS", "GET k", "CLUSTER SLOTS", "GET k"}, n.commands())
}

// TestTopologyParsersNeverPanic feeds the parsers thousands of replies
// made by breaking valid ones at random: any type anywhere, any number.
// Each must give a topology or an error of the two kinds a reply can
// cause, never a panic.
func TestTopologyParsersNeverPanic(t *testing.T) {
	rng := newRand()
	var seeds []resp.Value
	for _, cases := range [][]topoCase{shardsCases, slotsCases} {
		for _, tt := range cases {
			if v, err := resp.NewReader(stringReader(tt.reply(7000))).Read(); err == nil {
				seeds = append(seeds, v)
			}
		}
	}
	for i := range 20000 {
		v := mutate(rng, seeds[rng.IntN(len(seeds))], 3)
		for _, slots := range []bool{false, true} {
			err := cluster.ParseTopology(v, "127.0.0.1:7000", slots)
			if err != nil && !errors.Is(err, resp.ErrProtocol) && !errors.Is(err, cluster.ErrNoSlots) {
				t.Fatalf("case %d: %v gives %v", i, v, err)
			}
		}
	}
}

// FuzzTopology parses any RESP reply as both topology replies.
func FuzzTopology(f *testing.F) {
	for _, cases := range [][]topoCase{shardsCases, slotsCases} {
		for _, tt := range cases {
			f.Add([]byte(tt.reply(7000)))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := resp.NewReader(stringReader(string(b))).Read()
		if err != nil {
			return
		}
		for _, slots := range []bool{false, true} {
			err := cluster.ParseTopology(v, "127.0.0.1:7000", slots)
			if err != nil && !errors.Is(err, resp.ErrProtocol) && !errors.Is(err, cluster.ErrNoSlots) {
				t.Fatalf("%v gives %v", v, err)
			}
		}
	})
}
