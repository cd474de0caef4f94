//go:build !faultinject

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// releaseBuild is the release build as the Makefile's build target and the Dockerfile make it
// (TestReleaseBuildIsTheMakefiles holds them to it): cgo off, -trimpath, the version and commit
// stamped in at link.
func releaseBuild(version, commit, out string) (env, args []string) {
	return []string{"CGO_ENABLED=0"}, []string{"build", "-trimpath",
		"-ldflags", "-s -w -X main.version=" + version + " -X main.commit=" + commit, "-o", out}
}

// The release build stamps the version and commit into `offsetagent version`, and carries no
// fault hook: the crash tests' variable is not even in the binary. On an empty Go build cache it
// compiles little of its own: make test's run without the race detector builds with the same
// flags.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "offsetagent")
	env, args := releaseBuild("v9.8.7", "0123abc", bin)
	build := exec.Command("go", append(args, ".")...)
	build.Env = append(os.Environ(), env...)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	out, err = exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "offsetagent v9.8.7 (commit 0123abc, go1.")

	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.False(t, bytes.Contains(b, []byte("OFFSETAGENT_FAULT_EXIT_AT")), "the release binary has the fault hook")
}

// TestReleaseBuildIsTheMakefiles holds TestReleaseBuild to the release build the Makefile's build
// target and the Dockerfile run, and make test's run without the race detector to the same
// flags: what make -n prints, not how the Makefile spells it. A make test with other flags
// there would compile every package once more on an empty Go build cache (and
// TestReleaseBuild with it).
func TestReleaseBuildIsTheMakefiles(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on the PATH: cannot read the Makefile's commands")
	}
	env, args := releaseBuild("v9.8.7", "0123abc", "bin/offsetagent")
	want := strings.Join(env, " ") + " go build " + strings.Join(args[1:3], " ") + " '" + args[3] + "' " +
		strings.Join(args[4:], " ") + " ./cmd/offsetagent"
	out, err := exec.Command("make", "-s", "-n", "-C", "../..", "build", "GO=go", "VERSION=v9.8.7", "COMMIT=0123abc").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, want, strings.TrimSpace(string(out)), "make build")

	docker, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	require.Contains(t, string(docker), strings.Join(env, " ")+" go build "+strings.Join(args[1:3], " ")+
		` "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}"`, "the Dockerfile's build")

	out, err = exec.Command("make", "-s", "-n", "-C", "../..", "test", "GO=go").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var race, release int
	for _, cmd := range regexp.MustCompile(`(?:\S+=\S+ )*go test [^;]*`).FindAllString(string(out), -1) {
		switch {
		case strings.HasPrefix(cmd, "go test -race "):
			race++
		case strings.HasPrefix(cmd, strings.Join(env, " ")+" go test "+args[1]+" "):
			release++
		default:
			t.Errorf("make test runs %q: neither the race detector nor the release build's flags", cmd)
		}
	}
	require.Equal(t, 1, race, "make test's go test commands with the race detector:\n%s", out)
	require.Equal(t, 2, release, "make test's go test commands with the release build's flags:\n%s", out)
}

func TestNoFaultHookWithoutTheTag(t *testing.T) {
	t.Setenv("OFFSETAGENT_FAULT_EXIT_AT", "after:wipe_offsets")
	require.Nil(t, faultFromEnv())
}
