package redisproc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/batonlock/baton/resp"
)

// SentinelMaster is the name under which a Sentinels' sentinels know
// their primary.
const SentinelMaster = "mymaster"

// Sentinels is a primary, its replicas and the sentinels that watch them,
// all on loopback: the servers a Redis Sentinel deployment has. Nodes[0]
// is the first primary; a failover makes another the primary (Primary
// says which).
type Sentinels struct {
	Nodes     []*Server // the data nodes
	Sentinels []*Server // redis-sentinel processes
}

// sentinelDownAfter is how long a sentinel waits before it takes a
// silent primary for down: short, so that a test that kills a primary
// sees its failover within seconds. Not shorter: at 500ms, on two cores
// under the race detector, the sentinels took a just-promoted primary,
// whose link they were still opening, for down, and failed over again
// and again (five epochs in 5s).
const sentinelDownAfter = 1000 * time.Millisecond

// SentinelNodeConf are the redis.conf lines of the data nodes of a
// Sentinel deployment that this package starts, and that the integration
// suite gives its containers: a replica's full sync (a new replica, an old
// primary that comes back as one) starts at once and goes through memory,
// where the default waits 5s for more replicas to join it.
var SentinelNodeConf = []string{
	"repl-diskless-sync yes",
	"repl-diskless-sync-delay 0",
}

// SentinelConf are the lines of a sentinel's configuration that watch
// the primary at host:port as SentinelMaster, with the quorum of a
// majority of sentinels, taking it for down after sentinelDownAfter of
// silence.
func SentinelConf(host string, port, sentinels int) []string {
	return []string{
		fmt.Sprintf("sentinel monitor %s %s %d %d", SentinelMaster, host, port, sentinels/2+1),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, sentinelDownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s 5000", SentinelMaster),
	}
}

// StartSentinels starts a primary, replicas replicas of it and sentinels
// sentinels (redis-sentinel from PATH) that watch it with a quorum of a
// majority, and returns once every sentinel knows the primary, each
// replica and each other sentinel. sentinelConfig are lines added to each
// sentinel's configuration (requirepass, say, with sentinel sentinel-pass
// for the sentinels to reach each other). On failure it stops what it
// started. The caller must call Stop.
func StartSentinels(replicas, sentinels int, sentinelConfig ...string) (*Sentinels, error) {
	s := &Sentinels{}
	fail := func(err error) (*Sentinels, error) {
		s.Stop()
		return nil, fmt.Errorf("redisproc: sentinels: %w", err)
	}
	primary, err := Start(WithConfig(SentinelNodeConf...))
	if err != nil {
		return fail(err)
	}
	s.Nodes = append(s.Nodes, primary)
	for range replicas {
		r, err := Start(WithConfig(SentinelNodeConf...), WithConfig(replicaOf(primary)))
		if err != nil {
			return fail(err)
		}
		s.Nodes = append(s.Nodes, r)
	}
	for range sentinels {
		sn, err := Start(WithBinary("redis-sentinel"),
			WithConfig(SentinelConf("127.0.0.1", primary.port, sentinels)...),
			WithConfig(strings.Join(sentinelConfig, "\n")))
		if err != nil {
			return fail(err)
		}
		s.Sentinels = append(s.Sentinels, sn)
	}
	if err := s.deployment().WaitKnown(30 * time.Second); err != nil {
		return fail(err)
	}
	return s, nil
}

// replicaOf is the redis.conf line that makes a node a replica of p.
func replicaOf(p *Server) string { return "replicaof 127.0.0.1 " + strconv.Itoa(p.port) }

// deployment is s as SentinelDeployment's checks see it: a data node is
// live while its process runs, a sentinel while it runs unfrozen.
func (s *Sentinels) deployment() SentinelDeployment {
	var d SentinelDeployment
	for _, n := range s.Nodes {
		d.Nodes = append(d.Nodes, SentinelMember{Addr: n.Addr, Password: n.password, Live: n.running})
	}
	for _, sn := range s.Sentinels {
		d.Sentinels = append(d.Sentinels, SentinelMember{Addr: sn.Addr, Password: sn.password, Live: sn.answering})
	}
	return d
}

// URL is the address that reaches the primary through the sentinels:
// redis+sentinel://<sentinel>,<sentinel>,.../mymaster.
func (s *Sentinels) URL() string {
	return s.deployment().URL()
}

// Primary is the data node that every running sentinel names as the
// primary and that says it is one (ROLE), or an error if they do not
// agree yet.
func (s *Sentinels) Primary() (*Server, error) {
	i, err := s.deployment().Primary()
	if err != nil {
		return nil, err
	}
	return s.Nodes[i], nil
}

