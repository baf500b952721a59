package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/batonlock/baton/internal/redisproc"
)

// throwawayConfig is the throwaway server's configuration: no
// persistence, so that no fork or disk write lands in a measurement.
var throwawayConfig = []string{`save ""`, `appendonly no`}

// target is the server the bench runs against.
type target struct {
	addr  string
	about string
	stop  func() // removes a throwaway server; nil for a given one
}

// findTarget returns the server at addr, or starts a throwaway
// redis-server from PATH when addr is empty.
func findTarget(addr string) (target, error) {
	if addr != "" {
		return target{addr: addr, about: "given with --addr"}, nil
	}
	srv, err := redisproc.Start(redisproc.WithConfig(throwawayConfig...))
	if err != nil {
		return target{}, fmt.Errorf("starting a throwaway redis-server: %w", err)
	}
	return target{addr: srv.Addr, about: "a throwaway redis-server from PATH", stop: srv.Stop}, nil
}

// serverVersion returns the server's name and version as INFO says them,
// such as "redis 7.0.15" or "valkey 8.0.1".
func serverVersion(ctx context.Context, addr string) (string, error) {
	c, err := newGoRedis(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	name, version := "redis", ""
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "server_name":
			name = v
		case "valkey_version":
			version = v
		case "redis_version":
			if version == "" {
				version = v
			}
		}
	}
	return name + " " + version, nil
}
