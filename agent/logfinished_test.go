package agent

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/alloctest"
)

// A request's line is written at info with what ended it; below the level, it costs nothing
// (its arguments were boxed for every request before the level was looked at).
func TestLogFinished(t *testing.T) {
	ctx := context.Background()
	out := &handlers.Outcome{EventType: events.TypeCreateSucceeded, Result: events.Result{Name: "c", RequestID: "r", RequestSource: "/src"}}
	var buf bytes.Buffer
	a := &Agent{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	a.logFinished(ctx, out, time.Now().Add(-1500*time.Millisecond))
	require.Contains(t, buf.String(), `msg="request finished" connector=c request_id=r source=/src`)
	quiet := &Agent{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	began := time.Now().Add(-1500 * time.Millisecond)
	require.Zero(t, alloctest.Least(100, func() { quiet.logFinished(ctx, out, began) }))
}