// Failover has the sentinels promote a replica (SENTINEL FAILOVER) and
// waits until every sentinel names it and it says it is the primary, and
// the other nodes replicate from it. The old primary, alive, is among
// them only once the sentinels have turned it into a replica, about ten
// seconds after the promotion.
func (s *Sentinels) Failover(timeout time.Duration) (*Server, error) {
	i, err := s.deployment().Failover(timeout)
	if err != nil {
		return nil, err
	}
	return s.Nodes[i], nil
}

// KillPrimary crashes the primary (SIGKILL: it tells nobody) and returns
// it once its process has exited; it stays down. WaitFailover waits for
// the sentinels to replace it, and RestartReplica brings it back.
func (s *Sentinels) KillPrimary() (*Server, error) {
	old, err := s.Primary()
	if err != nil {
		return nil, err
	}
	if err := old.kill(); err != nil {
		return nil, fmt.Errorf("redisproc: killing the primary %s: %w", old.Addr, err)
	}
	return old, nil
}

// WaitFailover waits, up to timeout, until a node other than old is the
// settled primary, which it returns.
func (s *Sentinels) WaitFailover(old *Server, timeout time.Duration) (*Server, error) {
	i, err := s.deployment().WaitPrimary(s.index(old), timeout)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, s.account())
	}
	return s.Nodes[i], nil
}

// account is what a failover that did not settle leaves to read: what
// each sentinel says of the primary (SENTINEL MASTER: its address, flags
// and config epoch) and the tail of its log.
func (s *Sentinels) account() string {
	d := s.deployment()
	var b strings.Builder
	for i, sn := range d.Sentinels {
		fmt.Fprintf(&b, "--- sentinel %s: %s; the last lines of its log ---\n%s\n",
			sn.Addr, sn.view(), tail(readLog(s.Sentinels[i].logPath, 0)))
	}
	return b.String()
}

// view is what the sentinel sn says of the primary, or why it cannot
// say: a frozen sentinel is not asked.
func (sn SentinelMember) view() string {
	if !sn.live() {
		return "frozen"
	}
	f, err := sn.Master()
	if err != nil {
		return err.Error()
	}
	return viewOf(f)
}

// viewOf is view, of SENTINEL MASTER's fields f.
func viewOf(f map[string]string) string {
	return fmt.Sprintf("names %s:%s, flags %s, config epoch %s, failover state %s",
		f["ip"], f["port"], f["flags"], f["config-epoch"], f["failover-state"])
}

// Master is what the sentinel says of the primary it watches (SENTINEL
// MASTER), field by field: ip, port, flags, config-epoch and the rest.
func (sn SentinelMember) Master() (map[string]string, error) {
	v, err := sn.do("SENTINEL", "MASTER", SentinelMaster)
	if err != nil {
		return nil, err
	}
	f := make(map[string]string, len(v.Elems)/2)
	for i := 0; i+1 < len(v.Elems); i += 2 {
		f[v.Elems[i].Str] = v.Elems[i+1].Str
	}
	return f, nil
}

// RestartReplica starts n, a data node that was killed, again as a
// replica of the primary the sentinels name now, as the init scripts of
// common deployments (the Helm charts') start a node that comes back,
// and returns once every node replicates from that primary. It comes
// back empty, as a node without persistence on a new host does: save ""
// alone does not see to that, since a replica keeps the RDB of its last
// full sync (dump.rdb) and, restarted, loads it and asks its primary for
// a partial resync from the offset that file names, which this removes.
// Started as a primary, it would be one, empty, until the sentinels turn
// it into a replica some ten seconds later.
func (s *Sentinels) RestartReplica(n *Server, timeout time.Duration) error {
	if s.index(n) < 0 {
		return fmt.Errorf("redisproc: RestartReplica: %s is not a data node", n.Addr)
	}
	d := s.deployment()
	i, err := d.Primary()
	if err != nil {
		return fmt.Errorf("redisproc: RestartReplica %s: %w", n.Addr, err)
	}
	if s.Nodes[i] == n {
		return fmt.Errorf("redisproc: RestartReplica: %s is the primary", n.Addr)
	}
	if err := os.Remove(filepath.Join(n.dir, "dump.rdb")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("redisproc: RestartReplica %s: %w", n.Addr, err)
	}
	err = n.restartWith(func(lines []string) []string {
		var kept []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "replicaof ") {
				kept = append(kept, l)
			}
		}
		return append(kept, replicaOf(s.Nodes[i]))
	})
	if err != nil {
		return fmt.Errorf("redisproc: RestartReplica %s: %w", n.Addr, err)
	}
	// The sentinels may have moved on meanwhile, on their own: the
	// node replicates from whichever primary they settle on, once they
	// point it there.
	if _, err := d.WaitSettled(timeout); err != nil {
		return fmt.Errorf("redisproc: RestartReplica %s: %w", n.Addr, err)
	}
	return nil
}

