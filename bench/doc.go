// Command bench measures baton side by side with the Redis locks people
// compare it with: rueidislock, redsync, bsm/redislock, a plain go-redis
// lock that waits on keyspace notifications, and the floor, the same round
// trips on a bare socket. It is a module of its own, so that the
// library's go.mod stays free of other Redis clients; it reuses the
// library's internal histogram (internal/latency), server launcher
// (internal/redisproc) and INFO commandstats reader
// (internal/cmdstats), which Go's internal rule lets it import since its
// path lies under the library's.
//
// Seven scenarios, chosen with --scenarios: 1, uncontended Lock+Unlock,
// and a read-modify-write under the lock, with baton's manager beside
// the locks and, as its yardstick, the bytes of one Modify replayed on a
// bare socket; 2, throughput of 64 goroutines on 64 keys through one
// instance; 3, hand-off between 8 instances on one key, where the floor
// is 8 bare sockets taking turns in arrival order (--slow-steps reports
// its slow steps as they happen); 4, a remote
// waiter against a holder that takes the lock back in a tight loop; 5,
// the server's commands per acquisition in scenario 3; 6, scenarios 1,
// 3, 4 and 5 again on a server with I/O threads and on a binary of the
// user's (--server-bin); 7, how soon a holder hears that another client
// deleted its lock, for the locks that can tell it (baton's
// Lease.Context, rueidislock's WithContext). --plots writes the
// distributions as PNG files, and --pin places the server and the bench
// on CPUs of their own.
//
// Every scenario is run interleaved: each round runs every implementation
// once, in an order that rotates from round to round, and each figure is
// reported as the median over rounds and as the median of its per-round
// ratios to baton fast. These machines are shared and noisy; a ratio taken
// within one round holds where an absolute time does not.
//
// Concurrency: the scenarios run one implementation at a time, from the
// main goroutine; scenarios 2, 3 and 4 start that implementation's
// workers and wait for all of them before the next one runs. Each
// implementation owns its clients and whatever goroutines they start, and
// stops them in Close.
package main
