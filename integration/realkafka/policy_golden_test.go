package realkafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// policyGoldens is mm2's golden file of MirrorMaker 2's DefaultReplicationPolicy.
const policyGoldens = "../../mm2/testdata/replication-policy-goldens.json"

// TestReplicationPolicyGoldens runs mm2/testdata/golden/PolicyVectors.java, which prints what
// MirrorMaker 2's own DefaultReplicationPolicy (connect-mirror-client, on the tier's classpath)
// makes of topic names with empty segments and others, and compares it with the goldens mm2's
// TestGoldenReplicationPolicy checks the Go policy against. OFFSETAGENT_UPDATE_GOLDENS=1 writes
// the file instead.
func TestReplicationPolicyGoldens(t *testing.T) {
	env.RequirePeers(t)
	java, err := realkafka.Java()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, err := filepath.Abs("../../mm2/testdata/golden/PolicyVectors.java")
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, java, "-cp", filepath.Join(env.Lib, "*"), src)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr:\n%s", stderr.String())
	if os.Getenv("OFFSETAGENT_UPDATE_GOLDENS") == "1" {
		require.NoError(t, os.WriteFile(policyGoldens, stdout.Bytes(), 0o644))
		t.Logf("wrote %s", policyGoldens)
		return
	}
	type goldens struct {
		KafkaVersion string            `json:"kafka_version"`
		Cases        []json.RawMessage `json:"cases"`
	}
	var got, want goldens
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	committed, err := os.ReadFile(policyGoldens)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(committed, &want))
	require.NotEmpty(t, got.Cases)
	// The cases, not the version line: the goldens hold for every version they agree with.
	gotCases, _ := json.Marshal(got.Cases)
	wantCases, _ := json.Marshal(want.Cases)
	require.JSONEq(t, string(wantCases), string(gotCases),
		"Kafka %s's DefaultReplicationPolicy differs from the goldens (made with %s): rerun with OFFSETAGENT_UPDATE_GOLDENS=1 and fix mm2's policy",
		got.KafkaVersion, want.KafkaVersion)
}
