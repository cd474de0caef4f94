package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
)

// migrate's reports, told after each wave, are written whole (a file beside them renamed over
// them) and private, also over a file that was wider; a write that fails is said once and
// leaves the file before it.
func TestReportFilesWrittenAsTheRunGoes(t *testing.T) {
	dir := t.TempDir()
	report, cut := filepath.Join(dir, "report.json"), filepath.Join(dir, "cutover.json")
	require.NoError(t, os.WriteFile(report, []byte("old"), 0o644))
	var stderr bytes.Buffer
	files := &reportFiles{report: report, cutover: cut, stderr: &stderr}

	wave := &apply.Report{MigrationID: "m-1", Unfinished: 3, Connectors: []*apply.Entry{
		{Name: "src-0", TargetName: "src-0", Type: "source", Outcome: apply.OutcomeSucceeded, RequestID: "m-1/src-0/1"}}}
	files.checkpoint(wave, &cutover.Cutover{MigrationID: "m-1", Connectors: []*cutover.Connector{}})
	require.Empty(t, stderr.String())
	for _, f := range []string{report, cut} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	var got struct {
		Unfinished int `json:"unfinished"`
		Connectors []struct{ Name, Outcome string }
	}
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, 3, got.Unfinished)
	require.Equal(t, []struct{ Name, Outcome string }{{"src-0", "succeeded"}}, got.Connectors)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "no file left beside them")

	// The temporary file cannot be made: said once, the reports as they were.
	require.NoError(t, os.Mkdir(report+".tmp", 0o700))
	files.checkpoint(&apply.Report{MigrationID: "m-1"}, nil)
	files.checkpoint(&apply.Report{MigrationID: "m-1"}, nil)
	require.Equal(t, 1, bytes.Count(stderr.Bytes(), []byte("write the reports of the run so far")), stderr.String())
	after, err := os.ReadFile(report)
	require.NoError(t, err)
	require.Equal(t, string(data), string(after))
}
