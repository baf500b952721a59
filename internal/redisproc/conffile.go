package redisproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// writeConf writes the redis.conf the server runs with. Settings that a
// caller may want to change come before the user's lines, because redis-server
// lets a later line win; settings the Server's fields depend on come after,
// so that no line can move the server away from the addresses it reports.
func (s *Server) writeConf() error {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	line("# written by redisproc; later lines win")
	line(`save ""`) // nothing to persist: every server is thrown away
	line("appendonly no")
	if s.cluster == clusterMember {
		s.writeMemberConf(line)
	}
	for _, l := range s.lines {
		line("%s", l)
	}
	line("bind 127.0.0.1")
	line("port %d", s.port)
	line("daemonize no") // Stop must signal the process it started
	line("dir %s", quoteConf(s.dir))
	line(`logfile ""`) // stdout, which goes to the log file Start reads
	if s.UnixSocket != "" {
		line("unixsocket %s", quoteConf(s.UnixSocket))
		line("unixsocketperm 700")
	}
	if s.cluster != noCluster {
		line("cluster-enabled yes")
		// Kept across Restart, so that the node comes back as itself.
		line("cluster-config-file %s", quoteConf(filepath.Join(s.dir, "nodes.conf")))
	}
	if s.cluster == soloCluster {
		// A lone node waits this long (500ms at least) after it gets its
		// slots before it says ok: keep Start quick.
		line("cluster-node-timeout %d", clusterNodeTimeout.Milliseconds())
	}
	if s.tls != nil {
		line("tls-port %d", s.tlsPort)
		line("tls-cert-file %s", quoteConf(s.tls.Cert))
		line("tls-key-file %s", quoteConf(s.tls.Key))
		line("tls-ca-cert-file %s", quoteConf(s.tls.CACert))
		line("tls-auth-clients no")
	}
	return os.WriteFile(s.confPath, []byte(b.String()), 0o600)
}

// quoteConf quotes a path for redis.conf, whose parser splits on spaces and
// understands backslash escapes inside double quotes.
func quoteConf(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// requirePass returns the password the last requirepass line sets, or ""
// when no line sets one. It reads the forms callers write: a bare word, or
// the rest of the line in double quotes (with C escapes) or single quotes;
// redis-server's full quoting rules are not worth copying here. Only
// requirepass is understood: a server whose users are set up with ACL
// lines needs AUTH commands of its own.
func requirePass(lines []string) string {
	pass := ""
	for _, text := range lines {
		// One WithConfig argument may hold several lines.
		for l := range strings.Lines(text) {
			l = strings.TrimSpace(l)
			f := strings.Fields(l)
			if len(f) >= 2 && strings.EqualFold(f[0], "requirepass") {
				pass = unquoteConf(strings.TrimSpace(l[len(f[0]):]))
			}
		}
	}
	return pass
}

// unquoteConf strips the quotes redis-server would strip from one
// argument. Inside double quotes it takes C escapes, which strconv.Unquote
// reads alike.
func unquoteConf(w string) string {
	if len(w) >= 2 && w[0] == '\'' && w[len(w)-1] == '\'' {
		return w[1 : len(w)-1]
	}
	if len(w) >= 2 && w[0] == '"' {
		if u, err := strconv.Unquote(w); err == nil {
			return u
		}
	}
	return w
}
