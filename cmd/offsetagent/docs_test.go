package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// exportToShell is an `offsetagent export` command line whose output a shell redirects to a
// file (`> file`, `>> file`, `| tee file`).
var exportToShell = regexp.MustCompile(`offsetagent export\b[^|>\n]*(>|\|\s*tee\b)`)

// The docs write export's bodies with -o, which makes the file private (0600): they hold the
// connectors' configs, secrets in plain text, and a shell's redirection leaves the file 0644
// under the usual umask.
func TestDocsWriteExportBodiesWithO(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	files = append(files, "../../README.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			require.False(t, exportToShell.MatchString(line), "%s:%d redirects export's output in the shell (use -o FILE): %s", f, i+1, strings.TrimSpace(line))
		}
	}
}
