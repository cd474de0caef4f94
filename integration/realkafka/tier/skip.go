package tier

import (
	"os"
	"testing"
)

// Required reports whether the tier may not be skipped here: RequireEnv is "1" (.ci/run sets
// it), so that a machine without what the tier needs fails its tests instead of passing
// without having run them.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// SkipOrFail ends t for want of something the tier needs, why saying what and why: a skip, or,
// under RequireEnv=1 (Required), a failure naming the variable. It is the tier's one way to
// skip a test: Env.RequirePeers ends a test through it when the tier is skipped or a peer is
// gone (Env.Skip), and a test that needs more than the package's peers (a program, a server)
// calls it instead of t.Skip, so that RequireEnv turns every skip of the tier into a failure
// alike.
func SkipOrFail(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s (%s=1 forbids skipping it)", why, RequireEnv)
	} else {
		t.Skip(why)
	}
}
