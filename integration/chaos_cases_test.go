package integration_test

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTheChaosChecksCatchWhatTheyMust feeds checkChaos made-up histories:
// each broken one must be caught, with the kind of violation it is, and
// each sound one passed, so that a clean TestChaos means something.
func TestTheChaosChecksCatchWhatTheyMust(t *testing.T) {
	ms := func(n float64) int64 { return int64(n * float64(time.Millisecond)) }
	lease := func(id string, grant, watch, lastOpen float64, fence uint64) chaosRecord {
		return chaosRecord{Kind: recLease, ID: id, Lease: id, Actor: "p.a#1", Key: "k", Call: ms(grant), Ret: ms(lastOpen + 1),
			Fence: fence, TTL: int64(time.Second), WatchAt: ms(watch), LastOpen: ms(lastOpen)}
	}
	lock := func(id string, call, ret float64, fence uint64) chaosRecord {
		return chaosRecord{Kind: recLock, ID: id, Lease: id, Key: "k", Call: ms(call), Ret: ms(ret), Class: classOK, Fence: fence}
	}
	modify := func(id string, fnStart, fnEnd float64, old int, class string) chaosRecord {
		return chaosRecord{Kind: recModify, ID: id, Key: "k", Call: ms(fnStart - 1), Ret: ms(fnEnd + 1), FnStart: ms(fnStart), FnEnd: ms(fnEnd),
			Old: old, Class: class, Note: "ok"}
	}
	read := func(n int) []modifyOp { return []modifyOp{{token: "k", call: ms(1000), ret: ms(1001), old: n}} }
	otherActor := func(r chaosRecord) chaosRecord {
		r.Actor = "p.b#1"
		return r
	}
	predone := func(r chaosRecord, lastOpenLate float64) chaosRecord {
		r.PreDone, r.LastOpenLate = true, ms(lastOpenLate)
		return r
	}
	// ended is r seen closed at closed, for the reason end.
	ended := func(r chaosRecord, closed float64, end string) chaosRecord {
		r.Closed, r.End = ms(closed), end
		return r
	}
	// loseLock is a lose-lock fault at call that struck the lease with
	// fence.
	loseLock := func(call float64, fence uint64) chaosRecord {
		return chaosRecord{Kind: recFault, ID: "fault.1", Key: "k", Fence: fence, Call: ms(call), Ret: ms(call + 0.2), Note: "lose-lock del k"}
	}
	bound := float64(lossBound) / 1e6 // ms
	cases := []struct {
		name string
		recs []chaosRecord
		read []modifyOp
		want string // the kind of violation, "" for a sound history
	}{
		{"leases one after the other", []chaosRecord{
			lock("a", 0, 1, 10), lease("a", 1, 2, 5, 10), lock("b", 3, 6, 11), lease("b", 6, 7, 9, 11),
		}, nil, ""},
		{"a lease seen held after the next was granted", []chaosRecord{
			lock("a", 0, 1, 10), lease("a", 1, 2, 27, 10), lock("b", 3, 6, 11), lease("b", 6, 7, 29, 11),
		}, nil, findOverlap},
		{"a lease seen held within a timer's lateness of the next grant", []chaosRecord{
			lock("a", 0, 1, 10), lease("a", 1, 2, 9, 10), lock("b", 3, 6, 11), lease("b", 6, 7, 12, 11),
		}, nil, ""},
		{"a lease whose watcher came late counts from its grant only", []chaosRecord{
			lock("a", 0, 1, 10), lease("a", 1, 800, 900, 10), lock("b", 3, 6, 11), lease("b", 6, 7, 9, 11),
		}, nil, ""},
		{"a lease extended before Done counts from the first look's grace on", []chaosRecord{
			lock("a", 0, 1, 10), predone(lease("a", 1, 2, 7, 10), 0), lock("b", 3, 6, 11), lease("b", 6, 7, 9, 11),
		}, nil, ""},
		{"a lease extended before Done seen held late", []chaosRecord{
			lock("a", 0, 1, 10), predone(lease("a", 1, 2, 70, 10), 70), lock("b", 3, 6, 11), lease("b", 6, 7, 9, 11),
		}, nil, findOverlap},
		{"a lease that Close ended and handed on before its Lock returned", []chaosRecord{
			lock("a", 0, 5, 10), lease("a", 5, 30, 0, 10),
			{Kind: recClose, ID: "p.a#1.close", Actor: "p.a#1", Call: ms(3), Ret: ms(40), Class: classOK},
			lock("b", 2, 4, 11), otherActor(lease("b", 4, 6, 20, 11)),
		}, nil, ""},
		{"a lease granted while another that Close ended was held", []chaosRecord{
			lock("a", 0, 5, 10), lease("a", 5, 30, 0, 10),
			{Kind: recClose, ID: "p.a#1.close", Actor: "p.a#1", Call: ms(3), Ret: ms(40), Class: classOK},
			lock("b", 1, 2, 11), otherActor(lease("b", 2, 6, 20, 11)),
		}, nil, findOverlap},
		{"a lease seen open, granted after another ended, while its Locker's Close was called", []chaosRecord{
			lock("a", 0, 1, 10), otherActor(lease("a", 1, 2, 35, 10)),
			{Kind: recClose, ID: "p.a#1.close", Actor: "p.a#1", Call: ms(20), Ret: ms(60), Class: classOK},
			lock("b", 2, 40, 11), lease("b", 40, 41, 45, 11),
		}, nil, ""},
		{"a Modify's fn inside a lease", []chaosRecord{
			lock("a", 0, 1, 10), lease("a", 1, 2, 30, 10), modify("m", 4, 5, 0, classOK),
		}, read(1), findOverlap},
		{"a fencing token that went back", []chaosRecord{
			lock("a", 0, 1, 11), lease("a", 1, 2, 2, 11), lock("b", 3, 6, 10), lease("b", 6, 7, 7, 10),
		}, nil, findFence},
		{"an increment lost", []chaosRecord{
			modify("m1", 1, 2, 0, classOK), modify("m2", 3, 4, 1, classOK),
		}, read(1), findCounts},
		{"a failed write that landed", []chaosRecord{
			modify("m1", 1, 2, 0, classNotHeld), modify("m2", 3, 4, 1, classOK),
		}, read(2), findCounts},
		{"an uncertain write that landed", []chaosRecord{
			modify("m1", 1, 2, 0, classUncertain), modify("m2", 3, 4, 1, classOK),
		}, read(2), ""},
		{"Extend(MaxInt64) taken", []chaosRecord{
			{Kind: recExtend, ID: "e", Key: "k", Lease: "a", Call: 1, Ret: 2, Class: classOK, Note: "ttl=9223372036854775807"},
		}, nil, findExtend},
		{"Extend(0) refused", []chaosRecord{
			{Kind: recExtend, ID: "e", Key: "k", Lease: "a", Call: 1, Ret: 2, Class: classInvalid, Note: "ttl=0 invalid"},
		}, nil, ""},
		{"two Unlocks of a lease succeeded", []chaosRecord{
			{Kind: recUnlock, ID: "u1", Key: "k", Lease: "a", Call: 1, Ret: 2, Class: classOK},
			{Kind: recUnlock, ID: "u2", Key: "k", Lease: "a", Call: 1, Ret: 3, Class: classOK},
		}, nil, findDoubleUnlock},
		{"Done open after Close returned", []chaosRecord{
			lock("a", 0, 1, 10), lease("a", 1, 2, 30, 10),
			{Kind: recClose, ID: "p.a#1.close", Actor: "p.a#1", Call: ms(10), Ret: ms(20), Class: classOK},
		}, nil, findDoneOpen},
		{"a Lock past its context's end", []chaosRecord{
			{Kind: recLock, ID: "l", Key: "k", Call: 0, CtxEnd: ms(10), Ret: ms(10) + int64(chaosGrace) + 1, Class: classCtx},
		}, nil, findBound},
		{"an Unlock without a context within its release timeout", []chaosRecord{
			{Kind: recUnlock, ID: "u", Key: "k", Lease: "a", Call: 0, Ret: int64(releaseTimeout), Class: classUncertain},
		}, nil, ""},
		{"a lease whose lock a fault deleted, taken by another owner before it heard", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 25, 10), 26, endLost), loseLock(5, 10),
			lock("b", 5.1, 5.3, 11), otherActor(lease("b", 5.3, 5.4, 30, 11)),
		}, nil, ""},
		{"a lease seen held after the next grant, its lock deleted after that", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 25, 10), 26, endLost), loseLock(20, 10),
			lock("b", 2.5, 3, 11), otherActor(lease("b", 3, 4, 30, 11)),
		}, nil, findOverlap},
		{"a lease that heard late that its lock was deleted", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 5+bound, 10), 5+bound+1, endLost), loseLock(5, 10),
		}, nil, findLateLoss},
		{"a lease whose Done was first asked for after the fault counts from then", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 5+bound, 5+bound, 10), 5+bound+1, endLost), loseLock(5, 10),
		}, nil, ""},
		{"a lease whose subscribe connection was down counts from its return", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 5+bound, 10), 5+bound+1, endLost), loseLock(5, 10),
			{Kind: recOutage, ID: "o", Actor: "p.a#1", Call: ms(4), Ret: ms(5 + bound)},
		}, nil, ""},
		{"a lease whose subscribe connection came back long before it heard", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 8+bound, 10), 8+bound+1, endLost), loseLock(5, 10),
			{Kind: recOutage, ID: "o", Actor: "p.a#1", Call: ms(4), Ret: ms(7)},
		}, nil, findLateLoss},
		{"a struck lease that ended released with no Unlock of its own", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 5.9, 10), 6, endReleased), loseLock(5, 10),
		}, nil, findCause},
		{"a struck lease that its Unlock ended first", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 5.1, 10), 5.2, endReleased), loseLock(5, 10),
			{Kind: recUnlock, ID: "u", Key: "k", Lease: "a", Call: ms(5.1), Ret: ms(6), Class: classNotHeld},
		}, nil, ""},
		{"a lease that ended lost with no fault", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 5.9, 10), 6, endLost),
		}, nil, findFalseLoss},
		{"a Modify's lease its observer saw lost with no fault", []chaosRecord{
			{Kind: recLost, ID: "p.a#1.lost.1", Actor: "p.a#1", Key: "k", Fence: 10, Call: ms(6), Ret: ms(6), Note: "removed"},
		}, nil, findFalseLoss},
		{"a lease whose own Extend to 1ms let its lock expire", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 5.9, 10), 6, endLost),
			{Kind: recExtend, ID: "e", Key: "k", Lease: "a", Call: ms(4), Ret: ms(6.5), Class: classNotHeld, Note: "ttl=1000000"},
		}, nil, ""},
		{"a Modify's lease handed on by its own write-back", []chaosRecord{
			{Kind: recModify, ID: "m", Actor: "p.a#1", Key: "k", Call: ms(1), Ret: ms(7), FnStart: ms(2), FnEnd: ms(3), Hold: true, Class: classOK, Note: "ok"},
			{Kind: recLost, ID: "p.a#1.lost.1", Actor: "p.a#1", Key: "k", Fence: 10, Call: ms(6), Ret: ms(6), Note: "overwritten"},
		}, read(1), ""},
		{"Done closed with Err nil", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 5.9, 10), 6, endNil),
		}, nil, findCause},
		{"a lease's context ended with another cause than Err's", []chaosRecord{
			lock("a", 0, 1, 10), ended(lease("a", 1, 2, 5.9, 10), 6, endMismatch),
		}, nil, findCause},
		{"baton panicked", []chaosRecord{
			{Kind: recLock, ID: "l", Key: "k", Call: 0, Ret: 1, Class: classBadPanic, Err: "boom"},
		}, nil, findPanic},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := checkChaos(c.recs, c.read, releaseTimeout)
			if c.want == "" {
				require.Empty(t, v.findings)
				return
			}
			require.NotEmpty(t, v.findings)
			require.Contains(t, v.kinds(), c.want, "%v", v.findings)
		})
	}
}

