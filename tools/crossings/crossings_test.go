package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/mod is a module of its own: top calls mid and other; mid hands low a closure, a
// bound method, a Scanner and generic calls; other calls a Scanner it was handed by top.

func TestPaths(t *testing.T) {
	w, err := Paths("(*example.com/mod/top.T).Root", "example.com/mod/top", "testdata/mod/cmd/tool")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range w.Crossings {
		got = append(got, string(c.Direction)+" "+c.Caller+" -> "+c.Callee)
	}
	want := []string{ // sorted by the packages' paths, then caller and callee
		"up example.com/mod/low.Each -> (example.com/mod/mid.S).Next",
		"up example.com/mod/low.Retry -> example.com/mod/mid.G$1", // Retry[int] and Retry[string] are one function
		"up example.com/mod/low.Retry -> example.com/mod/mid.G$2",
		"up example.com/mod/low.Run -> (example.com/mod/mid.U).Do", // through the bound method's wrapper
		"up example.com/mod/low.Run -> example.com/mod/mid.F$1",
		"down example.com/mod/mid.F -> example.com/mod/low.Run",
		"down example.com/mod/mid.G -> example.com/mod/low.Each",
		"down example.com/mod/mid.G -> example.com/mod/low.Retry",
		"side example.com/mod/other.Call -> (example.com/mod/mid.S).Next",
		"down (*example.com/mod/top.T).Root -> example.com/mod/mid.F",
		"down (*example.com/mod/top.T).Root -> example.com/mod/mid.G",
		"down (*example.com/mod/top.T).Root -> example.com/mod/other.Call",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("crossings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var out bytes.Buffer
	w.write(&out, false)
	if !strings.HasSuffix(out.String(), "12 crossings: 6 down, 5 back up, 1 side\n") {
		t.Fatalf("summary:\n%s", out.String())
	}
	for _, c := range w.Crossings {
		if strings.Contains(c.Caller, "Unreached") {
			t.Fatalf("walked a function the root does not reach: %v", c)
		}
	}
}

func TestPathsRefusesUnknownRoot(t *testing.T) {
	_, err := Paths("example.com/mod/top.Nothing", "example.com/mod/top", "testdata/mod/cmd/tool")
	if err == nil || !strings.Contains(err.Error(), "example.com/mod/top.Nothing is not in the loaded program") {
		t.Fatalf("err = %v", err)
	}
}

func TestTies(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra string // lines added to split/map.tsv
		want  []string
		sum   string
	}{
		{
			name: "by file",
			want: []string{"up A -> B", "up A.M -> helper"}, // L's local helper is no tie; B.N -> A runs down
			sum:  "2 ties in 1 file pairs: 2 up, 0 side, 0 methods away from their type",
		},
		{
			name:  "a method away from its type",
			extra: "B.N\tlow2\n",
			want:  []string{"up A -> B", "up A.M -> helper", "receiver B.N -> B"},
			sum:   "3 ties in 2 file pairs: 2 up, 0 side, 1 methods away from their type",
		},
		{
			name:  "beside",
			extra: "helper\tlow3\n",
			want:  []string{"up A -> B", "side A.M -> helper"},
			sum:   "2 ties in 1 file pairs: 1 up, 1 side, 0 methods away from their type",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, err := os.ReadFile("testdata/mod/split/map.tsv")
			if err != nil {
				t.Fatal(err)
			}
			mapFile := filepath.Join(t.TempDir(), "map.tsv")
			if err := os.WriteFile(mapFile, append(base, tt.extra...), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := runTies([]string{"-map", mapFile, "-order", "low2,low3;high2", "testdata/mod/split"}, &out); err != nil {
				t.Fatal(err)
			}
			var got []string
			for l := range strings.Lines(out.String()) {
				if strings.HasPrefix(l, "  ") {
					got = append(got, strings.Join(strings.Fields(l), " "))
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("ties:\n%s\nwant:\n%s\n(output:\n%s)", strings.Join(got, "\n"), strings.Join(tt.want, "\n"), out.String())
			}
			if !strings.Contains(out.String(), tt.sum+"\n") {
				t.Fatalf("summary: %s", out.String())
			}
		})
	}
}

func TestTiesRefusesAMapOfNothing(t *testing.T) {
	mapFile := filepath.Join(t.TempDir(), "map.tsv")
	if err := os.WriteFile(mapFile, []byte("gone.go\tlow2\nNoSuchDecl\tlow2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runTies([]string{"-map", mapFile, "-order", "low2", "testdata/mod/split"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "does not declare: NoSuchDecl, gone.go") {
		t.Fatalf("err = %v", err)
	}
}

func TestFlagText(t *testing.T) {
	var out bytes.Buffer
	if err := runFlagText([]string{"-flags", "testdata/mod/cmd/tool", "testdata/mod/lib"}, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lib.go:5: --name-one",
		"lib.go:6: --two, --three", // "three" is registered through a constant
		"lib.go:8: --reset-offsets (not a flag), --to-latest (not a flag)",
		"2 literals name a flag (3 distinct flags: --name-one 1, --three 1, --two 1); 1 name only other --words",
	}
	var got []string
	for l := range strings.Lines(out.String()) {
		got = append(got, strings.TrimSuffix(filepath.Base(l), "\n"))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("flagtext:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
