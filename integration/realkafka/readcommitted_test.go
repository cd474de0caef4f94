package realkafka_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A Connect worker with exactly.once.source.support=enabled writes its source offsets (and,
// as leader, its config records) in transactions and reads them back read_committed. A write
// of {"position":999} over a connector's committed offset, in a transaction that aborts, and
// an aborted target state (PAUSED) are not what `offsetagent offsets`, `export` and `migrate`
// carry: they carry the committed offset the worker itself reports, and the committed state.
func TestExactlyOnceWorkerAbortedOffsets(t *testing.T) {
	env.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	// A Connect cluster of its own: the shared worker is not exactly-once.
	names := env.ConnectNames("eos")
	d, err := env.Subdir("worker-eos")
	require.NoError(t, err)
	w, err := realkafka.StartWorker(ctx, realkafka.WorkerConfig{Lib: env.Lib, Dir: d, Brokers: env.Brokers,
		GroupID: names.Group, ConfigTopic: names.Config, OffsetsTopic: names.Offsets, StatusTopic: names.Status,
		Extra: map[string]string{"exactly.once.source.support": "enabled"}})
	require.NoError(t, err)
	env.StopAfter(t, w.Stop)

	name := env.Unique("eos-src")
	content, _ := tier.Lines("e", 0, 10)
	file := env.WriteFile(t, name+".txt", content)
	tier.RestOK(t, w, http.MethodPost, "/connectors", map[string]any{"name": name, "config": map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file,
		"topic": name + "-out", "tasks.max": "1", "exactly.once.support": "required"}})
	tier.WaitState(t, w, name, "RUNNING")
	// Its offset reaches the end of the file (the worker's own read_committed view) and stays
	// there: the file does not grow.
	committed := `{"offsets":[{"partition":{"filename":` + tier.JSONString(file) + `},"offset":{"position":` + itoa(len(content)) + `}}]}`
	require.Eventually(t, func() bool { return tier.SameJSON(tier.OffsetsOf(t, w, name), committed) },
		90*time.Second, 500*time.Millisecond, "the connector's offset")

	// A transaction over the offset and the target state, aborted.
	key := `["` + name + `",{"filename":` + tier.JSONString(file) + `}]`
	txn, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID(name+"-aborted"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer txn.Close()
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctx,
		&kgo.Record{Topic: names.Offsets, Key: []byte(key), Value: []byte(`{"position":999}`),
			Partition: int32(offsetstore.PartitionFor([]byte(key), 25))},
		&kgo.Record{Topic: names.Config, Key: []byte("target-state-" + name), Value: []byte(`{"state":"PAUSED","state.v2":"PAUSED"}`)},
	).FirstErr())
	require.NoError(t, txn.EndTransaction(ctx, kgo.TryAbort))
	// The worker's own view is unchanged.
	require.JSONEq(t, committed, tier.OffsetsOf(t, w, name))
	tier.WaitState(t, w, name, "RUNNING")

	agentEnv := func(extra ...string) []string {
		return append(append([]string{}, env.Agent.Env...), extra...)
	}

	// offsetagent offsets NAME, on the worker's topics.
	out := env.Offsetagent(t, ctx, agentEnv("OFFSETAGENT_CONFIG_TOPIC="+names.Config, "OFFSETAGENT_OFFSETS_TOPIC="+names.Offsets), "offsets", name)
	require.JSONEq(t, committed, out)

	// export: the committed offset and state.
	from := []string{"--from-brokers", strings.Join(env.Brokers, ","), "--from-config-topic", names.Config,
		"--from-offsets-topic", names.Offsets, "--include", name}
	out = env.Offsetagent(t, ctx, agentEnv(), append([]string{"export"}, from...)...)
	require.Contains(t, out, `"position":`+itoa(len(content)))
	require.NotContains(t, out, `"position":999`, "the aborted transaction's offset (the export names temporary folders, whose random digits may hold 999)")
	require.Contains(t, out, `"initial_state":"RUNNING"`)

	// migrate to another Connect cluster (its topics on the same broker), through its agent.
	namesB := env.ConnectNames("eos-b")
	agentB, err := env.StartAgent(ctx, "agent-eos-b", map[string]string{
		"OFFSETAGENT_CONFIG_TOPIC":          namesB.Config,
		"OFFSETAGENT_OFFSETS_TOPIC":         namesB.Offsets,
		"OFFSETAGENT_CREATE_CONNECT_TOPICS": "true",
	})
	require.NoError(t, err)
	env.Offsetagent(t, ctx, agentB.Env, append(append([]string{"migrate"}, from...), "--to-brokers", strings.Join(env.Brokers, ","), "--no-verify")...)
	recs := env.OffsetRecords(t, namesB.Offsets, name)
	require.Len(t, recs, 1)
	require.Equal(t, key, string(recs[0].Key))
	require.JSONEq(t, `{"position":`+itoa(len(content))+`}`, string(recs[0].Value))
	var state string
	for _, r := range env.ReadTopic(t, namesB.Config) {
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
