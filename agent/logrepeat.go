package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// repeatWindow is how often one kind of WARN line is written while it repeats: a broker
// outage makes every fetcher and the group's heartbeat fail every few seconds, and the log
// must still be readable (and cheap) after an hour of it.
const repeatWindow = 30 * time.Second

// repeatKeys are the attributes that tell two WARN lines of the same message apart as
// different things (two connectors, two records); the others (err, retry_in) vary from one
// repeat of the same trouble to the next. A fetch retried at the same partition and offset is
// a repeat; an undecodable record at the next offset is not.
var repeatKeys = map[string]bool{
	"connector": true, "request_id": true, "topic": true, "partition": true, "partitions": true, "offset": true, "stage": true,
}

// repeatLimiter is a slog.Handler that writes a WARN line (or a higher level's) at most once
// per repeatWindow for each message and identity (repeatKeys); the first line written after
// some were left out carries "repeated", how many. Lower levels pass through untouched.
type repeatLimiter struct {
	next   slog.Handler
	window time.Duration
	attrs  string // identity attributes added with WithAttrs
	state  *repeatState
}

type repeatState struct {
	mu   sync.Mutex
	seen map[string]*repeatEntry
}

type repeatEntry struct {
	last    time.Time // when a line of this kind was last written
	dropped int       // lines left out since
}

// maxRepeatKeys bounds the memory of the limiter; past it, entries older than the window go.
const maxRepeatKeys = 4096

func newRepeatLimiter(next slog.Handler, window time.Duration) *repeatLimiter {
	return &repeatLimiter{next: next, window: window, state: &repeatState{seen: map[string]*repeatEntry{}}}
}

func (h *repeatLimiter) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *repeatLimiter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	key := r.Level.String() + "\x00" + r.Message + "\x00" + h.attrs
	r.Attrs(func(a slog.Attr) bool {
		if repeatKeys[a.Key] {
			key += "\x00" + a.Key + "=" + a.Value.String()
		}
		return true
	})
	s := h.state
	s.mu.Lock()
	e, ok := s.seen[key]
	now := r.Time
	if now.IsZero() {
		now = time.Now()
	}
	if ok && now.Sub(e.last) < h.window {
		e.dropped++
		s.mu.Unlock()
		return nil
	}
	dropped := 0
	if ok {
		dropped = e.dropped
		e.last, e.dropped = now, 0
	} else {
		if len(s.seen) >= maxRepeatKeys {
			for k, old := range s.seen {
				if now.Sub(old.last) >= h.window {
					delete(s.seen, k)
				}
			}
		}
		s.seen[key] = &repeatEntry{last: now}
	}
	s.mu.Unlock()
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", dropped))
	}
	return h.next.Handle(ctx, r)
}

func (h *repeatLimiter) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	for _, a := range as {
		if repeatKeys[a.Key] {
			c.attrs += "\x00" + a.Key + "=" + a.Value.String()
		}
	}
	return &c
}

func (h *repeatLimiter) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	c.attrs += "\x00group=" + name
	return &c
}
