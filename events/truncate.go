package events

import (
	"encoding/json"
	"unicode/utf8"
)

// FullCounts are the full lengths of the lists of a result that was shortened.
type FullCounts struct {
	PreviousOffsets  int `json:"previous_offsets"`
	PlanTombstones   int `json:"plan_tombstones"`
	PlanRecords      int `json:"plan_records"`
	PlanGroupOffsets int `json:"plan_group_offsets"`
}

// minimalTextBytes bounds the name and message of a minimal result.
const minimalTextBytes = 1024

// LongestList is the length of r's longest list: previous offsets or one of the plan's.
func (r *Result) LongestList() int {
	n := 0
	if r.PreviousOffsets != nil {
		n = len(r.PreviousOffsets.Offsets)
	}
	if p := r.Plan; p != nil {
		n = max(n, len(p.Tombstones), len(p.Records), len(p.GroupOffsets))
	}
	return n
}

// fullCounts are r's list lengths.
func (r *Result) fullCounts() *FullCounts {
	if r.FullCounts != nil {
		return r.FullCounts
	}
	c := &FullCounts{}
	if r.PreviousOffsets != nil {
		c.PreviousOffsets = len(r.PreviousOffsets.Offsets)
	}
	if p := r.Plan; p != nil {
		c.PlanTombstones, c.PlanRecords, c.PlanGroupOffsets = len(p.Tombstones), len(p.Records), len(p.GroupOffsets)
	}
	return c
}

// Shortened returns a copy of r whose long lists (previous offsets, the plan's tombstones,
// records and group offsets) keep their first keep entries, marked truncated and with the
// full counts. Everything else (status, failed step, error, counts, ids, the config and the
// plan's config records) is kept. r is not changed.
func (r *Result) Shortened(keep int) Result {
	out := *r
	out.Truncated, out.FullCounts = true, r.fullCounts()
	if r.PreviousOffsets != nil {
		out.PreviousOffsets = &ConnectorOffsets{Offsets: r.PreviousOffsets.Offsets[:min(keep, len(r.PreviousOffsets.Offsets))]}
	}
	if r.Plan != nil {
		p := *r.Plan
		p.Tombstones = p.Tombstones[:min(keep, len(p.Tombstones))]
		p.Records = p.Records[:min(keep, len(p.Records))]
		p.GroupOffsets = p.GroupOffsets[:min(keep, len(p.GroupOffsets))]
		out.Plan = &p
	}
	return out
}

// Minimal returns the smallest useful form of r, for when r itself cannot be published: the
// request's ids, the name, the stages, the failed step, error code and message, the offsets
// counts and the full counts of the lists, marked truncated. The config, the lists and the
// cleanup's details are dropped; the name and message are cut to 1 KiB.
func (r *Result) Minimal() Result {
	out := Result{
		RequestID: r.RequestID, RequestSource: r.RequestSource, Name: cut(r.Name, minimalTextBytes),
		Stages: r.Stages, Type: r.Type, InitialState: r.InitialState,
		InitialOffsetsResponse: r.InitialOffsetsResponse,
		OffsetsWritten:         r.OffsetsWritten, OffsetsWiped: r.OffsetsWiped,
		FailedStep: r.FailedStep, ErrorCode: r.ErrorCode, Message: cut(r.Message, minimalTextBytes),
		Truncated: true, FullCounts: r.fullCounts(),
	}
	if c := r.Cleanup; c != nil {
		out.Cleanup = &Cleanup{Summary: cut(c.Summary, minimalTextBytes), OffsetsRemoved: c.OffsetsRemoved,
			OffsetsRestored: c.OffsetsRestored, Error: cut(c.Error, minimalTextBytes), Left: cut(c.Left, minimalTextBytes)}
	}
	return out
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// FittingKeep is the largest keep (at most LongestList) for which the first keep entries of
// r's long lists weigh at most room bytes in r's JSON encoding, separators included. It
// encodes entries one at a time, only as far as room reaches, so that finding how much of a
// result with a long plan fits never builds the whole result: a 62,000-record plan is about
// 12 MB of JSON, and what fits a result topic is 1 MiB by default. The keys a list adds once
// it is not empty (an omitted "group_offsets") are not counted: callers leave room for them.
func (r *Result) FittingKeep(room int) int {
	var lists [4]func(i int) any
	var lens [4]int
	if r.PreviousOffsets != nil {
		offsets := r.PreviousOffsets.Offsets
		lists[0], lens[0] = func(i int) any { return &offsets[i] }, len(offsets)
	}
	if p := r.Plan; p != nil {
		lists[1], lens[1] = func(i int) any { return &p.Tombstones[i] }, len(p.Tombstones)
		lists[2], lens[2] = func(i int) any { return &p.Records[i] }, len(p.Records)
		lists[3], lens[3] = func(i int) any { return &p.GroupOffsets[i] }, len(p.GroupOffsets)
	}
	var w countingWriter
	enc := json.NewEncoder(&w)
	n := r.LongestList()
	for keep := 0; keep < n; keep++ {
		for l, entry := range lists {
			if keep >= lens[l] {
				continue
			}
			// Encode ends each value with a newline: it stands for the comma before the entry
			// (the first entry has none, which leaves a byte to spare).
			if err := enc.Encode(entry(keep)); err != nil {
				return keep
			}
		}
		if w.n > room {
			return keep
		}
	}
	return n
}

// countingWriter counts the bytes written to it and keeps none.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
