package kafkaio

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// optionsWithoutPrincipal are the files whose kafkaio.Options may reach brokers without a
// principal, each with why: a refusal through them cannot name anyone but User:ANONYMOUS.
var optionsWithoutPrincipal = map[string]string{
	"internal/kafkaio/clusterid.go":              "a Metadata request for no topic, which no ACL refuses, to learn an address's cluster id",
	"cmd/offsetagent-bench/scenarios.go":         "the bench's embedded brokers know no users",
	"cmd/offsetagent-bench/scenarios_load.go":    "the bench's embedded brokers know no users",
	"cmd/offsetagent-bench/scenarios_migrate.go": "the bench's embedded brokers know no users",
	"cmd/offsetagent-bench/scenarios_fleet.go":   "the bench's embedded brokers know no users",
	"cmd/offsetagent-bench/viewload.go":          "the bench's embedded brokers know no users",
}

// Every Kafka client of the product is built by NewClient, from Options that name the
// principal its transport authenticates as, so that a refused request through it names who
// was refused: a hand-built &kafka.Client{}, or Options with Brokers and no Principal, would
// word every refusal as User:ANONYMOUS's. Tests build what they like; so does the tests'
// harness under integration/ (its clients are the tests' own, superusers), and so does
// NewClient itself.
func TestEveryClientByNewClient(t *testing.T) {
	const root = "../.."
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
			if rel == "integration" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // a module of its own (tools/crossings)
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		files++
		for _, bad := range clientSites(t, path, rel) {
			t.Error(bad)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 200, "the walk found too few files to be reading the module")
}

// clientSites lists what file (rel, from the module's root) builds against the rule.
func clientSites(t *testing.T, path, rel string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	kafkaName, kafkaioName := "", ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := ""
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch p {
		case "github.com/segmentio/kafka-go":
			kafkaName = cmpOr(name, "kafka")
		case "github.com/offsetagent/offsetagent/internal/kafkaio":
			kafkaioName = cmpOr(name, "kafkaio")
		}
	}
	inKafkaio := filepath.Dir(rel) == "internal/kafkaio"
	isType := func(e ast.Expr, pkg, typ string, local bool) bool {
		switch e := e.(type) {
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && pkg != "" && x.Name == pkg && e.Sel.Name == typ
		case *ast.Ident:
			return local && e.Name == typ
		}
		return false
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			return false
		}
		at := func() string { return rel + ":" + strconv.Itoa(fset.Position(n.Pos()).Line) }
		switch n := n.(type) {
		case *ast.CompositeLit:
			switch {
			case isType(n.Type, kafkaName, "Client", false) && rel != "internal/kafkaio/client.go":
				out = append(out, at()+": a kafka.Client built by hand: build it with kafkaio.NewClient(kafkaio.Options{Brokers, Transport, Principal}), and set its Timeout after")
			case isType(n.Type, kafkaioName, "Options", inKafkaio):
				keys := map[string]bool{}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok {
							keys[k.Name] = true
						}
					}
				}
				if keys["Brokers"] && !keys["Principal"] && optionsWithoutPrincipal[rel] == "" {
					out = append(out, at()+": kafkaio.Options with Brokers and no Principal: a refusal through it would name User:ANONYMOUS; give it the principal its Transport authenticates as (clientconfig.Security.Principal)")
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 && isType(n.Args[0], kafkaName, "Client", false) {
				out = append(out, at()+": a kafka.Client built by hand (new): build it with kafkaio.NewClient")
			}
		}
		return true
	})
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// The guard finds each way a client is built against the rule, and lets pass what follows it.
func TestClientSites(t *testing.T) {
	tests := []struct {
		name, rel, src string
		want           []string
	}{
		{"hand-built", "agent/x.go", `package agent
import "github.com/segmentio/kafka-go"
var cl = &kafka.Client{Addr: kafka.TCP("b:9092")}`, []string{"a kafka.Client built by hand"}},
		{"renamed import and new", "cmd/x/x.go", `package main
import kgo "github.com/segmentio/kafka-go"
var a, b = kgo.Client{}, new(kgo.Client)`, []string{"a kafka.Client built by hand", "a kafka.Client built by hand (new)"}},
		{"options without principal", "migrate/x.go", `package migrate
import "github.com/offsetagent/offsetagent/internal/kafkaio"
var o = kafkaio.Options{Brokers: []string{"b:9092"}}`, []string{"kafkaio.Options with Brokers and no Principal"}},
		{"options inside kafkaio", "internal/kafkaio/x.go", `package kafkaio
var o = Options{Brokers: []string{"b:9092"}, Transport: nil}`, []string{"kafkaio.Options with Brokers and no Principal"}},
		{"allowed", "cmd/offsetagent-bench/viewload.go", `package main
import "github.com/offsetagent/offsetagent/internal/kafkaio"
var o = kafkaio.Options{Brokers: []string{"b:9092"}}`, nil},
		{"by NewClient with a principal", "agent/x.go", `package agent
import "github.com/offsetagent/offsetagent/internal/kafkaio"
var cl = kafkaio.NewClient(kafkaio.Options{Brokers: []string{"b:9092"}, Principal: "User:a"})`, nil},
		{"options without brokers", "offsetstore/x.go", `package offsetstore
import "github.com/offsetagent/offsetagent/internal/kafkaio"
var o = kafkaio.Options{Logger: nil}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), filepath.Dir(tt.rel))
			require.NoError(t, os.MkdirAll(dir, 0o755))
			path := filepath.Join(dir, filepath.Base(tt.rel))
			require.NoError(t, os.WriteFile(path, []byte(tt.src), 0o644))
			got := clientSites(t, path, tt.rel)
			require.Len(t, got, len(tt.want), "%q", got)
			for i, w := range tt.want {
				require.Contains(t, got[i], w)
			}
		})
	}
}