// index is n's index in s.Nodes, or -1.
func (s *Sentinels) index(n *Server) int {
	for i, m := range s.Nodes {
		if m == n {
			return i
		}
	}
	return -1
}

// Stop stops every process.
func (s *Sentinels) Stop() {
	for _, sn := range s.Sentinels {
		sn.Stop()
	}
	for _, n := range s.Nodes {
		n.Stop()
	}
}

// SentinelMember is a data node or a sentinel of a Sentinel deployment as
// SentinelDeployment's checks see it: an address to ask, not a process.
type SentinelMember struct {
	// Addr is its host:port: where this process reaches it, and, for a
	// data node, the address the sentinels and the other nodes know it
	// by.
	Addr string
	// Password, unless "", is sent with AUTH first.
	Password string
	// Live reports whether it can be asked now: it runs and is not
	// frozen. The checks leave out one that is not. Nil means always.
	Live func() bool
}

func (m SentinelMember) live() bool { return m.Live == nil || m.Live() }

// do sends one command to m, turning an error reply into an error.
func (m SentinelMember) do(args ...string) (resp.Value, error) {
	v, err := Do(m.Addr, m.Password, args...)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return resp.Value{}, fmt.Errorf("%s: %q: %w", m.Addr, args, err)
	}
	return v, nil
}

// SentinelDeployment is a Redis Sentinel deployment given by address: the
// checks and the failover that Sentinels runs on its own processes, for
// deployments this package did not start (containers, say), so that both
// are judged by the same rules.
type SentinelDeployment struct {
	Nodes     []SentinelMember // the data nodes
	Sentinels []SentinelMember
}

