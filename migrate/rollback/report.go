package rollback

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// Outcome is what rollback did with one connector, or would do.
type Outcome string

// The outcomes.
const (
	// RolledBack: A runs the connector in its state before the move with B's progress carried
	// (or announced as replay or skip), and B no longer has it; also a connector found so.
	RolledBack Outcome = "rolled_back"
	// WouldRollBack: a dry run found nothing against rolling it back.
	WouldRollBack Outcome = "would_roll_back"
	// Refused: left as it was, with why (Reason).
	Refused Outcome = "refused"
	// Failed: a step failed; Reason says which and what the connector is left as.
	Failed Outcome = "failed"
	// KeptOnB: A took it back, but deleting it on B was not safe: it stays STOPPED on B.
	KeptOnB Outcome = "kept_on_b"
)

// Verdict says what became of B's progress on one partition.
type Verdict string

// The verdicts.
const (
	// Carried: A resumes where B stopped (ToA).
	Carried Verdict = "carried"
	// NotCarried: A keeps its own offset and replays what B delivered since the cutover.
	NotCarried Verdict = "not_carried"
	// Skip: A's log start is past the offset A resumes at: A's consumer starts at its log
	// start and skips records (Skip counts them).
	Skip Verdict = "skip"
)

// Report is the rollback's report: per connector the outcome, and per partition what A gets.
type Report struct {
	MigrationID string    `json:"migration_id,omitempty"`
	Execute     bool      `json:"execute"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	// Counts are the connectors per outcome, and Verdicts the partitions per verdict.
	Counts     map[Outcome]int    `json:"counts"`
	Verdicts   map[Verdict]int    `json:"verdicts"`
	Connectors []*ConnectorResult `json:"connectors"`
}

// ConnectorResult is one connector of the report.
type ConnectorResult struct {
	Name       string  `json:"name"`
	TargetName string  `json:"target_name"`
	Type       string  `json:"type"`
	Outcome    Outcome `json:"outcome"`
	// StateOnA is the state A shows at the end (or would be resumed in, in a dry run).
	StateOnA string `json:"state_on_a,omitempty"`
	// StoppedOnB: the barrier stopped it on B; DeletedOnB: it was deleted on B. Deleting
	// removes neither B's source offsets nor its sink group (Connect's semantics).
	StoppedOnB bool `json:"stopped_on_b"`
	DeletedOnB bool `json:"deleted_on_b"`
	// Reason says why it was refused, failed or kept on B; Note what else a reader needs.
	Reason     string             `json:"reason,omitempty"`
	Note       string             `json:"note,omitempty"`
	Partitions []*PartitionResult `json:"partitions"`
}

// PartitionResult is what became of one partition.
type PartitionResult struct {
	// Partition is the partition on A; PartitionOnB the one on B where it differs (a re-key,
	// a topic renamed by MirrorMaker 2).
	Partition    jsonvalue.Map `json:"partition"`
	PartitionOnB jsonvalue.Map `json:"partition_on_b,omitempty"`
	// FromB is B's progress; ToA what A resumes at (the offset carried, or A's own).
	FromB   jsonvalue.Map `json:"from_b"`
	ToA     jsonvalue.Map `json:"to_a"`
	Verdict Verdict       `json:"verdict"`
	// Replay is, for a sink partition not carried, how many records A delivers again (B's
	// committed offset minus the offset placed); nil when not known.
	Replay *int64 `json:"replay,omitempty"`
	// Skip is how many records A's consumer skips (its log start past ToA).
	Skip   *int64 `json:"skip,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// count sets Counts and Verdicts.
func (r *Report) count() {
	r.Counts = map[Outcome]int{RolledBack: 0, WouldRollBack: 0, Refused: 0, Failed: 0, KeptOnB: 0}
	r.Verdicts = map[Verdict]int{Carried: 0, NotCarried: 0, Skip: 0}
	for _, c := range r.Connectors {
		r.Counts[c.Outcome]++
		for _, p := range c.Partitions {
			r.Verdicts[p.Verdict]++
		}
	}
}

// The exit statuses of ExitCode.
const (
	ExitOK       = 0
	ExitRefused  = 1
	ExitReplayed = 4
)

// ExitCode is the exit status of `migrate rollback` for r: 1 when a connector was refused,
// failed or kept on B; else, with Execute, 4 when a partition was not carried or skips
// (A replays or skips records, announced), and 0 otherwise. A dry run is 0 when every connector
// could be rolled back, 1 when any is refused.
func ExitCode(r *Report) int {
	replays := false
	for _, c := range r.Connectors {
		switch c.Outcome {
		case Refused, Failed, KeptOnB:
			return ExitRefused
		}
		for _, p := range c.Partitions {
			if p.Verdict != Carried {
				replays = true
			}
		}
	}
	if replays && r.Execute {
		return ExitReplayed
	}
	return ExitOK
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteFile writes r to path with mode 0600, also over an existing file of another mode: the
// report names connectors, offsets and the clusters' layout.
func (r *Report) WriteFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write rollback report %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fmt.Errorf("write rollback report %s: %w", path, err)
	}
	if err := r.WriteJSON(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("write rollback report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write rollback report %s: %w", path, err)
	}
	return nil
}
