package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/batonlock/baton/internal/redisproc"
)

// throwawayConfig is the throwaway servers' configuration: no
// persistence, so that no fork or disk write lands in a measurement.
var throwawayConfig = []string{`save ""`, `appendonly no`}

// ioThreadsConfig is scenario 6's server: the reads and writes of
// clients' sockets spread over I/O threads, under which the order of
// replies that baton's fast mode leans on is not guaranteed.
var ioThreadsConfig = []string{"io-threads 4", "io-threads-do-reads yes"}

// serverSpec is one server the bench runs scenarios on.
type serverSpec struct {
	label string // the report's heading
	slug  string // the plots' file names
	addr  string // a server given with --addr; empty for a throwaway one
	opts  []redisproc.Option
	// scenarios are those to run on this server.
	scenarios map[int]bool
}

// servers returns the servers c asks for, in order: the one given with
// --addr or a throwaway redis-server from PATH, for every scenario but 6;
// then, for scenario 6, a throwaway redis-server with I/O threads and one
// of --server-bin's binary, each for scenarios 1, 3, 4 and 5 where c
// selects them.
func (c config) servers() []serverSpec {
	first := maps.Clone(c.scenarios)
	delete(first, 6)
	if c.addr != "" {
		return []serverSpec{{label: "The server given with --addr", slug: "given", addr: c.addr, scenarios: first}}
	}
	out := []serverSpec{{
		label: "redis-server from PATH, default configuration", slug: "default",
		opts: []redisproc.Option{redisproc.WithConfig(throwawayConfig...)}, scenarios: first,
	}}
	if !c.scenarios[6] {
		return out
	}
	again := map[int]bool{}
	for _, n := range []int{1, 3, 4, 5} {
		if c.scenarios[n] {
			again[n] = true
		}
	}
	out = append(out, serverSpec{
		label: "redis-server from PATH, " + strings.Join(ioThreadsConfig, ", "), slug: "io-threads",
		opts:      []redisproc.Option{redisproc.WithConfig(append(throwawayConfig, ioThreadsConfig...)...)},
		scenarios: again,
	})
	if c.serverBin != "" {
		out = append(out, serverSpec{
			label: filepath.Base(c.serverBin) + " (--server-bin), default configuration", slug: "server-bin",
			opts:      []redisproc.Option{redisproc.WithBinary(c.serverBin), redisproc.WithConfig(throwawayConfig...)},
			scenarios: again,
		})
	}
	return out
}

// start returns the address of s's server, starting a throwaway one where
// s names none, and the function that stops it.
func (s serverSpec) start() (addr string, stop func(), err error) {
	if s.addr != "" {
		return s.addr, func() {}, nil
	}
	srv, err := redisproc.Start(s.opts...)
	if err != nil {
		return "", nil, fmt.Errorf("starting a throwaway server (%s): %w", s.label, err)
	}
	return srv.Addr, srv.Stop, nil
}

// serverInfo returns the server's name and version as INFO says them,
// such as "redis 7.0.15" or "valkey 8.0.1", and its process id.
func serverInfo(ctx context.Context, addr string) (version string, pid int, err error) {
	c, err := newGoRedis(ctx, addr)
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", 0, err
	}
	fields := infoFields(info)
	name, version := cmp.Or(fields["server_name"], "redis"), cmp.Or(fields["valkey_version"], fields["redis_version"])
	pid, _ = strconv.Atoi(fields["process_id"])
	return name + " " + version, pid, nil
}
