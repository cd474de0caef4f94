//go:build !faultinject

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The release build (the Makefile's and the Dockerfile's ldflags) stamps the version and
// commit into `offsetagent version`, and carries no fault hook: the crash tests' variable
// is not even in the binary.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "offsetagent")
	build := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version=v9.8.7 -X main.commit=0123abc", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	out, err = exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "offsetagent v9.8.7 (commit 0123abc, go1.")

	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.False(t, bytes.Contains(b, []byte("OFFSETAGENT_FAULT_EXIT_AT")), "the release binary has the fault hook")
}

func TestNoFaultHookWithoutTheTag(t *testing.T) {
	t.Setenv("OFFSETAGENT_FAULT_EXIT_AT", "after:wipe_offsets")
	require.Nil(t, faultFromEnv())
}
