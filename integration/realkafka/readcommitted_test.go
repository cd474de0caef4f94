package realkafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A Connect worker with exactly.once.source.support=enabled writes its source offsets (and,
// as leader, its config records) in transactions and reads them back read_committed. A write
// of {"position":999} over a connector's committed offset, in a transaction that aborts, and
// an aborted target state (PAUSED) are not what `offsetagent offsets`, `export` and `migrate`
// carry: they carry the committed offset the worker itself reports, and the committed state.
func TestExactlyOnceWorkerAbortedOffsets(t *testing.T) {
	requirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	// A Connect cluster of its own: the shared worker is not exactly-once.
	names := connectNames("eos")
	d, err := subdir("worker-eos")
	require.NoError(t, err)
	w, err := realkafka.StartWorker(ctx, realkafka.WorkerConfig{Lib: peers.lib, Dir: d, Brokers: peers.brokers,
		GroupID: names.group, ConfigTopic: names.config, OffsetsTopic: names.offsets, StatusTopic: names.status,
		Extra: map[string]string{"exactly.once.source.support": "enabled"}})
	require.NoError(t, err)
	stopAfter(t, w.Stop)

	name := unique("eos-src")
	content, _ := lines("e", 0, 10)
	file := writeFile(t, name+".txt", content)
	restOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": name, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file,
		"topic": name + "-out", "tasks.max": "1", "exactly.once.support": "required"}})
	waitState(t, w, name, "RUNNING")
	// Its offset reaches the end of the file (the worker's own read_committed view) and stays
	// there: the file does not grow.
	committed := `{"offsets":[{"partition":{"filename":` + jsonString(file) + `},"offset":{"position":` + itoa(len(content)) + `}}]}`
	require.Eventually(t, func() bool { return sameJSON(offsetsOf(t, w, name), committed) },
		90*time.Second, 500*time.Millisecond, "the connector's offset")

	// A transaction over the offset and the target state, aborted.
	key := `["` + name + `",{"filename":` + jsonString(file) + `}]`
	txn, err := kgo.NewClient(kgo.SeedBrokers(peers.brokers...), kgo.TransactionalID(name+"-aborted"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer txn.Close()
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctx,
		&kgo.Record{Topic: names.offsets, Key: []byte(key), Value: []byte(`{"position":999}`),
			Partition: int32(offsetstore.PartitionFor([]byte(key), 25))},
		&kgo.Record{Topic: names.config, Key: []byte("target-state-" + name), Value: []byte(`{"state":"PAUSED","state.v2":"PAUSED"}`)},
	).FirstErr())
	require.NoError(t, txn.EndTransaction(ctx, kgo.TryAbort))
	// The worker's own view is unchanged.
	require.JSONEq(t, committed, offsetsOf(t, w, name))
	waitState(t, w, name, "RUNNING")

	env := func(extra ...string) []string {
		return append(append([]string{}, peers.agent.env...), extra...)
	}
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, peers.agentBin, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "%v\nstdout:\n%s\nstderr:\n%s", args, stdout.String(), stderr.String())
		return stdout.String()
	}

	// offsetagent offsets NAME, on the worker's topics.
	out := run(env("OFFSETAGENT_CONFIG_TOPIC="+names.config, "OFFSETAGENT_OFFSETS_TOPIC="+names.offsets), "offsets", name)
	require.JSONEq(t, committed, out)

	// export: the committed offset and state.
	from := []string{"--from-brokers", strings.Join(peers.brokers, ","), "--from-config-topic", names.config,
		"--from-offsets-topic", names.offsets, "--include", name}
	out = run(env(), append([]string{"export"}, from...)...)
	require.Contains(t, out, `"position":`+itoa(len(content)))
	require.NotContains(t, out, "999")
	require.Contains(t, out, `"initial_state":"RUNNING"`)

	// migrate to another Connect cluster (its topics on the same broker), through its agent.
	namesB := connectNames("eos-b")
	agentB, err := startAgent(ctx, "agent-eos-b", map[string]string{
		"OFFSETAGENT_CONFIG_TOPIC":          namesB.config,
		"OFFSETAGENT_OFFSETS_TOPIC":         namesB.offsets,
		"OFFSETAGENT_CREATE_CONNECT_TOPICS": "true",
	})
	require.NoError(t, err)
	run(agentB.env, append(append([]string{"migrate"}, from...), "--to-brokers", strings.Join(peers.brokers, ","), "--no-verify")...)
	recs := offsetRecords(t, namesB.offsets, name)
	require.Len(t, recs, 1)
	require.Equal(t, key, string(recs[0].Key))
	require.JSONEq(t, `{"position":`+itoa(len(content))+`}`, string(recs[0].Value))
	var state string
	for _, r := range readTopic(t, namesB.config) {
		if string(r.Key) == "target-state-"+name {
			state = string(r.Value)
		}
	}
	require.Contains(t, state, `"STARTED"`)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
