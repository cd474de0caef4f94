package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docRef is a citation of sections of the repository's docs, as code and docs write it:
// docs/connect-internals.md, "Partitioning", or several: docs/mirrormaker2.md, "Checkpoint
// records" and "Reading the checkpoints" (within docs/*.md the docs/ may be left out).
var docRef = regexp.MustCompile(`\b((?:docs/)?[A-Za-z0-9_-]+\.md),\s+("[^"\n]+"(?:(?:,|,?\s+and|\s+or)\s+"[^"\n]+")*)`)

// quoted is one title of a docRef's list.
var quoted = regexp.MustCompile(`"([^"\n]+)"`)

// lineBreak is a line break with the next line's indentation and comment marker: blanked out, a
// citation wrapped over two comment lines reads as one line, at the same offsets.
var lineBreak = regexp.MustCompile(`[ \t]*\n[ \t]*(?://+|\*)?[ \t]*`)

// sectionNumber is the number a heading may start with ("2.1 ", "10. ").
var sectionNumber = regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)*\.?\s+`)

// unheldCitation is a citation of something a clone of the repository does not hold: a
// numbered section (§) of notes kept elsewhere, or a tracker's entry by its number.
var unheldCitation = regexp.MustCompile(`§|(?i)\bissues? #?[0-9]+\b`)

// Every "docs/X.md, \"Title\"" citation in the repository's Go, Java and Markdown files names a
// file of docs/ and one of its headings (its section number and backticks aside), and nothing cites
// a numbered section or a tracker's entry the repository does not hold, so a renamed heading or a
// citation of something else fails here instead of leaving the reader with nowhere to go.
func TestDocReferences(t *testing.T) {
	const root = "../.."
	headings := map[string]map[string]int{} // docs file -> title -> headings with that title
	titles := func(file string) (map[string]int, bool) {
		if h, ok := headings[file]; ok {
			return h, h != nil
		}
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			headings[file] = nil
			return nil, false
		}
		h := markdownHeadings(string(b))
		headings[file] = h
		return h, true
	}

	refs := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" || name == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".java":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := unheldCitation.FindString(line); m != "" && rel != "cmd/offsetagent/docrefs_test.go" {
				t.Errorf("%s:%d cites %q, which the repository does not hold: cite a docs/*.md section by its title, or say what is meant: %s",
					rel, i+1, m, strings.TrimSpace(line))
			}
		}
		joined := lineBreak.ReplaceAllStringFunc(string(b), func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, at := range docRef.FindAllStringSubmatchIndex(joined, -1) {
			m := []string{joined[at[0]:at[1]], joined[at[2]:at[3]], joined[at[4]:at[5]]}
			line := 1 + strings.Count(string(b[:at[0]]), "\n")
			file := filepath.ToSlash(m[1])
			if !strings.HasPrefix(file, "docs/") {
				file = "docs/" + file
			}
			h, ok := titles(file)
			for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
				refs++
				title := headingTitle(q[1])
				switch n := h[title]; {
				case !ok:
					t.Errorf("%s:%d cites %s, %q: there is no %s", rel, line, m[1], title, file)
				case n == 0:
					t.Errorf("%s:%d cites %s, %q: %s has no heading with that title", rel, line, m[1], title, file)
				case n > 1:
					t.Errorf("%s:%d cites %s, %q: %s has %d headings with that title", rel, line, m[1], title, file, n)
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	t.Logf("%d citations of docs sections checked", refs)
	require.Greater(t, refs, 50, "the walk found too few citations of docs sections to be reading the repository")
}

// markdownHeadings counts the titles of the headings of a Markdown file, outside code blocks.
// A numbered heading counts under its title with and without its number.
func markdownHeadings(doc string) map[string]int {
	h := map[string]int{}
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := headingTitle(strings.TrimLeft(line, "#"))
		h[title]++
		if bare := sectionNumber.ReplaceAllString(title, ""); bare != title {
			h[bare]++
		}
	}
	return h
}

// headingTitle is a heading's or a citation's title as compared: without backticks, its words
// one space apart.
func headingTitle(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " ")
}
