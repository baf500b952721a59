package redistest

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// RequireRedisEnv names the environment variable that, set to 1, turns a
// missing redis-server from a skipped test into a failed one, so that CI
// cannot pass by testing nothing.
const RequireRedisEnv = "BATON_REQUIRE_REDIS"

const (
	// bootAttempts bounds how often Start picks new ports, and Restart
	// waits for its ports, when another process took one first.
	bootAttempts = 5
	// restartBackoff is how long Restart waits before trying its ports
	// again; unlike Start it cannot move to others.
	restartBackoff = 200 * time.Millisecond
	// maxSocketPath keeps the unix socket path inside sun_path (104 bytes
	// on the BSDs, 108 on Linux) with room to spare.
	maxSocketPath = 100
)

// Server is a redis-server process started for one test, listening on
// loopback only. Its address fields are set by Start and stay the same
// across Restart.
type Server struct {
	Addr       string // 127.0.0.1:port
	UnixSocket string // socket path; "" unless WithUnixSocket
	TLSAddr    string // 127.0.0.1:port of the TLS listener; "" unless WithTLS

	// Set by Start, read-only afterwards.
	bin      string      // the redis-server binary
	dir      string      // temporary: config, log, socket, certificates, data
	confPath string      // the file is rewritten by each boot, under mu
	logPath  string      // every run appends to it
	lines    []string    // from WithConfig
	password string      // from a requirepass line, for Do
	cluster  bool        // from WithCluster
	tls      *tlsFiles   // nil without WithTLS
	tlsConf  *tls.Config // trusts the throwaway CA; nil without WithTLS
	port     int
	tlsPort  int

	mu   sync.Mutex // serializes Stop and Restart
	proc *process   // the running server, nil when stopped; guarded by mu
}

// Start starts a redis-server for the test and returns once it answers
// PING. The server is stopped, and its files removed, at t.Cleanup. Start
// skips the test if no redis-server is on PATH, or fails it if
// RequireRedisEnv is set to 1. Like t.Fatal, it must be called on the
// test's goroutine.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		const msg = "redistest: redis-server not found on PATH; install it (apt-get install redis-server) to run this test"
		if os.Getenv(RequireRedisEnv) == "1" {
			t.Fatalf("%s (%s=1 requires it)", msg, RequireRedisEnv)
		}
		t.Skipf("%s, or set %s=1 to fail instead of skipping", msg, RequireRedisEnv)
	}
	var c config
	for _, o := range opts {
		o(&c)
	}

	// Not t.TempDir: its path holds the test's name and can push a unix
	// socket's path past what sun_path holds.
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	// Registered before Stop, so it runs after: cleanups run last first.
	t.Cleanup(func() { os.RemoveAll(dir) })

	s := &Server{
		bin:      bin,
		dir:      dir,
		confPath: filepath.Join(dir, "redis.conf"),
		logPath:  filepath.Join(dir, "redis.log"),
		lines:    c.lines,
		password: requirePass(c.lines),
		cluster:  c.cluster,
	}
	if c.unix {
		s.UnixSocket = filepath.Join(dir, "redis.sock")
		if len(s.UnixSocket) >= maxSocketPath {
			t.Fatalf("redistest: unix socket path %q is %d bytes, over %d; point TMPDIR at a shorter directory",
				s.UnixSocket, len(s.UnixSocket), maxSocketPath-1)
		}
	}
	if c.tls {
		files, conf, err := writeTLSFiles(dir)
		if err != nil {
			t.Fatalf("redistest: making TLS certificates: %v", err)
		}
		s.tls, s.tlsConf = &files, conf
	}
	t.Cleanup(s.Stop)

	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2, c.cluster)
		if err != nil {
			t.Fatalf("redistest: picking ports: %v", err)
		}
		s.port, s.tlsPort = ports[0], ports[1]
		p, err := s.boot()
		if err == nil {
			s.proc = p
			break
		}
		if !errors.Is(err, errPortClash) || attempt == bootAttempts {
			t.Fatalf("redistest: %v", err)
		}
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	if c.tls {
		s.TLSAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort))
	}
	return s
}

// TLSConfig returns a client configuration that trusts the server's
// throwaway CA, or nil without WithTLS. Each call returns a new copy, free
// to modify. The certificate names both 127.0.0.1 and localhost.
func (s *Server) TLSConfig() *tls.Config {
	if s.tlsConf == nil {
		return nil
	}
	return s.tlsConf.Clone()
}

// Stop stops the server: SIGTERM, then SIGKILL if it has not exited within
// 5 seconds. It returns once the process has exited. Stopping a stopped
// server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
}

// Restart stops the server, if it is running, and starts it again with
// the same configuration on the same addresses, returning once it answers
// PING. The data is not kept: there is no persistence. Clients see their
// connections drop and must reconnect. Restart must be called on the test's
// goroutine.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
	var err error
	for attempt := 1; attempt <= bootAttempts; attempt++ {
		var p *process
		if p, err = s.boot(); err == nil {
			s.proc = p
			return
		}
		if !errors.Is(err, errPortClash) {
			break
		}
		time.Sleep(restartBackoff)
	}
	t.Fatalf("redistest: restarting: %v", err)
}
