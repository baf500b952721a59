package integration_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redisproc"
)

const (
	// imageEnv names one image to run the suite on; imagesEnv a
	// comma-separated list, each a subtest.
	imageEnv  = "BATON_REDIS_IMAGE"
	imagesEnv = "BATON_REDIS_IMAGES"
	// workerEnv is set in the suite's child processes (the soak's
	// workers, the process killed while it holds), which start no
	// servers of their own.
	workerEnv = "BATON_INTEGRATION_WORKER"
	// processEnv, set to 1, runs the suite on redis-server processes
	// even where Docker answers.
	processEnv = "BATON_INTEGRATION_PROCESS"
)

// defaultImages are tried in order when no image is named: the official
// image, then the one make redis-image builds.
var defaultImages = []string{"redis:7.4", "baton-redis:local"}

// suite is set up by TestMain before any test runs, and read-only after.
var suite struct {
	backends    []*backend
	unavailable error            // why there is no backend, when there is none
	pool        *dockertest.Pool // nil without a Docker engine
	runLabel    string           // the value of containerLabel on this run's containers
}

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(workerEnv) == "" {
		setUp()
	}
	stop := func() {}
	if os.Getenv(workerEnv) == "" {
		stop = purgeOnInterrupt()
	}
	code := hangreport.Watch(m).Run()
	stop()
	purgeRun()
	if suite.pool != nil {
		// The engine's client keeps its connections for reuse.
		suite.pool.Client.HTTPClient.CloseIdleConnections()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// setUp picks the backends and prints the log's first lines: which
// backend, which image, which server version.
func setUp() {
	label := make([]byte, 8)
	_, _ = rand.Read(label)
	suite.runLabel = hex.EncodeToString(label)

	named := namedImages()
	pool, noDocker := dockerPool()
	if pool != nil {
		purgeOrphans(pool)
	}
	if os.Getenv(processEnv) == "1" {
		pool, noDocker = nil, fmt.Errorf("%s=1", processEnv)
		named = nil
	}
	switch {
	case pool != nil && len(named) > 0:
		suite.pool = pool
		for _, image := range named {
			suite.backends = append(suite.backends, containerBackend(pool, image))
		}
	case pool != nil:
		suite.pool = pool
		for _, image := range defaultImages {
			if _, err := pool.Client.InspectImage(image); err == nil {
				suite.backends = append(suite.backends, containerBackend(pool, image))
				break
			}
		}
		if len(suite.backends) == 0 {
			noDocker = fmt.Errorf("Docker answers, but none of %s is present locally and nothing is pulled (make redis-image builds baton-redis:local)",
				strings.Join(defaultImages, ", "))
		}
	case len(named) > 0:
		fmt.Printf("integration: %s names %s, but %v\n", imagesEnvName(), strings.Join(named, ", "), noDocker)
		suite.unavailable = fmt.Errorf("no Docker engine to run %s: %w", strings.Join(named, ", "), noDocker)
		return
	}
	if len(suite.backends) == 0 {
		b, err := localBackend(noDocker)
		if err != nil {
			suite.unavailable = err
			fmt.Println("integration: no server to test:", err)
			return
		}
		suite.backends = append(suite.backends, b)
	}
	for _, b := range suite.backends {
		fmt.Println("integration:", b.about)
	}
}

// namedImages reads BATON_REDIS_IMAGES, else BATON_REDIS_IMAGE.
func namedImages() []string {
	var images []string
	for _, image := range strings.Split(os.Getenv(imagesEnv), ",") {
		if image = strings.TrimSpace(image); image != "" {
			images = append(images, image)
		}
	}
	if len(images) == 0 {
		if image := strings.TrimSpace(os.Getenv(imageEnv)); image != "" {
			images = append(images, image)
		}
	}
	return images
}

func imagesEnvName() string {
	if os.Getenv(imagesEnv) != "" {
		return imagesEnv
	}
	return imageEnv
}

// dockerPool returns a pool on the engine, or nil and why there is none.
func dockerPool() (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("no Docker engine: %w", err)
	}
	if err := pool.Client.Ping(); err != nil {
		return nil, fmt.Errorf("no Docker engine answers: %w", err)
	}
	return pool, nil
}