// URL is the address that reaches the primary through the sentinels:
// redis+sentinel://<sentinel>,<sentinel>,.../mymaster.
func (d SentinelDeployment) URL() string {
	addrs := make([]string, len(d.Sentinels))
	for i, sn := range d.Sentinels {
		addrs[i] = sn.Addr
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + SentinelMaster
}

// live is the sentinels that can be asked now.
func (d SentinelDeployment) live() []SentinelMember {
	var live []SentinelMember
	for _, sn := range d.Sentinels {
		if sn.live() {
			live = append(live, sn)
		}
	}
	return live
}

// Named is the address of the primary that every live sentinel names,
// or an error if they do not agree.
func (d SentinelDeployment) Named() (string, error) {
	var named string
	for _, sn := range d.live() {
		v, err := sn.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if err != nil {
			return "", err
		}
		if len(v.Elems) != 2 {
			return "", fmt.Errorf("sentinel %s names no primary", sn.Addr)
		}
		addr := net.JoinHostPort(v.Elems[0].Str, v.Elems[1].Str)
		if named != "" && addr != named {
			return "", fmt.Errorf("the sentinels name %s and %s", named, addr)
		}
		named = addr
	}
	if named == "" {
		return "", errors.New("no sentinel can be asked")
	}
	return named, nil
}

// Primary is the index of the data node that every live sentinel names
// as the primary and that says it is one (ROLE), or an error if they do
// not agree yet.
func (d SentinelDeployment) Primary() (int, error) {
	named, err := d.Named()
	if err != nil {
		return -1, err
	}
	for i, n := range d.Nodes {
		if n.Addr != named {
			continue
		}
		role, err := n.do("ROLE")
		if err != nil {
			return -1, err
		}
		if len(role.Elems) == 0 || role.Elems[0].Str != "master" {
			return -1, fmt.Errorf("%s, named the primary, is not one: %v", named, role)
		}
		return i, nil
	}
	return -1, fmt.Errorf("the sentinels name %s, none of the nodes", named)
}

// WaitKnown waits until every live sentinel knows every replica and
// every other sentinel, and every live replica has synced.
func (d SentinelDeployment) WaitKnown(timeout time.Duration) error {
	return settle(timeout, d.known)
}

func (d SentinelDeployment) known() error {
	for _, sn := range d.live() {
		v, err := sn.do("SENTINEL", "REPLICAS", SentinelMaster)
		if err != nil {
			return err
		}
		if len(v.Elems) != len(d.Nodes)-1 {
			return fmt.Errorf("sentinel %s knows %d replicas, want %d", sn.Addr, len(v.Elems), len(d.Nodes)-1)
		}
		v, err = sn.do("SENTINEL", "SENTINELS", SentinelMaster)
		if err != nil {
			return err
		}
		if len(v.Elems) != len(d.Sentinels)-1 {
			return fmt.Errorf("sentinel %s knows %d other sentinels, want %d", sn.Addr, len(v.Elems), len(d.Sentinels)-1)
		}
	}
	for _, n := range d.Nodes {
		if !n.live() {
			continue
		}
		role, err := n.do("ROLE")
		if err != nil {
			return err
		}
		if len(role.Elems) > 3 && role.Elems[0].Str == "slave" && role.Elems[3].Str != "connected" {
			return fmt.Errorf("replica %s is %s", n.Addr, role.Elems[3].Str)
		}
	}
	return nil
}

// replicatingFrom reports an error unless every live node but the
// primary, Nodes[primary], is a connected replica of it.
func (d SentinelDeployment) replicatingFrom(primary int) error {
	for i, n := range d.Nodes {
		if i == primary || !n.live() {
			continue
		}
		role, err := n.do("ROLE")
		if err != nil {
			return err
		}
		e := role.Elems
		if len(e) < 4 || e[0].Str != "slave" || net.JoinHostPort(e[1].Str, strconv.FormatInt(e[2].Int, 10)) != d.Nodes[primary].Addr || e[3].Str != "connected" {
			return fmt.Errorf("%s is not yet a connected replica of %s: %v", n.Addr, d.Nodes[primary].Addr, role)
		}
	}
	return nil
}

// failedOver reports an error while a live sentinel has a failover in
// progress (SENTINEL MASTER's flags say failover_in_progress). The
// sentinel that leads a failover ends it once the replicas' INFO shows
// each live one replicating from the promoted one, a second or two
// after the others already name it. Redis 7.0 ends a failover only
// while its promoted replica answers (sentinelFailoverDetectEnd), and
// until then the leader names that replica (GET-MASTER-ADDR-BY-NAME,
// and in its hello messages). A primary killed in that second or two
// (the chaos faults' failover, struck again) left the leader naming it,
// dead, for the 40s the test waited, while the two others had failed
// over to another node at a higher epoch, which the leader took without
// leaving its failover: the hello named the address its record still
// held. A deployment is settled only once every failover has ended.
func (d SentinelDeployment) failedOver() error {
	for _, sn := range d.live() {
		f, err := sn.Master()
		if err != nil {
			return err
		}
		if strings.Contains(f["flags"], "failover_in_progress") {
			return fmt.Errorf("sentinel %s has a failover in progress: %s", sn.Addr, viewOf(f))
		}
	}
	return nil
}

// WaitSettled waits, up to timeout, until the deployment has settled
// on a primary, whose index it returns: every live sentinel names it and
// it says it is one, they know every node and each other, none has a
// failover in progress, and every other live node is a connected
// replica of it. Which node that is, it leaves to the sentinels: under
// load, or with a node frozen, they may fail over on their own, and a
// deployment that settled on another primary than the caller last saw
// has settled all the same.
func (d SentinelDeployment) WaitSettled(timeout time.Duration) (int, error) {
	return d.waitSettledOn(func(int) error { return nil }, timeout)
}

// waitSettledOn is WaitSettled, where the primary it settles on must
// also pass want.
func (d SentinelDeployment) waitSettledOn(want func(primary int) error, timeout time.Duration) (int, error) {
	primary := -1
	err := settle(timeout, func() error {
		p, err := d.Primary()
		if err == nil {
			err = want(p)
		}
		if err == nil {
			err = d.known()
		}
		if err == nil {
			err = d.failedOver()
		}
		if err == nil {
			err = d.replicatingFrom(p)
		}
		primary = p
		return err
	})
	if err != nil {
		return -1, err
	}
	return primary, nil
}

// Failover has a live sentinel promote a replica (SENTINEL FAILOVER) and
// waits, up to timeout, until it is the settled primary (WaitPrimary),
// whose index it returns.
func (d SentinelDeployment) Failover(timeout time.Duration) (int, error) {
	old, err := d.Primary()
	if err != nil {
		return -1, err
	}
	live := d.live()
	if len(live) == 0 {
		return -1, errors.New("redisproc: no sentinel runs")
	}
	if _, err := live[0].do("SENTINEL", "FAILOVER", SentinelMaster); err != nil {
		return -1, err
	}
	return d.WaitPrimary(old, timeout)
}

// WaitPrimary waits, up to timeout, until a node other than Nodes[old]
// is the settled primary: the live sentinels name it, it says it is one,
// they know every node and each other, none has a failover in progress,
// and every other live node replicates from it. It returns its index.
func (d SentinelDeployment) WaitPrimary(old int, timeout time.Duration) (int, error) {
	primary, err := d.waitSettledOn(func(p int) error {
		if p == old {
			return errors.New("the old primary is still named")
		}
		return nil
	}, timeout)
	if err != nil {
		return -1, fmt.Errorf("redisproc: no new primary: %w", err)
	}
	return primary, nil
}

// settle is poll, its error saying how long it waited.
func settle(timeout time.Duration, check func() error) error {
	if err := poll(timeout, check); err != nil {
		return fmt.Errorf("not settled after %v: %w", timeout, err)
	}
	return nil
}
