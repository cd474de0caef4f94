package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "no command", args: nil, code: 2, stderr: "usage: offsetagent"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{name: "help", args: []string{"help"}, code: 0, stdout: "commands:"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "offsetagent dev (commit unknown, go1."},
		{name: "publish without file", args: []string{"publish"}, code: 2, stderr: "usage: offsetagent publish"},
		{name: "offsets without name", args: []string{"offsets"}, code: 2, stderr: "usage: offsetagent offsets NAME"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &out, &errOut)
			require.Equal(t, tc.code, code, errOut.String())
			require.Contains(t, out.String(), tc.stdout)
			require.Contains(t, errOut.String(), tc.stderr)
		})
	}
}

func TestInvalidConfigurationIsAClearError(t *testing.T) {
	t.Setenv("OFFSETAGENT_CONCURRENCY", "0")
	var errOut bytes.Buffer
	code := run([]string{"run"}, strings.NewReader(""), &bytes.Buffer{}, &errOut)
	require.Equal(t, 2, code)
	require.Contains(t, errOut.String(), "OFFSETAGENT_CONCURRENCY: 0, must be at least 1")
}

// The demo is the README's `make demo`: the seed example succeeds and Connect's topics hold
// exactly the records a worker would have written.
func TestDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, demo(context.Background(), &out, &errOut), errOut.String())
	s := out.String()
	require.Contains(t, s, "== result event: offsetagent.connector.create.succeeded")
	require.Contains(t, s, "== result event: offsetagent.connector.create.failed")
	require.Contains(t, s, "The value for the 'position' key in the offset should be a non-negative value")
	require.Contains(t, s, "partition 0 offset 0\n  key:   target-state-file-src-1\n  value: {\"state\":\"STARTED\",\"state.v2\":\"STARTED\"}\n")
	require.Contains(t, s, "partition 0 offset 1\n  key:   connector-file-src-1\n  value: {\"properties\":{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSourceConnector\",\"file\":\"test.txt\",\"topic\":\"test-topic\",\"tasks.max\":\"1\",\"name\":\"file-src-1\"}}\n")
	require.Contains(t, s, "partition 2 offset 0\n  key:   [\"file-src-1\",{\"filename\":\"test.txt\"}]\n  value: {\"position\":30}\n")
}
