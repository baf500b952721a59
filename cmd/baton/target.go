package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/alicebob/miniredis/v2"

	"github.com/batonlock/baton/internal/redisproc"
)

// target is the server a command runs against, and how it was found.
type target struct {
	addr string
	// kind is "given", "redis-server", "docker" or "embedded".
	kind string
	// about is the first line a command prints: which server it used.
	about string
	// notifications is false where the server cannot publish keyspace
	// events (the embedded server): fast mode cannot run there.
	notifications bool
	// stop removes a throwaway server; nil for a given one.
	stop func()
}

// announce says which server the command uses, as the first line of its
// output: on stdout above a table, on stderr when stdout is for JSON.
func (t *target) announce(out outputs, asJSON bool) {
	if asJSON {
		fmt.Fprintln(out.stderr, t.about)
	} else {
		fmt.Fprintln(out.stdout, t.about)
	}
}

// Close removes the server if the command started it.
func (t *target) Close() {
	if t.stop != nil {
		t.stop()
		t.stop = nil
	}
}

// The throwaway servers' configuration: no persistence, and keyspace
// events for string writes ($) besides those the fast mode turns on, so
// that the demo can count writes in the server's order.
var throwawayConfig = []string{`save ""`, `appendonly no`, `notify-keyspace-events "K$gxe"`}

// findTarget returns the server at addr, or, when addr is empty, starts a
// throwaway one: a redis-server from PATH, else a container from a local
// image when a Docker engine answers, else a server embedded in this
// process. Each step that is skipped is said on notes.
func findTarget(ctx context.Context, addr string, notes io.Writer) (*target, error) {
	if addr != "" {
		return &target{addr: addr, kind: "given", about: "server: " + redactAddr(addr) + " (given with --addr)", notifications: true}, nil
	}
	srv, err := redisproc.Start(redisproc.WithConfig(throwawayConfig...))
	if err == nil {
		return &target{
			addr: srv.Addr, kind: "redis-server", notifications: true, stop: srv.Stop,
			about: fmt.Sprintf("server: a throwaway redis-server from PATH on %s, removed afterwards", srv.Addr),
		}, nil
	}
	if !errors.Is(err, redisproc.ErrNoBinary) {
		return nil, fmt.Errorf("starting a throwaway redis-server: %w", err)
	}
	t, reason := dockerTarget(ctx)
	if t != nil {
		return t, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	fmt.Fprintf(notes, "no redis-server on PATH; %s\n", reason)
	return embeddedTarget()
}

// embeddedTarget starts an in-process server. It runs Lua and pub/sub but
// publishes no keyspace events.
func embeddedTarget() (*target, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("starting the embedded server: %w", err)
	}
	return &target{
		addr: m.Addr(), kind: "embedded", stop: m.Close,
		about: fmt.Sprintf("server: embedded in this process (miniredis) on %s: no redis-server on PATH and no local Docker image", m.Addr()),
	}, nil
}

// redisImages are the images the Docker fallback looks for, first found
// first: the one BATON_REDIS_IMAGE names, else the official image, else
// the one `make redis-image` builds.
func redisImages() []string {
	if v := strings.TrimSpace(os.Getenv("BATON_REDIS_IMAGE")); v != "" {
		return []string{v}
	}
	return []string{"redis:7.4", localRedisImage}
}

// localRedisImage is what `make redis-image` builds from the distribution's
// redis-server.
const localRedisImage = "baton-redis:local"
