GO ?= go
BENCHSTAT ?= $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
BENCH_COUNT ?= 10
FUZZ_TIME ?= 30s

.PHONY: demo test integration lint need-redis bench bench-peers fuzz redis-image

# The demo: the scenario that started baton, on a throwaway server (a
# redis-server from PATH, else a local Docker image, else one embedded in
# the process). Pass flags with ARGS, for example ARGS="--runs 20 --json".
demo:
	$(GO) run ./cmd/baton demo $(ARGS)

# The test command: formatting, vet, then every test with the race detector,
# including those against a real redis-server, which it installs first
# where it is missing and it can (root with apt-get), then the integration
# suite in its -short form (a one-minute soak and a minute of the
# randomized checker, TestChaos), on its own, since its
# worker processes would load the machine under the others' timed tests.
# The allocation tests run once more without the race detector, which
# makes allocation counts vary.
# Last, the modules of their own: the peer benchmark's (its scenarios in
# miniature, and the shape of its --json document) and the OpenTelemetry
# adapter's.
test: lint need-redis
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /integration$$)
	$(GO) test -count=1 -run Allocations ./conn/ ./lock/
	$(GO) test -race -count=1 -short ./integration
	cd bench && $(GO) test -race -count=1 ./...
	cd otel && $(GO) test -race -count=1 ./...

# The whole integration suite, with a five-minute soak and five minutes of
# the randomized checker on one server, five on a cluster and five
# through sentinels
# (ARGS="-chaos.time 30m" for longer), against containers
# of a local image where Docker answers (BATON_REDIS_IMAGE names it;
# BATON_REDIS_IMAGES=a,b runs the suite once per image), else against a
# redis-server from PATH. ARGS go to the test binary, for example
# ARGS="-soak 30m".
integration: need-redis
	$(GO) test -race -count=1 -v -timeout 60m ./integration -args $(ARGS)

need-redis:
	@scripts/need-redis.sh

lint:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# Benchmarks, run BENCH_COUNT times over so that every benchmark and its
# baseline alternate through the machine's noise, then the ratios each
# claim in the README rests on, computed by benchstat from those runs.
bench:
	@mkdir -p .bench && rm -f .bench/all.txt
	for i in $$(seq $(BENCH_COUNT)); do \
		$(GO) test -run '^$$' -bench . -benchmem -count 1 ./resp/ ./conn/ ./lock/ ./manager/ | tee -a .bench/all.txt || exit 1; \
	done
	$(BENCHSTAT) -filter '.name:Do' -col /impl .bench/all.txt
	$(BENCHSTAT) -filter '.name:DoParallel' -col /goroutines .bench/all.txt
	$(BENCHSTAT) -filter '.name:LockUnlock' -col /impl .bench/all.txt
	$(BENCHSTAT) -filter '.name:LockUnlockDone' -col /done .bench/all.txt
	$(BENCHSTAT) -filter '.name:Modify' -col /impl .bench/all.txt
	$(BENCHSTAT) -filter '.name:HandOff' -col /mode .bench/all.txt
	$(BENCHSTAT) -filter '.name:ClusterLockUnlock' -col /server .bench/all.txt
	$(BENCHSTAT) -filter '.name:ClusterLockParallel' -col /server .bench/all.txt
	$(BENCHSTAT) -filter '-.name:Do -.name:DoParallel -.name:LockUnlock -.name:LockUnlockDone -.name:Modify -.name:HandOff -.name:ClusterLockUnlock -.name:ClusterLockParallel' .bench/all.txt

# baton side by side with the locks it is compared with, from bench/, a
# module of its own so that the library's go.mod names no other Redis
# client: seven scenarios on throwaway redis-servers from PATH (about 20
# minutes on 2 vCPUs; fewer with ARGS="--rounds 5 --scenarios 1,3,4"),
# or against the server ARGS name, for example ARGS="--addr
# 127.0.0.1:6379 --scenarios 1,2,3,4,5,7". docs/BENCHMARKS.md was made with
# ARGS="--pin --plots ../docs/bench"; ARGS="--json" prints the report as
# one JSON document. `test` runs its tests too.
bench-peers:
	cd bench && $(GO) run . $(ARGS)

# A local Docker image of this machine's redis-server, built FROM scratch
# (no registry needed), for the demo's and the integration suite's Docker
# backend. IMAGE names it.
IMAGE ?= baton-redis:local
redis-image:
	scripts/redis-image.sh $(IMAGE)

# A short fuzz run of the RESP reader against its oracle.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReader -fuzztime $(FUZZ_TIME) ./resp/
