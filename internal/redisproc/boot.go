package redisproc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/batonlock/baton/resp"
)

const (
	// readyTimeout bounds how long a server may take to answer PING.
	readyTimeout = 10 * time.Second
	// readyPoll is the pause between PINGs; a server is usually up within
	// a few of them.
	readyPoll = 10 * time.Millisecond
	// pingTimeout bounds one PING. A local server answers in well under
	// a millisecond; a port that accepts and stays silent belongs to some
	// other process, and must not hold up noticing that ours has exited.
	pingTimeout = 250 * time.Millisecond
	// clashGrace is how long a wrong answer waits for our process to exit.
	// A redis-server that cannot bind exits within milliseconds.
	clashGrace = 500 * time.Millisecond
)

// errPortClash marks a failed boot whose port another process had taken.
var errPortClash = errors.New("port already in use")

// boot writes the config for s.port and s.tlsPort, runs redis-server and
// waits until it answers PING and, for a one-node cluster, says
// cluster_state:ok; a node of StartCluster joins its peers on its own, from
// its nodes.conf, or is joined by StartCluster. On failure the process has
// been stopped and the error quotes the tail of this run's log.
func (s *Server) boot() (*process, error) {
	if err := s.writeConf(); err != nil {
		return nil, fmt.Errorf("writing config: %w", err)
	}
	from := logSize(s.logPath)
	p, err := startProcess(s.bin, s.confPath, s.logPath)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	err = waitReady(p, addr, s.password)
	if err == nil && s.cluster == soloCluster {
		err = formCluster(p, addr, s.password)
	}
	if err == nil {
		return p, nil
	}
	p.stop()
	log := readLog(s.logPath, from)
	if portClash(log) {
		err = fmt.Errorf("%w: %w", errPortClash, err)
	}
	// The log itself is not named: a failed Start removes it.
	return nil, fmt.Errorf("redis-server on %s did not come up: %w\n--- the last lines of its log ---\n%s",
		addr, err, tail(log))
}

// waitReady polls addr until our process answers, the process exits, or
// readyTimeout passes.
func waitReady(p *process, addr, pass string) error {
	deadline := time.Now().Add(readyTimeout)
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		retry, err := probe(p.cmd.Process.Pid, addr, pass)
		if err == nil {
			return nil
		}
		if !retry {
			// The answer may come from another process that took the
			// port, and then ours is about to exit, unable to bind: give
			// it a moment to, so that boot finds the clash in its log
			// and tries other ports.
			select {
			case <-p.done:
				return p.exitError()
			case <-time.After(clashGrace):
			}
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to PING within %v (last: %v)", readyTimeout, err)
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-tick.C:
		}
	}
}

// probe asks the server at addr for PING and for its process id, which
// tells our server from another that got hold of the port. A nil error
// means our server is ready; otherwise retry tells whether asking again
// may help (nothing listens yet, the data set is loading).
func probe(pid int, addr, pass string) (retry bool, err error) {
	replies, err := exchange(addr, pass, pingTimeout, []string{"PING"}, []string{"INFO", "server"})
	var refused *resp.Error
	switch {
	case errors.As(err, &refused):
		return false, err
	case err != nil:
		return true, err
	}
	pong, info := replies[0], replies[1]
	switch {
	case errors.Is(pong.Err(), resp.Loading):
		return true, pong.Err()
	case errors.Is(pong.Err(), resp.NoAuth):
		return false, fmt.Errorf("PING answered %s: the server has a password that redisproc did not find in a requirepass line", pong)
	case pong.Type != resp.SimpleString || pong.Str != "PONG":
		return false, fmt.Errorf("PING answered %s", pong)
	}
	if got := infoPID(info); got != pid {
		return false, fmt.Errorf("another redis-server (process_id %d) answers on %s", got, addr)
	}
	return false, nil
}

// infoPID returns the process_id field of an INFO reply, or 0.
func infoPID(info resp.Value) int {
	pid, _ := strconv.Atoi(infoField(info.Str, "process_id"))
	return pid
}

// infoField returns the value of the "name:value" line of an INFO or
// CLUSTER INFO text, or "".
func infoField(text, name string) string {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
