package realkafka_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/mm2"
)

const (
	regexWrapCases   = "../../mm2/testdata/regex-wrap-cases.tsv"
	regexWrapGoldens = "../../mm2/testdata/regex-wrap-goldens.json"
)

// TestRegexWrapGoldens has Java judge mm2's rewrite of a sink's topics.regex across MirrorMaker
// 2's default policy: for each case of mm2/testdata/regex-wrap-cases.tsv it gives
// mm2/testdata/golden/RegexWrapVectors.java the regex mm2 makes of the pattern (or, for one mm2
// refuses, the plain "<alias><sep>(?:pattern)"), and compares what java.util.regex answers with
// the goldens mm2's TestWrapJavaRegexGoldens checks the Go side against.
// OFFSETAGENT_UPDATE_GOLDENS=1 writes the file instead.
func TestRegexWrapGoldens(t *testing.T) {
	java, err := realkafka.Java()
	if err != nil {
		t.Skip(err)
	}
	f, err := os.Open(regexWrapCases)
	require.NoError(t, err)
	defer f.Close()
	var input strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		require.Len(t, fields, 4, "case %q: alias, separator, pattern, topics", line)
		p := mm2.Policy{Kind: mm2.PolicyDefault, SourceAlias: fields[0], Separator: fields[1]}
		rewritten, _, err := p.RewriteTopicsRegex(fields[2])
		refused := "0"
		if err != nil {
			rewritten, refused = regexp.QuoteMeta(p.RemotePrefix())+"(?:"+fields[2]+")", "1"
		}
		input.WriteString(strings.Join([]string{fields[0], fields[1], fields[2], rewritten, refused, fields[3]}, "\t") + "\n")
	}
	require.NoError(t, sc.Err())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, err := filepath.Abs("../../mm2/testdata/golden/RegexWrapVectors.java")
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, java, src)
	cmd.Stdin = strings.NewReader(input.String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr:\n%s", stderr.String())
	if os.Getenv("OFFSETAGENT_UPDATE_GOLDENS") == "1" {
		require.NoError(t, os.WriteFile(regexWrapGoldens, stdout.Bytes(), 0o644))
		t.Logf("wrote %s", regexWrapGoldens)
		return
	}
	type goldens struct {
		Cases []json.RawMessage `json:"cases"`
	}
	var got, want goldens
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	committed, err := os.ReadFile(regexWrapGoldens)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(committed, &want))
	require.NotEmpty(t, got.Cases)
	gotCases, _ := json.Marshal(got.Cases)
	wantCases, _ := json.Marshal(want.Cases)
	// The cases, not the generator line: the goldens hold for every JDK that agrees with them.
	require.JSONEq(t, string(wantCases), string(gotCases),
		"java.util.regex differs from the goldens, or mm2's rewrite changed: rerun with OFFSETAGENT_UPDATE_GOLDENS=1 and check mm2's TestWrapJavaRegexGoldens")
}
