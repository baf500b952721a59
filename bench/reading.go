package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/internal/cmdstats"
)

// reading is what the server says of its work so far, read before and
// after a measured round: the commands it ran, its process's CPU time
// (user and system) and the replies its I/O threads wrote, which it starts
// doing when, in one pass of its event loop, twice as many clients as it
// has I/O threads have replies to write.
type reading struct {
	cmds     cmdstats.Stats
	cpu      time.Duration
	threaded int64 // 0 without I/O threads, or on a server that does not say
}

// readServer takes a reading through c, in one INFO. "all" rather than a
// list of sections, which servers before Redis 7 refuse.
func readServer(ctx context.Context, c *redis.Client) (reading, error) {
	info, err := c.Info(ctx, "all").Result()
	if err != nil {
		return reading{}, fmt.Errorf("INFO: %w", err)
	}
	cmds, err := cmdstats.Parse(info)
	if err != nil {
		return reading{}, err
	}
	fields := infoFields(info)
	r := reading{cmds: cmds}
	for _, k := range []string{"used_cpu_sys", "used_cpu_user"} {
		secs, err := strconv.ParseFloat(fields[k], 64)
		if err != nil {
			return reading{}, fmt.Errorf("INFO: %s: %w", k, err)
		}
		r.cpu += time.Duration(secs * float64(time.Second))
	}
	if v, ok := fields["io_threaded_writes_processed"]; ok {
		if r.threaded, err = strconv.ParseInt(v, 10, 64); err != nil {
			return reading{}, fmt.Errorf("INFO: io_threaded_writes_processed: %w", err)
		}
	}
	return r, nil
}

// work is what the server did between two readings.
type work struct {
	cmds     cmdstats.Stats // without the INFOs that took the readings
	cpu      time.Duration
	threaded int64
}

// since returns the server's work from earlier to r.
func (r reading) since(earlier reading) (work, error) {
	cmds, err := cmdstats.Delta(earlier.cmds, r.cmds)
	if err != nil {
		return work{}, err
	}
	return work{cmds: cmds.Without("info"), cpu: r.cpu - earlier.cpu, threaded: r.threaded - earlier.threaded}, nil
}

// infoFields returns the "name:value" lines of an INFO reply by name.
func infoFields(info string) map[string]string {
	fields := map[string]string{}
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\r"), ":"); ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	return fields
}
