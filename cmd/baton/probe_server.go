package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/batonlock/baton/internal/keyevents"
	"github.com/batonlock/baton/resp"
)

// serverFacts is what the probe learns about the server besides the
// order of its writes.
type serverFacts struct {
	// Name is "redis", or what INFO's server_name says (valkey); Version
	// is its version. Both are empty where INFO is refused.
	Name      string `json:"name"`
	Version   string `json:"version"`
	InfoError string `json:"info_error,omitempty"`

	// ConfigAvailable is whether CONFIG GET answers; ConfigError is the
	// server's refusal otherwise.
	ConfigAvailable bool   `json:"config_available"`
	ConfigError     string `json:"config_error,omitempty"`
	// IOThreads and IOThreadsDoReads are null where CONFIG is refused or
	// the server has no such setting.
	IOThreads        *int    `json:"io_threads"`
	IOThreadsDoReads *string `json:"io_threads_do_reads"`

	KeyspaceEvents keyspaceFacts `json:"keyspace_events"`
}

// keyspaceFacts is how the probe got its del events.
type keyspaceFacts struct {
	// Setting is notify-keyspace-events as found; null where CONFIG is
	// refused.
	Setting *string `json:"setting"`
	// Published is whether del events reached the waiter.
	Published bool `json:"published"`
	// TurnedOn is the value the probe set for the run, or empty if it
	// changed nothing; Restored says whether the value found was put
	// back, and RestoreNote why not.
	TurnedOn    string `json:"turned_on,omitempty"`
	Restored    bool   `json:"restored"`
	RestoreNote string `json:"restore_note,omitempty"`
}

// neededEvents are the notify-keyspace-events flags the probe needs:
// keyspace channels (K) and generic commands (g), which DEL, GETDEL and
// a script's DEL publish under. A covers g.
const neededEvents = "Kg"

// learnServer fills in the version and the settings. A server that
// refuses INFO or CONFIG is noted; one that fails otherwise ends the probe.
func (s *probeSession) learnServer(ctx context.Context) (serverFacts, error) {
	var f serverFacts
	v, err := s.do(ctx, "INFO", "server")
	switch {
	case isServerError(err):
		f.InfoError = serverMessage(err)
	case err != nil:
		return f, fmt.Errorf("%s: INFO server: %w", s.shown, err)
	default:
		f.Name, f.Version = serverVersion(v.Str)
	}

	setting, err := s.configGet(ctx, "notify-keyspace-events")
	switch {
	case isServerError(err):
		f.ConfigError = serverMessage(err)
		return f, nil
	case err != nil:
		return f, err
	}
	f.ConfigAvailable = true
	f.KeyspaceEvents.Setting = setting
	// A refusal of these two leaves them unknown: they only explain the
	// order, which the rounds measure anyway.
	threads, err := s.configGet(ctx, "io-threads")
	if err != nil && !isServerError(err) {
		return f, err
	}
	if threads != nil {
		if n, err := strconv.Atoi(*threads); err == nil {
			f.IOThreads = &n
		}
	}
	if f.IOThreadsDoReads, err = s.configGet(ctx, "io-threads-do-reads"); err != nil && !isServerError(err) {
		return f, err
	}
	return f, nil
}

// configGet returns one setting, or nil when the server has no such
// setting. A server error is returned as is, matching *resp.Error.
func (s *probeSession) configGet(ctx context.Context, name string) (*string, error) {
	v, err := s.do(ctx, "CONFIG", "GET", name)
	if isServerError(err) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: CONFIG GET %s: %w", s.shown, name, err)
	}
	// A two-element array in RESP2, a map of one pair in RESP3; empty
	// when the server has no such setting.
	if len(v.Elems) < 2 {
		return nil, nil
	}
	val := v.Elems[1].Str
	return &val, nil
}

// serverVersion reads the server's name and version from INFO server.
// Valkey reports redis_version too (the Redis version it is compatible
// with), so its own name and version win when present.
func serverVersion(info string) (name, version string) {
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			fields[k] = v
		}
	}
	name, version = "redis", fields["redis_version"]
	if n := fields["server_name"]; n != "" {
		name = n
		if v := fields[n+"_version"]; v != "" {
			version = v
		}
	}
	return name, version
}

