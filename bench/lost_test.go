package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatchesLossNamesTheWatchers: an implementation is marked as
// watching for a loss exactly where its locker can.
func TestWatchesLossNamesTheWatchers(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, im := range impls() {
		l, err := im.open(ctx, addr)
		require.NoError(t, err, im.name)
		_, ok := l.(lossWatcher)
		require.NoError(t, l.Close(), im.name)
		require.Equal(t, im.watchesLoss, ok, "%s: watchesLoss, against its locker", im.name)
	}
}

// TestEveryWatcherHearsALoss: for each lock that can tell its holder of
// a loss, on a server of its own, the key is tracked once LockWatched
// returns (for rueidislock, whose watch is said to be in place then,
// this is the check), the key it names is the lock's, and the holder
// hears of every DEL.
func TestEveryWatcherHearsALoss(t *testing.T) {
	for _, im := range impls() {
		if !im.watchesLoss {
			continue
		}
		t.Run(im.name, func(t *testing.T) {
			addr := startServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, err := im.open(ctx, addr)
			require.NoError(t, err)
			defer func() { require.NoError(t, l.Close()) }()
			admin, err := newGoRedis(ctx, addr)
			require.NoError(t, err)
			defer admin.Close()
			w := l.(lossWatcher)

			before, err := trackedKeys(ctx, admin)
			require.NoError(t, err)
			held, err := w.LockWatched(ctx, "baton-bench-test:lost", admin)
			require.NoError(t, err)
			after, err := trackedKeys(ctx, admin)
			require.NoError(t, err)
			require.Greater(t, after, before, "the lock's key is not tracked once LockWatched returns")
			require.Equal(t, int64(1), admin.Exists(ctx, held.key).Val(), "the key named is not the lock's")
			require.NoError(t, held.ctx.Err(), "the context of a lock still held")
			require.NoError(t, held.release(ctx))

			for range 5 {
				n, err := loseOnce(ctx, w, "baton-bench-test:lost", admin)
				require.NoError(t, err)
				require.False(t, n.missed, "a loss unheard for %s", lossGrace)
				require.Positive(t, n.took)
			}
		})
	}
}

// TestLostLeaseRounds runs scenario 7's rounds briefly: every loss is
// counted once, in rounds of lossesPerRound, the last one short.
func TestLostLeaseRounds(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	groups, err := openWatchers(ctx, addr, "baton-bench-test:", impls())
	require.NoError(t, err)
	defer func() { require.NoError(t, closeEach(groups)) }()
	require.Len(t, groups, 3, "baton fast, baton fair, rueidislock")
	admin, err := newGoRedis(ctx, addr)
	require.NoError(t, err)
	defer admin.Close()

	const losses = lossesPerRound + 2
	notices, err := runLostLease(ctx, groups, admin, losses, io.Discard)
	require.NoError(t, err)
	require.Len(t, notices, 2)
	for i, g := range groups {
		require.Len(t, notices[0][i], lossesPerRound, g.name)
		require.Len(t, notices[1][i], 2, g.name)
		s := summarizeLosses(notices, i, 0)
		require.Equal(t, losses, s.losses, g.name)
		require.Zero(t, s.missed, g.name)
		require.Positive(t, s.notice.P50, g.name)
		require.LessOrEqual(t, s.notice.P99, s.notice.Max, g.name)
		require.Positive(t, s.ratio, g.name)
	}
}

// TestSummarizeLosses: a missed loss is counted apart and left out of
// the times and the ratios, and each loss is paired with the baseline's
// loss of the same place in the same round.
func TestSummarizeLosses(t *testing.T) {
	ms := func(n int) lossNotice { return lossNotice{took: time.Duration(n) * time.Millisecond} }
	notices := [][][]lossNotice{
		{{ms(1), ms(2)}, {ms(2), {missed: true}}},
		{{ms(4), {missed: true}}, {ms(2), ms(9)}},
	}
	s := summarizeLosses(notices, 1, 0)
	require.Equal(t, 4, s.losses)
	require.Equal(t, 1, s.missed)
	require.Equal(t, int64(3), s.notice.Count)
	require.Equal(t, 9*time.Millisecond, s.notice.Max)
	// The pairs: 2/1 and 2/4; 9 against a missed loss is no pair.
	require.InDelta(t, 1.25, s.ratio, 1e-9)
	base := summarizeLosses(notices, 0, 0)
	require.InDelta(t, 1.0, base.ratio, 1e-9)
	require.Zero(t, summarizeLosses(notices, 1, -1).ratio, "no baseline, no ratio")
}
