// Package cluster is a Redis Cluster client on top of package conn. It owns
// the cluster's topology, read from CLUSTER SHARDS (CLUSTER SLOTS on
// servers before Redis 7) into a map from each of the 16384 slots to the
// address of the primary serving it; the routing of each call by its key's
// [Slot]; the following of MOVED replies (the map is refreshed, the batch
// sent again to the slot's new primary) and ASK replies (the batch sent
// once, after ASKING, to the node importing the slot); the waits through
// a reshard or a failover, whose replies say that a command did not run
// (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN, READONLY: the batch is sent
// again, paced, for as long as the caller's context allows; see
// [RefusedForNow]); and one
// conn.Client per node, made when first used and closed by [Client.Close],
// so that every rule conn keeps on the wire holds per node: a batch given
// to [Client.DoMulti] leaves in one write to one node, on every attempt.
// It also reads redis+cluster:// URLs ([ParseURL]). It never sends a call
// again whose outcome is unknown. On a single server it is not in the path
// at all: use conn directly.
//
// Concurrency: a [Client] is safe for concurrent use, and is meant to be
// shared. It starts no goroutine of its own; the only ones are those of
// its conn.Clients, which Close stops and waits for. Its slot map, its set
// of node clients and its refresh state sit behind one mutex, held only
// to read or swap them, never across I/O. One refresh of the topology runs
// at a time, in the goroutine of the call that needed it; calls that need
// one meanwhile wait for it (or for their context), and no refresh starts
// within WithRefreshInterval of the last. Calls routed to one node share
// that node's connection, and conn coalesces their writes.
package cluster
