package redisproc

import "time"

// MemberNodeTimeout is the cluster-node-timeout the nodes of StartCluster
// run with, unless a WithConfig line sets another. It sets the pace of a
// failover: a primary that stops answering is suspected (PFAIL) once it
// has not answered a ping for this long, and marked failed (FAIL) as soon
// as the gossip of a majority of primaries agrees, which at this timeout
// takes a few hundred milliseconds more; its replica then waits 500ms plus
// up to 500ms at random (plus 1s per better-placed sibling replica) before
// it asks the primaries for their votes, and is promoted once it has them.
// On a 2-core machine under go test -race, with every node agreeing again
// (WaitHealthy), a killed primary's replica was serving its slots 1.5s to
// 2.1s after the kill (TestClusterFailover logs it); with a timeout of
// 250ms it was 1.4s to 1.9s, with 1s 2.3s to 3.0s. A shorter timeout
// hardly shortens a failover, the replica's delay being fixed, and risks
// failovers nobody asked for on a loaded machine, where a node can stall
// for a few hundred milliseconds.
const MemberNodeTimeout = 500 * time.Millisecond

// writeMemberConf writes the settings of a StartCluster node that a
// WithConfig line may override: they come before those lines.
func (s *Server) writeMemberConf(line func(format string, args ...any)) {
	line("cluster-node-timeout %d", MemberNodeTimeout.Milliseconds())
	// A replica's full sync starts at once, instead of 5s later in case
	// more replicas come along, and goes through memory on both sides, so
	// that no RDB file is written: a replica brought back by Restart then
	// starts empty, as every Server does, and resyncs.
	line("repl-diskless-sync yes")
	line("repl-diskless-sync-delay 0")
	line("repl-diskless-load swapdb")
	// A primary pings its replicas through the replication stream every
	// second, not every 10: until a replica's offset has moved past 0,
	// CLUSTER SLOTS leaves it out and CLUSTER SHARDS says it is loading,
	// so clients would not see it.
	line("repl-ping-replica-period 1")
	// The cluster keeps the shape StartCluster gave it: no replica moves
	// to a primary left without one, and a primary that loses its last
	// slot to MigrateSlot stays a primary instead of turning into the
	// replica of the slot's new owner.
	line("cluster-allow-replica-migration no")
	if s.password != "" {
		// The replicas authenticate to their primary with the password
		// every node asks for.
		line("masterauth %s", quoteConf(s.password))
	}
}
