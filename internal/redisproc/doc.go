// Package redisproc runs throwaway redis-server processes: [Start] finds
// redis-server on PATH and runs it on loopback ports that were free, in a
// temporary directory of its own, optionally with a unix socket and a TLS
// port whose certificate comes from a throwaway CA, or as a one-node Redis
// Cluster; [StartCluster] runs a Redis Cluster of several primaries and
// their replicas, which a test can crash a node of ([Cluster.Kill]), wait
// to fail over ([Cluster.WaitHealthy]) and move slots in
// ([Cluster.MigrateSlot]); the cluster's formation and checks also serve
// clusters it did not start, whose nodes are given by address
// ([ClusterMember]: [FormCluster], [WaitClusterHealthy], [ClusterPrimary],
// [MigrateClusterSlot]), so that both are judged, and changed, by the same
// rules. It owns the processes and every file it makes, and [Server.Stop]
// and [Cluster.Stop] remove them all. It serves the command line's demo and, through package redistest,
// the tests of the other baton packages, and the integration suite's
// cluster of containers; it does not import package testing.
//
// Concurrency: every goroutine the package starts has an owner that stops it
// and waits for it. A Server's process-watching goroutine belongs to the
// Server and ends when the process does, which Stop, Restart and
// Cluster.Kill wait for; the goroutine that thaws a paused Server ends when
// the pause does, and at the latest in Resume, Restart, Stop or
// Cluster.Kill, which wait for it. Cluster.Stop stops the nodes from
// goroutines of its own, and returns once they have. Server and Cluster
// methods are safe for concurrent use; a Server's Stop, Restart, Pause,
// Resume and Cluster.Kill take turns.
package redisproc
