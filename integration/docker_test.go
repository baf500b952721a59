package integration_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"

	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/resp"
)

const (
	// containerLabel marks every container the suite starts, so that
	// an interrupted run can find and remove them.
	containerLabel = "baton.integration"
	// pidLabel holds the id of the process that started the container,
	// so that a later run can tell the containers of a dead run.
	pidLabel = "baton.integration.pid"
	// readyTimeout bounds how long a container may take to answer PING.
	readyTimeout = 30 * time.Second
	// portAttempts bounds how often a container is started again on
	// other host ports when one was taken between picking and binding.
	portAttempts = 3
)

// dockerServer is a container of a Redis image whose ports are bound to
// fixed loopback ports of the host, so that its addresses survive a
// restart.
type dockerServer struct {
	pool    *dockertest.Pool
	res     *dockertest.Resource
	addr    string
	tlsAddr string
	tlsConf *tls.Config

	mu     sync.Mutex // serializes Restart, Pause, Resume and the purge
	thawer *thawer    // ends the pause in force; nil when none; guarded by mu
}

// thawer unpauses a container when its pause is over, or at once when
// cancel is closed, then closes done. Its dockerServer owns it.
type thawer struct {
	cancel chan struct{}
	done   chan struct{}
}

// dockerBackend starts each server as a container of image, through pool.
func dockerBackend(pool *dockertest.Pool, image, about string) *backend {
	return &backend{
		name: image, about: about,
		start: func(t *testing.T, s spec) server {
			t.Helper()
			if s.unix {
				t.Fatal("a unix socket needs the process backend")
			}
			srv, err := startContainer(pool, image, t.TempDir(), s)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.purge)
			return srv
		},
		startCluster: func(t *testing.T, primaries, replicasEach int) clusterUnderTest {
			t.Helper()
			return startDockerCluster(t, pool, image, primaries, replicasEach)
		},
		startSentinels: func(t *testing.T) sentinelsUnderTest {
			t.Helper()
			return startDockerSentinels(t, pool, image)
		},
	}
}

// startContainer writes the server's redis.conf (and TLS files) to dir,
// mounts dir at /conf, and runs image with that file, returning once the
// server answers PING. A port taken before the container bound it makes
// it try other ports.
func startContainer(pool *dockertest.Pool, image, dir string, s spec) (*dockerServer, error) {
	srv := &dockerServer{pool: pool}
	conf := containerConf(s)
	if s.tls {
		files, clientConf, err := redisproc.WriteTLSFiles(dir)
		if err != nil {
			return nil, fmt.Errorf("making TLS certificates: %w", err)
		}
		srv.tlsConf = clientConf
		conf = append(conf,
			"tls-port 6380",
			"tls-cert-file /conf/"+filepath.Base(files.Cert),
			"tls-key-file /conf/"+filepath.Base(files.Key),
			"tls-ca-cert-file /conf/"+filepath.Base(files.CACert),
			"tls-auth-clients no")
	}
	if err := writeConf(dir, conf); err != nil {
		return nil, err
	}
	var err error
	for attempt := 1; attempt <= portAttempts; attempt++ {
		var ports []int
		if ports, err = redisproc.FreePorts(2); err != nil {
			return nil, err
		}
		bindings := map[docker.Port][]docker.PortBinding{
			"6379/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(ports[0])}},
		}
		exposed := []string{"6379/tcp"}
		if s.tls {
			bindings["6380/tcp"] = []docker.PortBinding{{HostIP: "127.0.0.1", HostPort: strconv.Itoa(ports[1])}}
			exposed = append(exposed, "6380/tcp")
		}
		srv.res, err = runContainer(pool, image, dir, func(o *dockertest.RunOptions) {
			o.ExposedPorts, o.PortBindings = exposed, bindings
		})
		if err != nil {
			continue // most likely a port taken meanwhile
		}
		srv.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		if s.tls {
			srv.tlsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
		}
		if err = srv.waitReady(); err != nil {
			srv.purge()
			return nil, err
		}
		return srv, nil
	}
	return nil, fmt.Errorf("starting a container of %s: %w", image, err)
}

// writeConf writes conf as dir's redis.conf, for a container to mount.
func writeConf(dir string, conf []string) error {
	// The official image runs redis-server as its own user, which must
	// be able to read the mounted files.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o644)
}

