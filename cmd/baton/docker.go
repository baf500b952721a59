package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"

	"github.com/batonlock/baton/internal/redisproc"
)

// dockerReadyTimeout bounds how long a container may take to answer PING.
const dockerReadyTimeout = 30 * time.Second

// dockerTarget starts a throwaway container from the first of redisImages
// present locally. It pulls nothing. It returns nil and the reason when no
// engine answers or no image is there.
func dockerTarget(ctx context.Context) (*target, string) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, "no Docker engine (" + err.Error() + ")"
	}
	if err := pool.Client.PingWithContext(ctx); err != nil {
		return nil, "no Docker engine answers"
	}
	image := ""
	for _, name := range redisImages() {
		if _, err := pool.Client.InspectImage(name); err == nil {
			image = name
			break
		}
	}
	if image == "" {
		return nil, fmt.Sprintf("Docker answers but none of %s is present locally (make redis-image builds one; nothing is pulled)",
			strings.Join(redisImages(), ", "))
	}
	repo, tag, _ := strings.Cut(image, ":")
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: repo,
		Tag:        tag,
		// Flags alone: the official image's entrypoint and that of
		// make redis-image both run redis-server with them.
		Cmd: []string{"--save", "", "--appendonly", "no", "--protected-mode", "no",
			"--notify-keyspace-events", "K$gxe"},
		ExposedPorts: []string{"6379/tcp"},
		// Loopback only: the server runs without a password.
		PortBindings: map[docker.Port][]docker.PortBinding{"6379/tcp": {{HostIP: "127.0.0.1", HostPort: "0"}}},
	}, func(hc *docker.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = docker.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return nil, fmt.Sprintf("Docker could not start %s: %v", image, err)
	}
	stop := func() { _ = pool.Purge(res) }
	addr := "127.0.0.1:" + res.GetPort("6379/tcp")
	ready, cancel := context.WithTimeout(ctx, dockerReadyTimeout)
	defer cancel()
	if err := redisproc.WaitPing(ready, addr); err != nil {
		stop()
		return nil, fmt.Sprintf("the %s container did not answer on %s: %v", image, addr, err)
	}
	return &target{
		addr: addr, kind: "docker", notifications: true, stop: stop,
		about: fmt.Sprintf("server: a throwaway %s container on %s, removed afterwards", image, addr),
	}, ""
}