// TestTheChaosChecksCatchAPassword feeds checkSecrets made-up histories
// and worker outputs: a password in any form, in any text, must be
// caught, and neither the finding nor the history it leaves behind may
// say it.
func TestTheChaosChecksCatchAPassword(t *testing.T) {
	pass := chaosPassword()
	forms := newSecretForms(pass)
	require.Greater(t, len(forms), 4, "the forms differ: %q", forms)
	clean := chaosRecord{Kind: recLock, ID: "l", Key: "k", Call: 1, Ret: 2, Class: classOther, Err: "conn: redial of redis://:xxxxx@127.0.0.1:1: refused"}
	for _, c := range []struct {
		name   string
		recs   []chaosRecord
		output string
		want   int // findings
	}{
		{"none", []chaosRecord{clean}, "ok\n", 0},
		{"an error, as given", []chaosRecord{clean, {Kind: recUnlock, ID: "u", Key: "k", Call: 3, Class: classOther, Err: "redial of redis://:" + pass + "@h: x"}}, "", 1},
		{"an error, as a URL writes it", []chaosRecord{{Kind: recLock, ID: "l", Key: "k", Call: 3, Err: "redis://" + url.UserPassword("", pass).String() + "@h"}}, "", 1},
		{"a fault's error, query-encoded", []chaosRecord{{Kind: recFault, ID: "f", Call: 3, Note: "oom", Err: "x?p=" + url.QueryEscape(pass)}}, "", 1},
		{"a wrapped error a process found", []chaosRecord{{Kind: recLeak, ID: "test.leak.1", Call: 3, Note: "Lock test.a0.1 (*url.Error): [PASSWORD]"}}, "", 1},
		{"a worker's output", nil, "--- FAIL: dial redis://:" + url.PathEscape(pass) + "@h\n", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "w1.out")
			require.NoError(t, os.WriteFile(out, []byte(c.output), 0o644))
			found, n := checkSecrets(c.recs, map[string]string{"w1": out}, forms)
			require.Len(t, found, c.want, "%v", found)
			require.Equal(t, len(c.output), n.output)
			for _, f := range found {
				require.Equal(t, findSecret, f.kind)
				require.False(t, forms.in(f.what), "the finding says the password: %s", f.what)
			}
			for _, r := range c.recs {
				require.False(t, forms.in(r.describe(0)), "the history still says the password: %s", r.describe(0))
			}
		})
	}
}
