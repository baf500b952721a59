package observe_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/observe"
)

func TestLogTellsOfWhatNoCallerSees(t *testing.T) {
	var out bytes.Buffer
	log := observe.Log(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})))
	broken := errors.New("connection reset")
	for _, e := range []observe.Event{
		{Kind: observe.CallBegan, Key: "k"},                                      // a caller sees it
		{Kind: observe.LeaseEnded, Key: "k", Token: 7, Reason: observe.Released}, // the holder's own doing
		{Kind: observe.LeaseEnded, Key: "k", Token: 7, Reason: observe.Lost, Duration: time.Second},
		{Kind: observe.ReleaseFailed, Key: "k", Op: observe.Release, Err: broken},
		{Kind: observe.Reconnected, Duration: 3 * time.Millisecond},
	} {
		log.Observe(e)
	}
	var records []map[string]any
	dec := json.NewDecoder(&out)
	for dec.More() {
		var r map[string]any
		require.NoError(t, dec.Decode(&r))
		records = append(records, r)
	}
	require.Len(t, records, 3)
	require.Equal(t, "baton: lease ended", records[0]["msg"])
	require.Equal(t, "WARN", records[0]["level"])
	require.Equal(t, "k", records[0]["key"])
	require.Equal(t, "lost", records[0]["reason"])
	require.EqualValues(t, 7, records[0]["token"])
	require.Equal(t, "baton: release failed", records[1]["msg"])
	require.Equal(t, "connection reset", records[1]["error"])
	require.Equal(t, "INFO", records[2]["level"])
	require.Equal(t, "baton: reconnected", records[2]["msg"])
}

func TestLogSkipsWhatItsLevelLeavesOut(t *testing.T) {
	var out bytes.Buffer
	log := observe.Log(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn})))
	log.Observe(observe.Event{Kind: observe.Reconnected})
	require.Zero(t, out.Len())
}

func TestNamesSayWhatTheyAre(t *testing.T) {
	require.Equal(t, "handed over", observe.Handed.String())
	require.Equal(t, "extension failed", observe.ExtensionFailed.String())
	require.Equal(t, "fair", observe.Fair.String())
	require.Equal(t, "trylock", observe.TryLock.String())
	require.Equal(t, "unknown", observe.Kind(0).String())
	require.Equal(t, "unknown", observe.Reason(200).String())
}
