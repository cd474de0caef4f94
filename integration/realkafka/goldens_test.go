package realkafka_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/tools/oracle"
)

// TestGoldens makes every golden set again on the tier's JVM and jars (package oracle, the
// generator of make goldens) and requires each committed file to be what the JVM says now,
// byte for byte: the Go tests that read a golden file without a JVM prove something only while
// it is. A difference is Java or Kafka reading an input otherwise than the file says (the Go
// code it tests may be wrong now), or an input, an oracle or mm2's rewrite changed without make
// goldens: run it, and read the diff.
func TestGoldens(t *testing.T) {
	env.RequirePeers(t)
	if env.Cfg.Version != realkafka.DefaultVersion {
		tier.SkipOrFail(t, "the goldens are Kafka "+realkafka.DefaultVersion+"'s; this run has Kafka "+env.Cfg.Version)
	}
	java, err := realkafka.Java()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	jvm, err := oracle.NewJVM(ctx, java, env.Lib, root, t.TempDir())
	require.NoError(t, err)
	for _, s := range oracle.Sets {
		t.Run(s.Name, func(t *testing.T) {
			files, err := s.Make(ctx, jvm, root)
			require.NoError(t, err)
			require.NotEmpty(t, files)
			for _, f := range files {
				committed, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
				require.NoError(t, err)
				if line, want, got := firstDifference(committed, f.Data); line > 0 {
					t.Errorf("%s differs from what the JVM says now (make goldens writes it), first at line %d:\ncommitted: %s\nJVM:       %s",
						f.Path, line, want, got)
				}
			}
		})
	}
}

// firstDifference returns the first line (from 1) where a and b differ and the two lines,
// or 0 when they are equal.
func firstDifference(a, b []byte) (int, string, string) {
	if bytes.Equal(a, b) {
		return 0, "", ""
	}
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(al), len(bl)) {
		var x, y []byte
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if i >= len(al) || i >= len(bl) || !bytes.Equal(x, y) {
			return i + 1, string(x), string(y)
		}
	}
	return 0, "", "" // unreachable: unequal slices differ in some line
}
