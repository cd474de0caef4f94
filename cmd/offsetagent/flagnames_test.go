package main

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// registeredFlags are the names of the flags of every command, gathered from the FlagSet each
// builds when asked for its --help.
func registeredFlags(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	sets := 0
	sawFlagSet = func(fs *flag.FlagSet) {
		sets++
		fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	}
	defer func() { sawFlagSet = nil }()
	for verb := range helps {
		run([]string{verb, "--help"}, strings.NewReader(""), io.Discard, io.Discard)
	}
	require.Greater(t, sets, 5, "the commands' FlagSets were not seen")
	for _, n := range []string{"stop-source", "set", "to-connect-url", "to-strimzi-cluster", "cutover-report"} {
		require.True(t, names[n], "flag --%s not registered: the FlagSets were not all seen", n)
	}
	return names
}

// dashWord is "--word" at the start of a word.
var dashWord = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)`)

// flagLiteral is a string literal of the library that names a flag.
type flagLiteral struct {
	pos   token.Position
	flags []string
}

// flagLiterals are the string literals in the non-test Go files under dir that hold --NAME for
// a registered NAME.
func flagLiterals(t *testing.T, dir string, registered map[string]bool) []flagLiteral {
	t.Helper()
	fset := token.NewFileSet()
	var out []flagLiteral
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			var l flagLiteral
			for _, m := range dashWord.FindAllStringSubmatch(s, -1) {
				if registered[m[1]] {
					l.flags = append(l.flags, "--"+m[1])
				}
			}
			if len(l.flags) > 0 {
				l.pos = fset.Position(lit.Pos())
				out = append(out, l)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestMigrateLibraryNamesNoFlag: only this command knows its flags' names. The migration
// library, and the packages whose messages reach a migration's user (mm2's MirrorMaker 2
// health findings, internal/wording's own words), name settings by type (fleet.Setting,
// fleet.Fix, fleet.Next, which are internal/wording's) and this command spells them
// (words.go); a string literal under migrate/, mm2/ or internal/wording/ holding --NAME of a
// flag registered here is a message a user would read in the library's words.
func TestMigrateLibraryNamesNoFlag(t *testing.T) {
	registered := registeredFlags(t)
	root := filepath.Join("..", "..")
	var lines []string
	for _, dir := range []string{"migrate", "mm2", filepath.Join("internal", "wording")} {
		for _, l := range flagLiterals(t, filepath.Join(root, dir), registered) {
			rel, _ := filepath.Rel(root, l.pos.Filename)
			lines = append(lines, rel+":"+strconv.Itoa(l.pos.Line)+": "+strings.Join(l.flags, ", "))
		}
	}
	slices.Sort(lines)
	if len(lines) > 0 {
		t.Fatalf("%d string literals under migrate/, mm2/ and internal/wording/ name a flag of offsetagent (give a fleet.Setting, fleet.Fix or fleet.Next, wording's in mm2, instead):\n%s",
			len(lines), strings.Join(lines, "\n"))
	}
}
