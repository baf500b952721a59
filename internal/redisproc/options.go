package redisproc

import (
	"crypto/tls"
	"fmt"
	"os/exec"
)

// Option configures a Server started by Start.
type Option func(*config)

// config collects what the options ask for before Start acts on it.
type config struct {
	lines   []string // raw redis.conf lines from WithConfig, in order
	unix    bool
	tls     bool
	shared  *sharedTLS // from WithSharedTLS; nil for a CA of the server's own
	cluster clusterMode
	bin     string // from WithBinary; empty for redis-server from PATH
}

// WithConfig adds raw redis.conf lines, such as `notify-keyspace-events ""`,
// "io-threads 4" or "requirepass secret". They are written after the
// defaults that may be overridden (save "", appendonly no) and before the
// settings the Server's fields depend on (bind, port, unixsocket, tls-*,
// dir, daemonize, logfile, and the cluster settings of WithCluster), which
// therefore cannot be overridden. If a line sets requirepass, Server.Do
// authenticates with it. Default: no extra lines.
func WithConfig(lines ...string) Option {
	return func(c *config) { c.lines = append(c.lines, lines...) }
}

// WithUnixSocket makes the server also listen on a unix socket, whose path
// is then in Server.UnixSocket. Default: TCP only.
func WithUnixSocket() Option {
	return func(c *config) { c.unix = true }
}

// WithTLS makes the server also listen on a TLS port, whose address is then
// in Server.TLSAddr, with a certificate from a throwaway CA that
// Server.TLSConfig trusts. Clients are not asked for certificates. Default:
// no TLS.
func WithTLS() Option {
	return func(c *config) { c.tls = true }
}

// sharedTLS is a certificate that several servers present.
type sharedTLS struct {
	files TLSFiles
	conf  *tls.Config
}

// WithSharedTLS is WithTLS with the certificate in files (from
// WriteTLSFiles), which conf trusts, rather than one of the server's own:
// for servers that reach each other over TLS (a replica its primary, a
// sentinel the nodes it watches), and so must trust one CA. Default: no
// TLS.
func WithSharedTLS(files TLSFiles, conf *tls.Config) Option {
	return func(c *config) { c.tls, c.shared = true, &sharedTLS{files, conf} }
}

// WithCluster makes the server a one-node Redis Cluster that holds every
// slot: Start returns once CLUSTER INFO says cluster_state:ok. Its port is
// at most 55535, since the cluster bus listens 10000 above it, and its
// nodes.conf is kept in the temporary directory, so that Restart brings
// back the same node with its slots. Multi-key commands then need keys of
// one slot, as on any cluster. StartCluster, whose nodes are clusters of
// their own kind, ignores it. Default: a plain server.
func WithCluster() Option {
	return func(c *config) { c.cluster = soloCluster }
}

// WithBinary runs the server binary at path, such as a Valkey build's
// valkey-server, instead of redis-server from PATH. A path without a
// slash is looked up in PATH. Start's error wraps ErrNoBinary when there
// is none. Default: redis-server from PATH.
func WithBinary(path string) Option {
	return func(c *config) { c.bin = path }
}

// binary returns the server binary c asks for, resolved.
func (c config) binary() (string, error) {
	name := c.bin
	if name == "" {
		name = "redis-server"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoBinary, err)
	}
	return bin, nil
}
