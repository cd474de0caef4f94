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

// connectGroupGoldens is offsetstore's golden file of Connect's worker group protocol.
const connectGroupGoldens = "../../offsetstore/testdata/connect-group-goldens.json"

// TestConnectGroupGoldens runs offsetstore/testdata/golden/ConnectGroupVectors.java, which
// prints assignments and worker metadata serialized by Connect's own ConnectProtocol and
// IncrementalCooperativeConnectProtocol (connect-runtime, on the tier's classpath) with what
// Connect's deserializers read back, and compares it with the goldens offsetstore's
// TestWorkerGroupGoldens decodes. OFFSETAGENT_UPDATE_GOLDENS=1 writes the file instead.
func TestConnectGroupGoldens(t *testing.T) {
	env.RequirePeers(t)
	java, err := realkafka.Java()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, err := filepath.Abs("../../offsetstore/testdata/golden/ConnectGroupVectors.java")
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, java, "-cp", filepath.Join(env.Lib, "*"), src)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr:\n%s", stderr.String())
	if os.Getenv("OFFSETAGENT_UPDATE_GOLDENS") == "1" {
		require.NoError(t, os.WriteFile(connectGroupGoldens, stdout.Bytes(), 0o644))
		t.Logf("wrote %s", connectGroupGoldens)
		return
	}
	type goldens struct {
		KafkaVersion string            `json:"kafka_version"`
		Assignments  []json.RawMessage `json:"assignments"`
		Metadata     []json.RawMessage `json:"metadata"`
	}
	var got, want goldens
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	committed, err := os.ReadFile(connectGroupGoldens)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(committed, &want))
	require.NotEmpty(t, got.Assignments)
	for _, pair := range [][2][]json.RawMessage{{want.Assignments, got.Assignments}, {want.Metadata, got.Metadata}} {
		w, _ := json.Marshal(pair[0])
		g, _ := json.Marshal(pair[1])
		// The cases, not the version line: the goldens hold for every version they agree with.
		require.JSONEq(t, string(w), string(g),
			"Kafka %s's Connect group protocol differs from the goldens (made with %s): rerun with OFFSETAGENT_UPDATE_GOLDENS=1 and fix offsetstore's decoder",
			got.KafkaVersion, want.KafkaVersion)
	}
}