// containerBackend is the backend for image, with the version its server
// reports; an image that is not present, or whose server does not start,
// gives a backend whose every test fails saying so.
func containerBackend(pool *dockertest.Pool, image string) *backend {
	b := dockerBackend(pool, image, "")
	engine := "?"
	if env, err := pool.Client.Version(); err == nil {
		engine = env.Get("Version")
	}
	if _, err := pool.Client.InspectImage(image); err != nil {
		b.broken = fmt.Errorf("image %s is not present locally, and nothing is pulled: build or load it first (make redis-image builds baton-redis:local): %w", image, err)
		b.about = "backend docker " + engine + ", image " + image + ": " + b.broken.Error()
		return b
	}
	dir, err := os.MkdirTemp("", "baton-integration-")
	if err != nil {
		b.broken = err
		return b
	}
	defer os.RemoveAll(dir)
	srv, err := startContainer(pool, image, dir, spec{})
	if err != nil {
		b.broken = err
		b.about = "backend docker " + engine + ", image " + image + ": " + err.Error()
		return b
	}
	defer srv.purge()
	b.about = fmt.Sprintf("backend docker %s, image %s, server %s", engine, image, serverVersion(srv.addr))
	return b
}

// localBackend is the process backend, for when no container can run;
// noDocker says why not.
func localBackend(noDocker error) (*backend, error) {
	srv, err := redisproc.Start()
	if err != nil {
		if errors.Is(err, redisproc.ErrNoBinary) {
			return nil, fmt.Errorf("%v, and %w", noDocker, err)
		}
		return nil, err
	}
	defer srv.Stop()
	bin, _ := exec.LookPath("redis-server")
	return processBackend(fmt.Sprintf("backend process (%v), %s from %s", noDocker, serverVersion(srv.Addr), bin)), nil
}

// serverVersion reads "redis 7.0.15" or "valkey 8.0.1" from INFO server.
func serverVersion(addr string) string {
	v, err := redisproc.Do(addr, "", "INFO", "server")
	if err != nil {
		return "version unknown: " + err.Error()
	}
	info := map[string]string{}
	for line := range strings.Lines(v.Str) {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			info[k] = val
		}
	}
	name := "redis"
	if info["server_name"] != "" {
		name = info["server_name"]
	}
	version := info["redis_version"]
	if info["valkey_version"] != "" {
		version = info["valkey_version"]
	}
	return name + " " + version
}

// purgeOnInterrupt removes this run's containers and networks when the
// run is interrupted, then exits as the signal would. The returned func
// stops the watch and waits for its goroutine.
func purgeOnInterrupt() (stop func()) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case sig := <-signals:
			fmt.Fprintf(os.Stderr, "integration: %v: removing this run's containers and networks\n", sig)
			purgeRun()
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(signals)
		close(done)
		<-ended
	}
}

// purgeOrphans removes the containers and networks of earlier runs whose
// process is gone without removing them: one killed, or stopped by go
// test's -timeout, which exits without running any cleanup.
func purgeOrphans(pool *dockertest.Pool) {
	containers, err := pool.Client.ListContainers(docker.ListContainersOptions{
		All:     true,
		Filters: map[string][]string{"label": {containerLabel}},
	})
	if err != nil {
		return // the run's own containers are what matters
	}
	for _, c := range containers {
		pid, err := strconv.Atoi(c.Labels[pidLabel])
		if err != nil || redisproc.Alive(pid) {
			continue
		}
		_ = pool.Client.RemoveContainer(docker.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true})
		fmt.Printf("integration: removed container %.12s, left by an earlier run (process %d) that is gone\n", c.ID, pid)
	}
	purgeOrphanNetworks(pool)
}

// purgeRun removes every container and network of this run that is still
// there.
func purgeRun() {
	if suite.pool == nil {
		return
	}
	containers, err := suite.pool.Client.ListContainers(docker.ListContainersOptions{
		All:     true,
		Filters: map[string][]string{"label": {containerLabel + "=" + suite.runLabel}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: listing this run's containers:", err)
		return
	}
	for _, c := range containers {
		_ = suite.pool.Client.RemoveContainer(docker.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true})
	}
	purgeRunNetworks(suite.pool)
}
