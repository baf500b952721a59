package redisproc

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

var (
	// ErrNoBinary is returned by Start when there is no redis-server on
	// PATH to run.
	ErrNoBinary = errors.New("redisproc: redis-server not found on PATH")
	// ErrStopped is returned by Restart after Stop, and by Pause whenever
	// no process runs: after Stop, or after a Restart that failed.
	ErrStopped = errors.New("redisproc: server stopped")
)

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

// Server is a redis-server process listening on loopback only. Its address
// fields are set by Start and stay the same across Restart.
type Server struct {
	Addr       string // 127.0.0.1:port
	UnixSocket string // socket path; "" unless WithUnixSocket
	TLSAddr    string // 127.0.0.1:port of the TLS listener; "" unless WithTLS

	// Set by Start, read-only afterwards.
	bin      string      // the redis-server binary
	dir      string      // temporary: config, log, socket, certificates, data
	confPath string      // the file is rewritten by each boot, under mu
	logPath  string      // every run appends to it
	lines    []string    // from WithConfig; replaced by restartWith, under mu
	password string      // from a requirepass line, for Do
	cluster  clusterMode // from WithCluster, or StartCluster's
	tls      *TLSFiles   // nil without WithTLS
	tlsConf  *tls.Config // trusts the throwaway CA; nil without WithTLS
	port     int
	tlsPort  int

	mu      sync.Mutex // serializes Stop, Restart, Pause and Resume
	proc    *process   // the running server, nil when stopped; guarded by mu
	paused  *thaw      // ends the pause in force, nil when none; guarded by mu
	stopped bool       // Stop has run; guarded by mu
}

// Start starts a redis-server from PATH, or WithBinary's, in a temporary
// directory of its own, on loopback ports that were free, and returns
// once it answers PING.
// When another process takes a port before the server binds it, Start
// tries again with other ports. On failure nothing it made is left behind;
// the error quotes the tail of the server's log where there is one, and
// wraps ErrNoBinary when there is no redis-server to run. The caller must
// call Stop.
func Start(opts ...Option) (*Server, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	bin, err := c.binary()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir("redisproc")
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	s, err := start(bin, dir, c)
	if err != nil {
		// Every boot that failed has stopped its process: the directory
		// is all that is left.
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	return s, nil
}

// start makes the server's files in dir and boots it.
func start(bin, dir string, c config) (*Server, error) {
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
			return nil, fmt.Errorf("unix socket path %q is %d bytes, over %d; point TMPDIR at a shorter directory",
				s.UnixSocket, len(s.UnixSocket), maxSocketPath-1)
		}
	}
	switch {
	case c.shared != nil:
		files := c.shared.files
		s.tls, s.tlsConf = &files, c.shared.conf
	case c.tls:
		files, conf, err := WriteTLSFiles(dir)
		if err != nil {
			return nil, fmt.Errorf("making TLS certificates: %w", err)
		}
		s.tls, s.tlsConf = &files, conf
	}
	for attempt := 1; ; attempt++ {
		bus := noBusPort
		if c.cluster != noCluster {
			bus = withBusPort
		}
		ports, err := freePorts(2, bus)
		if err != nil {
			return nil, fmt.Errorf("picking ports: %w", err)
		}
		s.port, s.tlsPort = ports[0], ports[1]
		p, err := s.boot()
		if err == nil {
			s.proc = p
			break
		}
		if !errors.Is(err, errPortClash) || attempt == bootAttempts {
			return nil, err
		}
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	if c.tls {
		s.TLSAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort))
	}
	return s, nil
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

// Stop stops the server for good: SIGTERM, then SIGKILL if it has not
// exited within 5 seconds, and once it has, removes its temporary
// directory. Stopping a stopped server does nothing; concurrent calls
// return once the first has finished.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	s.halt()
	// A directory that cannot be removed is left in the system's
	// temporary directory; the caller, done with the server, could do
	// nothing more about it.
	_ = os.RemoveAll(s.dir)
}

// Restart stops the server, if it is running, and starts it again with
// the same configuration on the same addresses, returning once it answers
// PING. The data is not kept: there is no persistence. Clients see their
// connections drop and must reconnect. A node of StartCluster comes back as
// itself, from its nodes.conf, and rejoins its cluster on its own, which
// Cluster.WaitHealthy waits for. After Stop it returns ErrStopped.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restart()
}

// restartWith is Restart with the WithConfig lines that edit makes of
// them, from now on: a node of Sentinels that comes back as a replica of
// another primary than it was started with.
func (s *Server) restartWith(edit func(lines []string) []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = edit(s.lines)
	return s.restart()
}

// restart is Restart; the caller holds s.mu.
func (s *Server) restart() error {
	if s.stopped {
		return ErrStopped
	}
	s.halt()
	var err error
	for attempt := 1; attempt <= bootAttempts; attempt++ {
		var p *process
		if p, err = s.boot(); err == nil {
			s.proc = p
			return nil
		}
		if !errors.Is(err, errPortClash) {
			break
		}
		time.Sleep(restartBackoff)
	}
	return fmt.Errorf("redisproc: restarting: %w", err)
}

// halt stops the process, if one runs, and ends the pause, if one is in
// force, keeping the files for a Restart. The caller holds s.mu.
func (s *Server) halt() {
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
	// After the process has exited, so that its SIGTERM was waiting when
	// stop thawed it: the thawing goroutine then has nothing to do.
	s.endPause()
}
