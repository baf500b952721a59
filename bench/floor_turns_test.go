package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The turn goes to the takers in the order they came, and a taker that
// gives up leaves the line without holding it up.
func TestTurnstileServesInOrder(t *testing.T) {
	var turns turnstile
	ctx := context.Background()
	require.NoError(t, turns.take(ctx))

	got := make(chan int, 3)
	gaveUp := make(chan error, 1)
	quitter, quit := context.WithCancel(ctx)
	for i := range 3 {
		if i == 1 {
			go func() { gaveUp <- turns.take(quitter) }()
		} else {
			go func() {
				if turns.take(ctx) == nil {
					got <- i
				}
			}()
		}
		waitQueued(t, &turns, i+1)
	}
	quit()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	waitQueued(t, &turns, 2)

	turns.pass()
	require.Equal(t, 0, <-got)
	turns.pass()
	require.Equal(t, 2, <-got)
	turns.pass()
	turns.mu.Lock()
	defer turns.mu.Unlock()
	require.False(t, turns.taken, "free once the line is empty")
}

// A taker given the turn just as its context ended passes it on, rather
// than keep it with nobody to give it back.
func TestTurnstileGivesOnATurnGivenAsTheTakerLeaves(t *testing.T) {
	var turns turnstile
	require.NoError(t, turns.take(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- turns.take(ctx) }()
	waitQueued(t, &turns, 1)

	// Grant and cancel together: take sees its context end, and then
	// finds the turn given.
	turns.mu.Lock()
	cancel()
	turns.passLocked()
	turns.mu.Unlock()
	if err := <-done; err != nil {
		require.ErrorIs(t, err, context.Canceled)
		turns.mu.Lock()
		defer turns.mu.Unlock()
		require.False(t, turns.taken, "the turn given to a leaving taker was passed on")
		return
	}
	// The turn won the race: the taker holds it.
	turns.pass()
}

// waitQueued waits until n takers stand in line.
func waitQueued(t *testing.T, turns *turnstile, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		turns.mu.Lock()
		defer turns.mu.Unlock()
		return len(turns.queued) == n
	}, 5*time.Second, time.Millisecond)
}
