package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// modifyWrites is how many writes an uncontended Modify makes: the
// acquire with the state's read, and the write-back with the release.
const modifyWrites = 2

// recordedWrite is one write that a Modify made, as its bytes went to the
// server, and the replies that its commands got then.
type recordedWrite struct {
	bytes   []byte
	replies []resp.Value
}

// errReplayDiffers is the error of a replayed command whose reply says
// other than the recorded one did.
var errReplayDiffers = errors.New("replay: the server answered otherwise than to the recorded Modify")

// replayModifier is the yardstick of baton's manager: the bytes of one
// uncontended Modify, recorded once, written again on a bare socket for
// every operation, each write's replies read before the next write. The
// server does the same work in the same round trips, with no client code
// around them, so Modify's time over its replay is what baton's own code
// costs. It is not safe for concurrent use.
type replayModifier struct {
	c      net.Conn
	r      *resp.Reader
	writes []recordedWrite
}

// openModifyReplay records one uncontended Modify of baton's manager on
// key, in fair mode when fair is set, and returns a replayModifier of it.
func openModifyReplay(fair bool) func(ctx context.Context, addr, key string) (modifier, error) {
	return func(ctx context.Context, addr, key string) (modifier, error) {
		writes, err := recordModify(ctx, addr, fair, key)
		if err != nil {
			return nil, fmt.Errorf("recording a Modify: %w", err)
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		return &replayModifier{c: c, r: resp.NewReader(c), writes: writes}, nil
	}
}

// recordModify runs Modify on key through a Locker whose command
// connection has a tap, and returns the writes of its last call, after a
// few that load the scripts and open the connection. The subscriber has a
// connection of its own, without the tap, so nothing else is recorded.
func recordModify(ctx context.Context, addr string, fair bool, key string) ([]recordedWrite, error) {
	var (
		mu        sync.Mutex
		recording bool
		writes    [][]byte
		reads     []byte
	)
	tap := conn.WithTap(func(dir conn.Direction, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !recording:
		case dir == conn.Write:
			writes = append(writes, bytes.Clone(p))
		default:
			reads = append(reads, p...)
		}
	})
	client, err := conn.NewClient(addr, tap)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	sub, err := subscriber.New(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	opts := []lock.Option{lock.WithTTL(lockTTL)}
	if fair {
		opts = append(opts, lock.WithFair())
	}
	l, err := lock.New(client, sub, opts...)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	m := manager.New[counter](l)
	defer m.Close()
	increment := func(c *counter) error { c.N++; return nil }
	const loads = 3
	for range loads {
		if err := m.Modify(ctx, key, increment); err != nil {
			return nil, err
		}
	}
	mu.Lock()
	recording = true
	mu.Unlock()
	err = m.Modify(ctx, key, increment)
	mu.Lock()
	recording = false
	mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(writes) != modifyWrites {
		return nil, fmt.Errorf("an uncontended Modify made %d writes, not %d", len(writes), modifyWrites)
	}
	replies := resp.NewReader(bytes.NewReader(reads))
	out := make([]recordedWrite, len(writes))
	for i, w := range writes {
		commands, err := readAll(w)
		if err != nil {
			return nil, fmt.Errorf("write %d: %w", i+1, err)
		}
		out[i].bytes = w
		for range commands {
			v, err := replies.Read()
			if err != nil {
				return nil, fmt.Errorf("the replies to write %d: %w", i+1, err)
			}
			out[i].replies = append(out[i].replies, v)
		}
	}
	return out, nil
}

// readAll decodes every frame in b: the commands of a write.
func readAll(b []byte) ([]resp.Value, error) {
	r := resp.NewReader(bytes.NewReader(b))
	var out []resp.Value
	for {
		v, err := r.Read()
		if errors.Is(err, io.EOF) && len(out) > 0 {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// sameOutcome reports whether got, a reply to a replayed command, says
// what want, the reply to the recorded one, said: the same type, and the
// same integer, except that any two above 1 match (fencing tokens), and
// as many elements, each with the same outcome.
func sameOutcome(got, want resp.Value) bool {
	if got.Type != want.Type || len(got.Elems) != len(want.Elems) {
		return false
	}
	if got.Type == resp.Integer && got.Int != want.Int && (got.Int <= 1 || want.Int <= 1) {
		return false
	}
	for i := range got.Elems {
		if !sameOutcome(got.Elems[i], want.Elems[i]) {
			return false
		}
	}
	return true
}

// Modify writes the recorded bytes again, a write at a time, and reads
// each write's replies. A reply that says other than the recorded one
// did fails it: the replay would not be doing the work that Modify does.
// After an error the connection is out of step, and the bench stops.
func (m *replayModifier) Modify(ctx context.Context, _ string) error {
	dl, _ := ctx.Deadline() // the zero time, no deadline, when there is none
	if err := m.c.SetDeadline(dl); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	for _, w := range m.writes {
		if _, err := m.c.Write(w.bytes); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		for _, want := range w.replies {
			got, err := m.r.Read()
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			if !sameOutcome(got, want) {
				return fmt.Errorf("%w: %v, where it was %v", errReplayDiffers, got, want)
			}
		}
	}
	return nil
}

func (m *replayModifier) Close() error { return m.c.Close() }

// replayIdent is the suffix of a replay row's id, after its manager
// row's.
const replayIdent = "-replay"

// replayRatio is a manager row's figures against its replay's: the
// medians of the per-round ratios.
type replayRatio struct {
	modify, replay int // row indexes
	ratios         row
}

// replayRatios pairs each replay row of ids with its manager row and
// takes their ratios, round by round.
func replayRatios(ids, names []string, samples [][]sample) []replayRatio {
	var out []replayRatio
	for i, id := range ids {
		modify := slices.Index(ids, strings.TrimSuffix(id, replayIdent))
		if !strings.HasSuffix(id, replayIdent) || modify < 0 {
			continue
		}
		out = append(out, replayRatio{modify: modify, replay: i, ratios: summarize(names, samples, i)[modify]})
	}
	return out
}

// writeReplayRatios writes, under the read-modify-write table, each
// manager row's ratios to its replay.
func writeReplayRatios(w io.Writer, names []string, replays []replayRatio) error {
	if len(replays) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, `
Each Modify against its replay: the bytes of one uncontended Modify,
recorded once, written again on a bare socket, each write's replies read
before the next write (the same server work in the same round trips,
with no client code around them). Medians of the per-round ratios:

| row | p50 ÷ replay | p99 ÷ replay | CPU ÷ replay | server CPU ÷ replay |
| --- | ---: | ---: | ---: | ---: |
`)
	if err != nil {
		return err
	}
	for _, r := range replays {
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", names[r.modify],
			times(r.ratios.p50Ratio), times(r.ratios.p99Ratio), times(r.ratios.cpuRatio), times(r.ratios.srvRatio))
		if err != nil {
			return err
		}
	}
	return nil
}