// errCannotMeasure is matched when the server does not publish the del
// events and the probe cannot make it.
var errCannotMeasure = errors.New("cannot measure")

// ensureEvents turns on the keyspace events the probe needs if CONFIG
// allows and they are off, and then checks that a DEL of the key reaches
// the waiter. It records what it changed in f, for restoreEvents. The
// wires must be dialled.
func (s *probeSession) ensureEvents(ctx context.Context, f *serverFacts) error {
	ks := &f.KeyspaceEvents
	if ks.Setting != nil {
		if missing := keyevents.Missing(*ks.Setting, neededEvents); missing != "" {
			want := *ks.Setting + missing
			_, err := s.do(ctx, "CONFIG", "SET", "notify-keyspace-events", want)
			if err != nil && !isServerError(err) {
				return fmt.Errorf("%s: CONFIG SET notify-keyspace-events: %w", s.shown, err)
			}
			if err != nil {
				return fmt.Errorf("%s: %w: keyspace events are off (notify-keyspace-events %q) and CONFIG SET refused to add %q: %w",
					s.shown, errCannotMeasure, *ks.Setting, missing, err)
			}
			ks.TurnedOn = want
		}
	}
	published, err := s.checkEvents()
	switch {
	case err != nil:
		return err
	case published:
		ks.Published = true
		return nil
	case !f.ConfigAvailable:
		return fmt.Errorf("%s: %w: the server publishes no del keyspace events and refuses CONFIG (%s), so the probe cannot turn them on; set notify-keyspace-events to include %q on the server",
			s.shown, errCannotMeasure, f.ConfigError, neededEvents)
	default:
		return fmt.Errorf("%s: %w: notify-keyspace-events includes %q, yet a DEL of %s published nothing on %s",
			s.shown, errCannotMeasure, neededEvents, s.key, s.channel)
	}
}

// checkEvents sets and deletes the key once, and reports whether the del
// event reached the waiter. No timer decides: the waiter's PING is
// answered after any event the DEL published.
func (s *probeSession) checkEvents() (bool, error) {
	for _, cmd := range [][]string{{"SET", s.key, "check", "EX", probeKeyTTL}, {"DEL", s.key}} {
		v, err := s.rel.roundTrip(cmd...)
		if err == nil {
			err = v.Err()
		}
		if err != nil {
			return false, fmt.Errorf("%s: %s %s: %w", s.shown, cmd[0], s.key, err)
		}
	}
	return s.syncWaiter()
}

// restoreEvents puts notify-keyspace-events back as found, if the probe
// changed it and nobody changed it since. It runs after ctx may have
// ended, so it has its own bound.
func (s *probeSession) restoreEvents(ctx context.Context, ks *keyspaceFacts) error {
	if ks.TurnedOn == "" {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	now, err := s.configGet(ctx, "notify-keyspace-events")
	if err != nil {
		return fmt.Errorf("%s: restoring notify-keyspace-events to %q: %w", s.shown, *ks.Setting, err)
	}
	if now == nil || !sameEvents(*now, ks.TurnedOn) {
		ks.RestoreNote = "changed by someone else while the probe ran; left as it is"
		return nil
	}
	if _, err := s.do(ctx, "CONFIG", "SET", "notify-keyspace-events", *ks.Setting); err != nil {
		return fmt.Errorf("%s: restoring notify-keyspace-events to %q: %w", s.shown, *ks.Setting, err)
	}
	ks.Restored = true
	return nil
}

// sameEvents compares two notify-keyspace-events values as sets of
// flags: the server gives back what it was set to in its own order.
func sameEvents(a, b string) bool {
	has := func(s string, r rune) bool { return strings.ContainsRune(s, r) }
	for _, r := range a + b {
		if has(a, r) != has(b, r) {
			return false
		}
	}
	return true
}

// serverMessage is the server's own words in a refusal: the error reply
// as sent, without the connection's prefixes.
func serverMessage(err error) string {
	var se *resp.Error
	if errors.As(err, &se) {
		return strings.TrimSpace(se.Message)
	}
	return err.Error()
}

// isServerError reports whether err is the server's refusal of a command
// (an error reply), as opposed to a connection or timeout failure.
func isServerError(err error) bool {
	var se *resp.Error
	return errors.As(err, &se)
}