// runContainer runs image on the redis.conf that writeConf wrote to dir,
// mounted at /conf, with the suite's labels, never restarted by the
// engine and with no port of the host but those more binds; more sets
// what else the container needs (ports, a network). It returns once the
// container runs, not once its server answers.
func runContainer(pool *dockertest.Pool, image, dir string, more func(*dockertest.RunOptions)) (*dockertest.Resource, error) {
	repo, tag := splitImage(image)
	opts := &dockertest.RunOptions{
		Repository: repo, Tag: tag,
		// A config file as the only argument: the official images'
		// entrypoint and make redis-image's both run redis-server with
		// it.
		Cmd:    []string{"/conf/redis.conf"},
		Mounts: []string{dir + ":/conf:ro"},
		Labels: suiteLabels(),
	}
	more(opts)
	return pool.RunWithOptions(opts, func(hc *docker.HostConfig) {
		hc.RestartPolicy = docker.RestartPolicy{Name: "no"}
		hc.PublishAllPorts = false
	})
}

// suiteLabels are the labels of every container and network the suite
// makes: this run's, and the process that made it, so that an
// interrupted run and a later one can find and remove them.
func suiteLabels() map[string]string {
	return map[string]string{containerLabel: suite.runLabel, pidLabel: strconv.Itoa(os.Getpid())}
}

// containerConf is the redis.conf of a container: defaults a test may
// override, its lines, then what the addresses depend on.
func containerConf(s spec) []string {
	conf := []string{`save ""`, "appendonly no"}
	conf = append(conf, s.config...)
	return append(conf, "bind 0.0.0.0", "port 6379", "protected-mode no", "dir /data", "daemonize no")
}

// splitImage splits "repo[:tag]" at the tag's colon, not at a registry
// port's; a missing tag is latest.
func splitImage(image string) (repo, tag string) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return image, "latest"
	}
	return image[:i], image[i+1:]
}

// waitReady waits until the server answers PING, within readyTimeout.
func (d *dockerServer) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	return redisproc.WaitPing(ctx, d.addr)
}

func (d *dockerServer) Addr() string       { return d.addr }
func (d *dockerServer) TLSAddr() string    { return d.tlsAddr }
func (d *dockerServer) UnixSocket() string { return "" }
func (d *dockerServer) TLSConfig() *tls.Config {
	if d.tlsConf == nil {
		return nil
	}
	return d.tlsConf.Clone()
}

func (d *dockerServer) Do(t testing.TB, args ...string) resp.Value {
	t.Helper()
	v, err := redisproc.Do(d.addr, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (d *dockerServer) Restart(t testing.TB) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.endPause()
	// No grace: as a crash would, with nothing persisted.
	if err := d.pool.Client.RestartContainer(d.res.Container.ID, 0); err != nil {
		t.Fatalf("restarting the container: %v", err)
	}
	if err := d.waitReady(); err != nil {
		t.Fatal(err)
	}
}

func (d *dockerServer) Pause(t testing.TB, dur time.Duration) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.endPause()
	if err := d.pool.Client.PauseContainer(d.res.Container.ID); err != nil {
		t.Fatalf("pausing the container: %v", err)
	}
	th := &thawer{cancel: make(chan struct{}), done: make(chan struct{})}
	d.thawer = th
	go func() {
		defer close(th.done)
		timer := time.NewTimer(dur)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-th.cancel:
		}
		d.unpause()
	}()
}

func (d *dockerServer) Resume() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.endPause()
}

// endPause stops the thawer, which unpauses on its way out. The caller
// holds d.mu.
func (d *dockerServer) endPause() {
	if d.thawer == nil {
		return
	}
	close(d.thawer.cancel)
	<-d.thawer.done
	d.thawer = nil
}

// unpause unpauses the container; one that is not paused (any more) is
// not an error.
func (d *dockerServer) unpause() {
	err := d.pool.Client.UnpauseContainer(d.res.Container.ID)
	var apiErr *docker.Error
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
		return // not paused
	}
	if err != nil {
		// The purge removes the container whatever its state.
		fmt.Fprintf(os.Stderr, "integration: unpausing %s: %v\n", d.res.Container.Name, err)
	}
}

// purge ends the pause and removes the container with its volumes.
func (d *dockerServer) purge() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.endPause()
	_ = d.pool.Purge(d.res)
}
