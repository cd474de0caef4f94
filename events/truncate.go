package events

import "unicode/utf8"

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
