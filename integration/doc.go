// Package integration holds baton's integration suite: tests, and nothing
// else, that check baton's promises against real servers, the kind users
// deploy, under the faults such servers meet: restarts without
// persistence, pauses past a lock's TTL, latency, resets and half-open
// connections, killed pub/sub connections and killed processes, and a soak
// whose history is checked for overlapping holders with a linearizability
// checker.
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
// strictly increase per key.
// Containers carry the label baton.integration and are removed at the end
// of each test, when it fails, and on interrupt.
//
//	make integration                               # the whole suite
//	BATON_REDIS_IMAGE=valkey/valkey:8 make integration
//	go test -race -short ./integration             # its -short form, part of make test
//	make integration ARGS="-soak 30m"              # a longer soak
//
// Concurrency: the suite's own goroutines (fault injectors, thawing a
// paused container, workers) each belong to one test, which stops them and
// waits for them before it ends; TestMain checks with goleak that none is
// left.
package integration
