package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRepeatLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type line struct {
		at    time.Duration
		level slog.Level
		msg   string
		attrs []any
	}
	tests := []struct {
		name string
		in   []line
		want []string // msg and, when some were left out, repeated
	}{
		{name: "a repeat within the window is left out, and counted on the next line",
			in: []line{
				{0, slog.LevelWarn, "fetch requests", []any{"partition", 1, "offset", 5, "err", "a"}},
				{time.Second, slog.LevelWarn, "fetch requests", []any{"partition", 1, "offset", 5, "err", "b"}},
				{2 * time.Second, slog.LevelWarn, "fetch requests", []any{"partition", 1, "offset", 5, "err", "c"}},
				{31 * time.Second, slog.LevelWarn, "fetch requests", []any{"partition", 1, "offset", 5, "err", "d"}},
			},
			want: []string{"fetch requests", "fetch requests repeated=2"}},
		{name: "another partition, offset or connector is not a repeat",
			in: []line{
				{0, slog.LevelWarn, "fetch requests", []any{"partition", 1, "offset", 5}},
				{0, slog.LevelWarn, "fetch requests", []any{"partition", 2, "offset", 5}},
				{0, slog.LevelWarn, "undecodable request", []any{"partition", 2, "offset", 6}},
				{0, slog.LevelWarn, "undecodable request", []any{"partition", 2, "offset", 7}},
				{0, slog.LevelWarn, "rolling back interrupted request", []any{"connector", "a"}},
				{0, slog.LevelWarn, "rolling back interrupted request", []any{"connector", "b"}},
			},
			want: []string{"fetch requests", "fetch requests", "undecodable request", "undecodable request",
				"rolling back interrupted request", "rolling back interrupted request"}},
		{name: "INFO and DEBUG pass through",
			in: []line{
				{0, slog.LevelInfo, "request finished", nil},
				{0, slog.LevelInfo, "request finished", nil},
			},
			want: []string{"request finished", "request finished"}},
		{name: "ERROR is limited like WARN",
			in: []line{
				{0, slog.LevelError, "commit", nil},
				{time.Second, slog.LevelError, "commit", nil},
			},
			want: []string{"commit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := newRepeatLimiter(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), repeatWindow)
			for _, l := range tt.in {
				r := slog.NewRecord(t0.Add(l.at), l.level, l.msg, 0)
				r.Add(l.attrs...)
				require.NoError(t, h.Handle(context.Background(), r))
			}
			var got []string
			for _, s := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(s), &m))
				g := m["msg"].(string)
				if n, ok := m["repeated"]; ok {
					g += " repeated=" + jsonNumber(n)
				}
				got = append(got, g)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
