// Command bench measures baton side by side with the Redis locks people
// compare it with: rueidislock, redsync, bsm/redislock, a plain go-redis
// lock that waits on keyspace notifications, and the floor, the same round
// trips on a bare socket. It is a module of its own, so that the
// library's go.mod stays free of other Redis clients; it reuses the
// library's internal histogram (internal/latency) and server launcher
// (internal/redisproc), which Go's internal rule lets it import since its
// path lies under the library's.
//
// Every scenario is run interleaved: each round runs every implementation
// once, in an order that rotates from round to round, and each figure is
// reported as the median over rounds and as the median of its per-round
// ratios to baton fast. These machines are shared and noisy; a ratio taken
// within one round holds where an absolute time does not.
//
// Concurrency: the scenarios run one implementation at a time, from the
// main goroutine. Each implementation owns its clients and whatever
// goroutines they start, and stops them in Close.
package main
