package agent

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// The committed offset never passes a request whose result is not acknowledged, and abandoned
// (revoked before start) requests hold the commit back so the next owner runs them.
func TestTrackerCommitsOnlyTheFinishedPrefix(t *testing.T) {
	tr := newTracker()
	a, b, c := tr.add(10), tr.add(11), tr.add(12)
	_, ok := tr.committable()
	require.False(t, ok, "nothing finished")

	require.True(t, b.start())
	b.done()
	_, ok = tr.committable()
	require.False(t, ok, "10 is not done: 11 must not be committed")

	require.True(t, a.start())
	a.done()
	next, ok := tr.committable()
	require.True(t, ok)
	require.Equal(t, int64(12), next, "commit the offset after the last finished record")

	tr.abandonQueued()
	require.False(t, c.start(), "an abandoned record does not start")
	_, ok = tr.committable()
	require.False(t, ok, "the abandoned record holds the commit back")

	tr.uncommit()
	next, ok = tr.committable()
	require.True(t, ok, "after a failed commit the same offset is offered again")
	require.Equal(t, int64(12), next)
}

func TestTrackerWaitStarted(t *testing.T) {
	tr := newTracker()
	it := tr.add(0)
	require.True(t, it.start())
	require.False(t, tr.waitStarted(30*time.Millisecond), "a running request is waited for")
	go func() { time.Sleep(20 * time.Millisecond); it.done() }()
	require.True(t, tr.waitStarted(5*time.Second))
}

// This replica's own results reach the dedupe view from what it published (the record's
// WriterData, handed by the log with the written bytes), at the time it published them; the
// bytes are not decoded.
func TestResultLogTakesOwnResults(t *testing.T) {
	r := &resultLog{seenM: map[requestKey]struct{}{}, window: time.Hour, max: 10}
	r.apply([]kafka.Message{
		{Value: []byte("not decoded"), WriterData: ownResult{source: "/s", id: "own", at: time.Now()}},
		{Value: []byte("not decoded"), WriterData: ownResult{source: "/s", id: "stale", at: time.Now().Add(-2 * time.Hour)}},
	})
	require.True(t, r.seen("/s", "own"))
	require.False(t, r.seen("/s", "stale"), "outside the window")
}

// The dedupe memory forgets results outside its window and beyond its size.
func TestResultLogWindow(t *testing.T) {
	r := &resultLog{seenM: map[requestKey]struct{}{}, window: time.Hour, max: 2}
	r.addAt("/s", "old", time.Now().Add(-2*time.Hour))
	require.False(t, r.seen("/s", "old"), "a result older than the window is not remembered")
	r.add("/s", "a")
	r.add("/s", "b")
	require.True(t, r.seen("/s", "a"))
	r.add("/s", "c")
	require.False(t, r.seen("/s", "a"), "the oldest is forgotten beyond max entries")
	require.True(t, r.seen("/s", "b"))
	require.True(t, r.seen("/s", "c"))
	require.False(t, r.seen("/other", "c"), "identity is source and id")
}
