package tier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// verifyCutover is MigrateStopSource's proof of migrate --verify: the cutover of the source
// and sink that ran on B is verified; another source, moved STOPPED and given on B an
// offset before the one placed (as a wrong placement would), replays on B what A had
// produced, and the verification names the mismatch with both offsets.
func verifyCutover(ctx context.Context, t *testing.T, e *Env, agentB *Agent, brokerB, cutover string, wA, wB *realkafka.Worker, namesA Connect) {
	t.Helper()
	run := func(args ...string) (int, string) {
		cmd := exec.CommandContext(ctx, e.AgentBin, args...)
		cmd.Env = agentB.Env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			require.NoError(t, err)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
	verify := func(report string) (int, string) {
		return run("migrate", "--verify", "--cutover-report", report, "--to-brokers", brokerB, "--verify-timeout", "60s")
	}
	code, out := verify(cutover)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "2 partitions of 2 connectors: 2 verified, 0 waiting, 0 mismatch")
	var rep struct {
		Connectors []struct {
			Type       string
			Partitions []struct {
				OnA      json.RawMessage `json:"offset_on_a"`
				Placed   json.RawMessage `json:"offset_placed"`
				FirstOnB json.RawMessage `json:"first_on_b"`
				Verdict  string
			}
		}
	}
	data, err := os.ReadFile(cutover)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	require.Len(t, rep.Connectors, 2)
	for _, c := range rep.Connectors {
		require.Len(t, c.Partitions, 1)
		p := c.Partitions[0]
		require.JSONEq(t, string(p.OnA), string(p.Placed), c.Type)
		require.Equal(t, "verified", p.Verdict, c.Type)
		require.NotEqual(t, string(p.Placed), string(p.FirstOnB), c.Type)
	}

	// Another source, moved STOPPED; on B an earlier offset is written over the placed one.
	src := e.Unique("mig-wrong")
	content, _ := Lines("w", 0, 10)
	file := e.WriteFile(t, src+".txt", content)
	RestOK(t, wA, http.MethodPost, "/connectors", map[string]any{"name": src, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file, "topic": src + "-out", "tasks.max": "1"}})
	placed := `{"offsets":[{"partition":{"filename":` + JSONString(file) + `},"offset":{"position":` + fmt.Sprint(len(content)) + `}}]}`
	require.Eventually(t, func() bool { return SameJSON(OffsetsOf(t, wA, src), placed) }, 60*time.Second, 300*time.Millisecond, "the source's offset on A")
	wrongCutover := filepath.Join(t.TempDir(), "cutover-wrong.json")
	code, out = run("migrate", "--from-brokers", strings.Join(e.Brokers, ","), "--from-config-topic", namesA.Config, "--from-offsets-topic", namesA.Offsets,
		"--to-brokers", brokerB, "--include", src, "--initial-state", "STOPPED", "--verify-timeout", "1s", "--cutover-report", wrongCutover)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "0 verified, 1 waiting, 0 mismatch")
	key := `["` + src + `",{"filename":` + JSONString(file) + `}]`
	w := &kafka.Writer{Addr: kafka.TCP(brokerB), Topic: e.ConnectNames("mig-b").Offsets, Balancer: kafka.Murmur2Balancer{Consistent: true},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Key: []byte(key), Value: []byte(`{"position":0}`)}))
	require.NoError(t, w.Close())
	RestOK(t, wB, http.MethodPut, "/connectors/"+src+"/resume", nil)
	WaitState(t, wB, src, "RUNNING")
	// B produces again the lines A had produced.
	require.Eventually(t, func() bool { return len(TopicValues(t, []string{brokerB}, src+"-out")) >= 10 }, 60*time.Second, 300*time.Millisecond,
		"the lines B produces again")
	code, out = verify(wrongCutover)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "0 verified, 0 waiting, 1 mismatch")
	require.Contains(t, out, `mismatch: `+src+` {"filename":`+JSONString(file)+`}: B's first offset after the placed {"position":`+fmt.Sprint(len(content))+`} is {"position":0}: before it`)
}

// SameJSON reports whether two JSON texts hold the same value.
func SameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
