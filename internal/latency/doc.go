// Package latency records how long operations take, in an HDR histogram,
// and summarises them as the figures baton's benchmarks report: count,
// min, mean, p50, p90, p99, p99.9 and max. It owns the histogram's range
// and precision, so that every benchmark that uses it (the command line's
// bench and the peers' module) reports figures of one resolution in one
// JSON shape, and the names of the percentile columns (Columns) used in
// tables.
//
// The histogram keeps three significant digits from a microsecond to ten
// minutes: a percentile is within 0.1% of the latency it stands for, and
// never above the exact maximum. A benchmark that measures a closed loop
// (each goroutine starts its next operation when the last one ends), as
// baton's do, needs no correction for coordinated omission: the figures
// are those of the operations that ran, not of a schedule.
//
// Concurrency: a Recorder is safe for concurrent use; Record takes a mutex
// for a few tens of nanoseconds, far below the round trip to Redis that
// it measures. A Summary is a value.
package latency
