package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// commands are every subcommand `run` dispatches.
var commands = []string{"run", "publish", "offsets", "export", "migrate", "demo", "demo-migrate", "version", "healthcheck"}

// Every subcommand prints its usage on stdout and exits 0 with --help and -h, and the
// command list names it, and each verb of migrate.
func TestSubcommandHelp(t *testing.T) {
	require.Len(t, helps, len(commands), "a help for every command, and no other")
	for _, c := range commands {
		require.Contains(t, usage, "\n  "+c+" ", "the command list names %s", c)
		for _, flagName := range []string{"--help", "-h"} {
			t.Run(c+" "+flagName, func(t *testing.T) {
				var out, errOut bytes.Buffer
				require.Equal(t, 0, run([]string{c, flagName}, strings.NewReader(""), &out, &errOut), errOut.String())
				require.Empty(t, errOut.String())
				require.True(t, strings.HasPrefix(out.String(), "usage: offsetagent "+c), out.String())
			})
		}
	}
	for verb := range migrateVerbs {
		require.Contains(t, usage, "\n  migrate "+verb+" ", "the command list names migrate %s", verb)
		var out bytes.Buffer
		require.Equal(t, 0, run([]string{"migrate", verb, "--help"}, strings.NewReader(""), &out, &bytes.Buffer{}))
		require.True(t, strings.HasPrefix(out.String(), "usage: offsetagent migrate "+verb+" "), out.String())
	}
	require.Contains(t, usage, "'offsetagent migrate VERB --help'")
}

// The help says what is required, where defaults come from and what the commands print.
func TestHelpContents(t *testing.T) {
	help := func(c string) string {
		var out bytes.Buffer
		require.Equal(t, 0, run([]string{c, "--help"}, strings.NewReader(""), &out, &bytes.Buffer{}))
		return out.String()
	}
	m := help("migrate")
	for _, want := range []string{
		"required: --to-brokers; one of --from-brokers, --from-connect-url",
		"  --to-brokers HOSTS  (required)\n",
		"  --from-brokers HOSTS  (required unless --from-connect-url)\n",
		"  --to-config-topic TOPIC  (default: $OFFSETAGENT_CONFIG_TOPIC, else connect-configs)\n",
		"  --to-offsets-topic TOPIC  (default: $OFFSETAGENT_OFFSETS_TOPIC, else connect-offsets)\n",
		"  --request-topic TOPIC  (default: $OFFSETAGENT_REQUEST_TOPIC, else connect-offset-requests)\n",
		"  --result-topic TOPIC  (default: $OFFSETAGENT_RESULT_TOPIC, else connect-offset-results)\n",
		"  --connect-timeout DURATION  (default 10s)\n",
		"  --timeout DURATION  (default 30m0s)\n",
		"  --stop-source\n",
		"Outcomes: succeeded, planned (--dry-run), failed, skipped, pending.",
	} {
		require.Contains(t, m, want)
	}
	e := help("export")
	for _, want := range []string{"  -o FILE\n", "  --stop-source\n", "with export also --to-brokers", `outcome is "planned"`} {
		require.Contains(t, e, want)
	}
	require.NotContains(t, e, "--to-config-topic", "B's Connect topics are migrate's")
	require.Contains(t, help("publish"), "With --wait, the result event as indented JSON on stdout")
	require.Contains(t, help("offsets"), "  --connect-timeout DURATION  (default 10s)\n")
}

// A wrong flag still fails on stderr with status 2, and points at --help.
func TestBadFlagPointsAtHelp(t *testing.T) {
	for _, c := range commands {
		var out, errOut bytes.Buffer
		require.Equal(t, 2, run([]string{c, "--frobnicate"}, strings.NewReader(""), &out, &errOut), c)
		require.Empty(t, out.String(), c)
		require.Contains(t, errOut.String(), "flag provided but not defined: -frobnicate", c)
		require.Contains(t, errOut.String(), "run 'offsetagent "+c+" --help' for usage", c)
	}
}

// Every flag of export and migrate is in docs/migration.md, and the docs cite only what the
// repository holds.
func TestDocsMatchFlags(t *testing.T) {
	doc, err := os.ReadFile("../../docs/migration.md")
	require.NoError(t, err)
	flagLine := regexp.MustCompile(`(?m)^  (--?[a-z0-9-]+)`)
	for _, c := range []string{"export", "migrate"} {
		var out bytes.Buffer
		require.Equal(t, 0, run([]string{c, "--help"}, strings.NewReader(""), &out, &bytes.Buffer{}))
		flags := flagLine.FindAllStringSubmatch(out.String(), -1)
		require.NotEmpty(t, flags)
		for _, f := range flags {
			require.True(t, strings.Contains(string(doc), "`"+f[1]), "docs/migration.md does not mention %s %s", c, f[1])
		}
	}
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	for _, f := range append(files, "../../README.md") {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, outside := range []string{"../shared", "shared/spec", "/work/", "oracle.py"} {
			require.False(t, strings.Contains(string(b), outside), "%s cites a file outside the repository (%s)", f, outside)
		}
	}
}
