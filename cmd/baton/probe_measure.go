package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/batonlock/baton/resp"
)

// cleanupError is a failure to put things back (the key, the keyspace
// events setting) after the probe, measured or not.
type cleanupError struct{ err error }

func (e *cleanupError) Error() string { return "cleaning up: " + e.err.Error() }
func (e *cleanupError) Unwrap() error { return e.err }

// probe measures the server at f.addr. It returns the report, or nil and
// why it could not measure. Either way it first puts back the keyspace
// events setting it changed and deletes its key; if that fails, the error
// is a *cleanupError, and the report, if any, is still good.
func probe(ctx context.Context, f probeFlags) (*probeReport, error) {
	s, err := dialProbe(ctx, f.addr)
	if err != nil {
		return nil, err
	}
	rep := &probeReport{Addr: redactAddr(f.addr), Key: s.key, Rounds: f.rounds, ThresholdPercent: headStartThreshold}
	err = s.measure(ctx, f, rep)
	cleanup := s.restoreEvents(ctx, &rep.Server.KeyspaceEvents)
	if cerr := s.close(ctx); cleanup == nil {
		cleanup = cerr
	}
	if cleanup != nil {
		cleanup = &cleanupError{err: cleanup}
	}
	switch {
	case err != nil && cleanup != nil:
		return nil, fmt.Errorf("%w; and %w", err, cleanup)
	case err != nil:
		return nil, err
	}
	return rep, cleanup
}

// measure fills rep: the server's facts, then the rounds, then the tapped
// release if asked for.
func (s *probeSession) measure(ctx context.Context, f probeFlags, rep *probeReport) error {
	facts, err := s.learnServer(ctx)
	rep.Server = facts
	if err != nil {
		return err
	}
	if err := s.dialWires(ctx); err != nil {
		return err
	}
	if err := s.ensureEvents(ctx, &rep.Server); err != nil {
		return err
	}
	// An optimisation only: without it the first EVALSHA falls back to
	// EVAL, which loads the script.
	_, _ = s.do(ctx, "SCRIPT", "LOAD", compareAndDelete)

	rep.Styles = make([]styleResult, len(releaseStyles))
	for i, st := range releaseStyles {
		rep.Styles[i].Style = st.name
	}
	// The styles take turns round by round, so that whatever else loads
	// the machine meanwhile weighs on each of them alike.
	for range f.rounds {
		for i, st := range releaseStyles {
			r := &rep.Styles[i]
			if r.Error != "" {
				continue
			}
			first, err := s.round(ctx, st, nil)
			switch {
			case err == nil:
				r.add(first)
			case isServerError(err) && st.name != pingEvalStyle:
				// An older server without GETDEL, say: the other
				// styles still tell.
				r.Error = serverMessage(err)
			case isServerError(err):
				return fmt.Errorf("the server refused fast mode's release, so fast mode cannot run there: %w", err)
			default:
				return err
			}
		}
	}
	if f.tap {
		rec := &tapRecording{}
		first, err := s.round(ctx, releaseStyles[len(releaseStyles)-1], rec)
		if err != nil {
			return err
		}
		rep.Tap = &tapReport{NotificationFirst: first, Lines: rec.lines}
	}
	rep.decide()
	return nil
}

// round sets the key and releases it in style st, and reports whether the
// del event reached the waiter's socket before the reply reached the
// releaser's. With rec, the bytes of the release, and of what the waiter
// receives, are recorded, in the order they arrived.
func (s *probeSession) round(ctx context.Context, st releaseStyle, rec *tapRecording) (notificationFirst bool, err error) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	token := hex.EncodeToString(b[:])
	v, err := s.rel.roundTrip("SET", s.key, token, "EX", probeKeyTTL)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return false, fmt.Errorf("%s: SET %s: %w", s.shown, s.key, err)
	}
	if _, err := s.syncWaiter(); err != nil {
		return false, err
	}
	if rec != nil {
		s.rel.record(rec)
		s.sub.record(rec)
		defer s.rel.record(nil)
		defer s.sub.record(nil)
	}
	notificationFirst, err = s.release(ctx, st, token, bySHA)
	if errors.Is(err, resp.NoScript) {
		notificationFirst, err = s.release(ctx, st, token, byText)
	}
	return notificationFirst, err
}

// release sends the release, takes the arrival order, and then reads the
// two sides in that order.
func (s *probeSession) release(ctx context.Context, st releaseStyle, token string, src scriptSource) (notificationFirst bool, err error) {
	if err := s.order.reset(); err != nil {
		return false, fmt.Errorf("%s: %w", s.shown, err)
	}
	if err := s.sendRelease(st, token, src); err != nil {
		return false, err
	}
	fd, err := s.order.first(ctx, probeStepTimeout)
	if err != nil {
		return false, fmt.Errorf("%s: after a %s release of %s: %w", s.shown, st.name, s.key, err)
	}
	notificationFirst = fd == s.sub.fd
	if notificationFirst {
		if err := s.awaitDel(); err != nil {
			return false, fmt.Errorf("%s: after a %s release of %s: %w", s.shown, st.name, s.key, err)
		}
	}
	if err := s.readRelease(st, token); err != nil {
		return false, err
	}
	if !notificationFirst {
		if err := s.awaitDel(); err != nil {
			return false, fmt.Errorf("%s: after a %s release of %s: %w", s.shown, st.name, s.key, err)
		}
	}
	return notificationFirst, nil
}
