// Package integration holds baton's integration suite: tests, and nothing
// else, that check baton's promises against real servers, the kind users
// deploy, under the faults such servers meet: restarts without
// persistence, pauses past a lock's TTL, latency, resets and half-open
// connections, killed pub/sub connections and killed processes, a Redis
// Cluster's primary killed, or its slots migrated, mid-contention, and a
// soak whose history is checked for overlapping holders with a
// linearizability checker.
//
// Servers. Where a Docker engine answers, every server is a container,
// started with dockertest from the image named by BATON_REDIS_IMAGE (a
// local image: nothing is pulled), or from each image of the
// comma-separated BATON_REDIS_IMAGES, each a subtest named by its image.
// Without either, it uses redis:7.4, else baton-redis:local (built by make
// redis-image), whichever is present. Without Docker, with neither image
// present, or with BATON_INTEGRATION_PROCESS=1, every server is a
// redis-server process from PATH. The first lines of the log name the
// backend and the server's version.
//
// What is checked: every test records each call's start and end (and,
// for a Modify, the count its function saw and its outcome) to a log per
// process, on CLOCK_MONOTONIC; the history is then checked to be
// linearizable against a counter per token (porcupine), with restarts
// resetting the counts and uncertain outcomes free to have landed or not;
// leases whose Unlock succeeded must not overlap; fencing tokens must
// strictly increase per key; and no call may panic (a panic is recorded
// and reported, so that the run goes on and removes its servers).
// Containers carry the label baton.integration and are removed at the end
// of each test, when it fails, and on interrupt.
//
// Redis Cluster. The cluster tests run on a cluster of three primaries,
// with a replica each unless they need none, made by the same backend:
// redis-server processes on loopback (redistest.StartCluster), or a
// container per node, of the same image, on a bridge network made for the
// test. The containers bind no
// port of the host: the test reaches each node at its address on that
// network, port 6379, which is also the address the node announces
// (cluster-announce-ip) and the one in the redis+cluster:// URL the
// Lockers open. The test forms the cluster, and judges it healthy, by
// redisproc's rules for its own (FormCluster, WaitClusterHealthy, given
// the nodes' addresses): CLUSTER ADDSLOTSRANGE splits the slots over the
// primaries, MEET joins the nodes, REPLICATE makes the replicas, and it
// waits until every node says cluster_state:ok, all agree on who serves
// which slot and who replicates whom, and every replica's link is up. A
// node is killed with docker kill (SIGKILL) and started again with its
// nodes.conf, on the same address. A slot moves as redisproc moves its
// own (MigrateClusterSlot, given the nodes' addresses): CLUSTER SETSLOT
// IMPORTING and MIGRATING, MIGRATE in batches, whose source sends the keys
// to the target's address on the network, then SETSLOT NODE on every
// primary. The network carries the containers' labels, and goes with
// them: at the end of the test, on interrupt, and, for a run that died, at
// the start of the next. TestContentionOnACluster runs the contention
// workload, both modes, with its tokens spread over the three primaries;
// TestAPrimaryKilledDuringContention kills the primary of some tokens
// mid-contention, waits for its replica's promotion, brings the killed
// node back as a replica and runs on, the kill, the promotion and the
// return marked in the history as faults. With
// lock.WithReplicaAck(1, 500ms) the history must pass every check; without
// it a failover may lose what the replica never got, so the test logs what
// the checks find (and the lost increments) instead of failing, beside
// the figures of each variant: calls by outcome, how long calls failed
// around the failover, and the errors they returned. A killed process
// refuses connections at once, while a killed container's address answers
// nothing, so calls to it wait instead of failing: the figures differ
// between the backends. Under -short only fast mode goes through the
// failover. TestASlotMigratedDuringContention runs the workload, both
// modes, on three primaries without replicas and, mid-contention, moves
// the slots of two of its tokens, in turn, to each of the other primaries
// and back home, each migration a fault in the history: calls meet ASK,
// TRYAGAIN and MOVED, waiters follow the slot, and the history must pass
// every check, with calls on the moved tokens succeeding once the slots
// are home.
//
// The checker. TestChaos is the randomized, model-checked stress test of
// issue 26: round after round, in each mode, four actors (Lockers of a
// random kind, with or without a Manager and its hold; two in the test's
// process, two in worker processes) make random calls on three locks: Lock
// and TryLock with very short and cancelled contexts, Extend with shorter,
// longer, concurrent and out-of-range TTLs, Unlock twice and concurrently,
// Modify whose fn fails, panics, cancels or outlives the TTL or puts the
// server out of memory, and Close at random moments, each lease watched
// through its Done or its Context (whose cause must be Err's), while the
// server's connections are killed, it is paused, its scripts flushed, its
// memory full, a PSUBSCRIBE * client listens, another client deletes or
// overwrites a held lock (lose-lock: DEL, or SET to another value, in a
// MULTI that reads which lease held it), and, for 200ms to 1.5s at a time,
// with its client connections cut first, it accepts each new connection
// and cuts it at once (accept-close: a load balancer with no server behind
// it) or accepts each and answers nothing (frozen-handshake: redials hang
// in their AUTH). The server requires a password, new in each run, which
// the Lockers' URL carries, and they reach it through a fault proxy
// (internal/faultproxy), whose Refuse and Blackhole make those two faults.
// Each round's history, on CLOCK_MONOTONIC, must show no two owners of a
// lock at once (a lease owns it from its grant to the last moment its Done
// was seen open, less 10ms for a timer that runs late on a loaded machine:
// see doneLateness; a lease whose lock lose-lock struck, until the fault),
// fencing tokens that increase, counts that are linearizable, calls that
// end in time, a struck lease's Done closed within 100ms of the fault
// (lossBound; not before the next owner's grant, which may come
// microseconds after the DEL, before the server's invalidation reaches the
// struck lease), with a cause matching lock.ErrLost, and no lease ended
// lost without such a fault (checkLosses), once every Locker closed no
// lock, queue or key without a TTL left on the server, and no text that
// says the password: no error of any call, nor any error it wraps, no
// event of the Lockers' observers, no record of their loggers, no fault's
// note or error, and nothing a worker process printed, may hold it, as
// given or percent-encoded (the round fails quoting the text with the
// password hidden). The rounds follow from one seed: a failure prints it,
// the history around each violation (releases that failed in the
// background among it), and the command that runs the failed round again
// (-chaos.seed, -chaos.time, -chaos.round; -chaos.on runs on after a
// failure). TestChaosOnACluster (not under -short) runs the same rounds on
// a cluster of three primaries with a replica each, whose nodes require a
// password (processes; containers require none), with Lockers that wait
// for a replica's acknowledgement (WithReplicaAck), and adds two faults: a
// reshard of a round key's slot that leaves it open up to 1.5s (TRYAGAIN
// meanwhile), and a failover of a round key's primary (a SIGKILL, the
// replica's promotion, the node's return); the other faults strike a node
// picked at random (lose-lock, the node of the lock it strikes), its
// clients reaching it with no proxy between: accept-close is maxclients 1
// there (the server accepts, says "max number of clients reached" and
// closes), and frozen-handshake is CLIENT PAUSE ALL; a lease whose lock's
// slot moved (a reshard of it, any failover) within 2s before lose-lock
// struck it may take 1s to hear, its watch following the lock to the new
// node (movedBound). TestChaosThroughSentinels (not under -short) runs
// them through a redis+sentinel URL on a primary with two replicas and
// three sentinels, with WithReplicaAck(2) (both replicas) and a 20s
// release timeout that outlasts a failover, adding a killed primary
// (promoted replica, the node back as its replica) and a frozen sentinel
// to the faults, and sparing the sentinels' own connections from the two
// above, which last 600ms at most there; its history also notes each
// primary a sentinel comes to name, at which epoch, since the sentinels
// fail over on their own too when a loaded node misses their pings.
//
// Sentinel. Each backend also starts a primary with two replicas watched
// by three sentinels: processes, or containers on a network of their own,
// each node and sentinel announcing its address there.
// TestAFailoverThroughSentinelsDuringContention runs the contention
// workload through the sentinels across a failover forced with SENTINEL
// FAILOVER and a killed primary, both with WithReplicaAck of both
// replicas, logging the time from the failover to the first Lock on the new
// primary; without the acknowledgement it logs what was lost. Under
// -short only the forced failover, acknowledged, in fast mode.
//
//	make integration                               # the whole suite
//	BATON_REDIS_IMAGE=valkey/valkey:8 make integration
//	go test -race -short ./integration             # its -short form, part of make test
//	make integration ARGS="-soak 30m"              # a longer soak
//	make integration ARGS="-chaos.time 30m"        # a longer checker run
//
// Concurrency: the suite's own goroutines (fault injectors, thawing a
// paused container, workers) each belong to one test, which stops them and
// waits for them before it ends; TestMain checks with goleak that none is
// left.
package integration
