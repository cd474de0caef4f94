package migrate

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// modulePath is the module's import path of this package.
const modulePath = "github.com/offsetagent/offsetagent/migrate"

// layers is the import graph of the migration's packages: each may import, of the packages
// under migrate/, only those listed (the stages before it), and the root imports them all.
// A package under migrate/ that is not listed fails, so that a new one takes its place here.
var layers = map[string][]string{
	"fleet":    nil,
	"source":   {"fleet"},
	"target":   {"fleet"},
	"strimzi":  {"fleet"},
	"hazard":   {"fleet", "source", "target"},
	"plan":     {"fleet", "source", "target", "strimzi", "hazard"},
	"apply":    {"fleet", "source", "target", "strimzi", "hazard", "plan"},
	"cutover":  {"fleet", "source", "hazard", "plan", "apply"},
	"rollback": {"fleet", "source", "apply", "cutover"},
}

// Each package under migrate/ imports, of the migration's packages, only those its layer
// allows, in its code and in its tests: the graph has no arrow upwards, and no stage imports
// the root.
func TestLayers(t *testing.T) {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	found := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "testdata" {
			continue
		}
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			allowed, ok := layers[name]
			require.True(t, ok, "migrate/%s is not in the layers of layers_test.go: give it its place in the graph", name)
			pkg, err := build.ImportDir(filepath.Join(".", name), 0)
			require.NoError(t, err)
			for _, imp := range slices.Concat(pkg.Imports, pkg.TestImports, pkg.XTestImports) {
				if imp == modulePath {
					t.Errorf("migrate/%s imports the root package %s", name, imp)
					continue
				}
				rest, under := strings.CutPrefix(imp, modulePath+"/")
				if !under {
					continue
				}
				if stage, _, _ := strings.Cut(rest, "/"); !slices.Contains(allowed, stage) {
					t.Errorf("migrate/%s imports migrate/%s, which its layer does not allow (allowed: %v)", name, rest, allowed)
				}
			}
		})
		found++
	}
	require.GreaterOrEqual(t, found, 8, "the stages' packages are found")
}
