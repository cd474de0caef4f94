package realkafka_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// connectorKinds are the configs the message parity cases use, by kind; the worker has every
// one of these classes.
func connectorKinds(t *testing.T) map[string]map[string]string {
	mm2 := func(class string, kv ...string) map[string]string {
		c := map[string]string{"connector.class": class, "tasks.max": "1",
			"source.cluster.alias": "src", "target.cluster.alias": "tgt",
			"source.cluster.bootstrap.servers": strings.Join(env.Brokers, ","),
			"target.cluster.bootstrap.servers": strings.Join(env.Brokers, ",")}
		for i := 0; i < len(kv); i += 2 {
			c[kv[i]] = kv[i+1]
		}
		return c
	}
	return map[string]map[string]string{
		"file-source": {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"file": env.WriteFile(t, env.Unique("msg")+".txt", ""), "topic": "t", "tasks.max": "1"},
		"stdin-source": {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "topic": "t", "tasks.max": "1"},
		"file-sink": {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
			"topics": "t", "file": env.WriteFile(t, env.Unique("msg")+".sink", ""), "tasks.max": "1"},
		"mirror-source":     mm2("org.apache.kafka.connect.mirror.MirrorSourceConnector", "topics", "orders"),
		"mirror-checkpoint": mm2("org.apache.kafka.connect.mirror.MirrorCheckpointConnector", "groups", "g1"),
		"mirror-heartbeat":  mm2("org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"),
	}
}

// messageCases are the PATCH validation rules (docs/connect-internals.md, "Offsets topic records",
// "Checks of an alter, in order" and "alterOffsets") that apply to initial offsets, one invalid
// offsets array each.
//
// format is set for the rules of OffsetUtils.validateFormat: the agent answers them 400, as KIP-995
// asks for initial_offsets that do not follow the KIP-875 format, where Connect's PATCH answers 500
// (a DataException); the texts are the same.
var messageCases = []struct {
	name, kind, offsets string
	format              bool
}{
	{name: "nested map in partition", kind: "file-source", format: true, offsets: `[{"partition":{"filename":{"a":1}},"offset":{"position":1}}]`},
	{name: "list in offset", kind: "file-source", format: true, offsets: `[{"partition":{"filename":"f"},"offset":{"position":[1]}}]`},
	{name: "integer beyond long", kind: "file-source", format: true, offsets: `[{"partition":{"filename":"f"},"offset":{"position":9223372036854775808}}]`},
	{name: "file source: null partition", kind: "file-source", offsets: `[{"partition":null,"offset":{"position":1}}]`},
	{name: "file source: no filename", kind: "file-source", offsets: `[{"partition":{"file":"f"},"offset":{"position":1}}]`},
	{name: "file source: no position", kind: "file-source", offsets: `[{"partition":{"filename":"f"},"offset":{"pos":1}}]`},
	{name: "file source: string position", kind: "file-source", offsets: `[{"partition":{"filename":"f"},"offset":{"position":"10"}}]`},
	{name: "file source: fractional position", kind: "file-source", offsets: `[{"partition":{"filename":"f"},"offset":{"position":1.5}}]`},
	{name: "file source: negative position", kind: "file-source", offsets: `[{"partition":{"filename":"f"},"offset":{"position":-1}}]`},
	{name: "file source: stdin", kind: "stdin-source", offsets: `[{"partition":{"filename":"f"},"offset":{"position":1}}]`},
	{name: "sink: null partition", kind: "file-sink", offsets: `[{"partition":null,"offset":{"kafka_offset":1}}]`},
	{name: "sink: no kafka_partition", kind: "file-sink", offsets: `[{"partition":{"kafka_topic":"t"},"offset":{"kafka_offset":1}}]`},
	{name: "sink: null topic", kind: "file-sink", offsets: `[{"partition":{"kafka_topic":null,"kafka_partition":0},"offset":{"kafka_offset":1}}]`},
	{name: "sink: null partition number", kind: "file-sink", offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":null},"offset":{"kafka_offset":1}}]`},
	{name: "sink: partition not an int", kind: "file-sink", offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":"zero"},"offset":{"kafka_offset":1}}]`},
	{name: "sink: fractional partition", kind: "file-sink", offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":1.0},"offset":{"kafka_offset":1}}]`},
	{name: "sink: no kafka_offset", kind: "file-sink", offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"offset":1}}]`},
	{name: "sink: offset not a long", kind: "file-sink", offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":"x"}}]`},
	{name: "sink: negative offset", kind: "file-sink", offsets: `[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":-5}}]`},
	{name: "mirror source: null partition", kind: "mirror-source", offsets: `[{"partition":null,"offset":{"offset":1}}]`},
	{name: "mirror source: no cluster", kind: "mirror-source", offsets: `[{"partition":{"topic":"orders","partition":0},"offset":{"offset":1}}]`},
	{name: "mirror source: cluster not a string", kind: "mirror-source", offsets: `[{"partition":{"cluster":1,"topic":"orders","partition":0},"offset":{"offset":1}}]`},
	{name: "mirror source: partition not an int", kind: "mirror-source", offsets: `[{"partition":{"cluster":"src","topic":"orders","partition":"0"},"offset":{"offset":1}}]`},
	{name: "mirror source: partition too big", kind: "mirror-source", offsets: `[{"partition":{"cluster":"src","topic":"orders","partition":2147483648},"offset":{"offset":1}}]`},
	{name: "mirror source: negative partition", kind: "mirror-source", offsets: `[{"partition":{"cluster":"src","topic":"orders","partition":-1},"offset":{"offset":1}}]`},
	{name: "mirror source: no offset key", kind: "mirror-source", offsets: `[{"partition":{"cluster":"src","topic":"orders","partition":0},"offset":{"position":1}}]`},
	{name: "mirror source: negative offset", kind: "mirror-source", offsets: `[{"partition":{"cluster":"src","topic":"orders","partition":0},"offset":{"offset":-1}}]`},
	{name: "mirror source: offset not an int", kind: "mirror-source", offsets: `[{"partition":{"cluster":"src","topic":"orders","partition":0},"offset":{"offset":"1"}}]`},
	{name: "mirror checkpoint: no group", kind: "mirror-checkpoint", offsets: `[{"partition":{"topic":"orders","partition":0},"offset":{"offset":0}}]`},
	{name: "mirror checkpoint: offset not 0", kind: "mirror-checkpoint", offsets: `[{"partition":{"group":"g1","topic":"orders","partition":0},"offset":{"offset":5}}]`},
	{name: "mirror heartbeat: no target alias", kind: "mirror-heartbeat", offsets: `[{"partition":{"sourceClusterAlias":"src"},"offset":{"offset":0}}]`},
	{name: "mirror heartbeat: offset not 0", kind: "mirror-heartbeat", offsets: `[{"partition":{"sourceClusterAlias":"src","targetClusterAlias":"tgt"},"offset":{"offset":1}}]`},
}

// TestValidationMessageParity: the same invalid offsets sent to the real worker's
// PATCH /connectors/NAME/offsets and to the agent give the same status and the same message.
func TestValidationMessageParity(t *testing.T) {
	env.RequirePeers(t)
	kinds := connectorKinds(t)
	// One STOPPED connector of each kind on the worker takes every PATCH of that kind.
	onWorker := map[string]string{}
	for kind, cfg := range kinds {
		onWorker[kind] = env.Unique("msg-" + kind)
		tier.RestOK(t, env.Worker, http.MethodPost, "/connectors", map[string]any{"name": onWorker[kind], "config": cfg, "initial_state": "STOPPED"})
	}
	type outcome struct {
		connectStatus int
		connectBody   string
		agentName     string
		agent         tier.Result
	}
	outcomes := make([]outcome, len(messageCases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, tc := range messageCases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var entries []json.RawMessage
			if err := json.Unmarshal([]byte(tc.offsets), &entries); err != nil {
				panic(err)
			}
			o := &outcomes[i]
			o.connectStatus, o.connectBody = tier.Rest(t, env.Worker, http.MethodPatch, "/connectors/"+onWorker[tc.kind]+"/offsets", map[string]any{"offsets": entries})
			o.agentName = env.Unique("msg-agent")
			o.agent = env.Agent.Publish(t, map[string]any{"name": o.agentName, "config": kinds[tc.kind], "initial_offsets": entries})
		}()
	}
	wg.Wait()
	for i, tc := range messageCases {
		t.Run(tc.name, func(t *testing.T) {
			o := outcomes[i]
			var connect struct {
				ErrorCode int    `json:"error_code"`
				Message   string `json:"message"`
			}
			require.NoError(t, json.Unmarshal([]byte(o.connectBody), &connect), o.connectBody)
			require.NotEqual(t, 2, o.connectStatus/100, "Connect accepted %s: %s", tc.offsets, o.connectBody)
			require.Equal(t, tier.TypeFailed, o.agent.Type, "the agent accepted %s", tc.offsets)
			// A message that names the connector names each one's own.
			want := strings.ReplaceAll(connect.Message, onWorker[tc.kind], o.agentName)
			require.Equal(t, want, o.agent.Data.Message, "message of Connect (expected) and of the agent (actual)")
			if tc.format {
				require.Equal(t, 500, o.connectStatus)
				require.Equal(t, 400, o.agent.Data.ErrorCode)
				return
			}
			require.Equal(t, o.connectStatus, o.agent.Data.ErrorCode, "status")
		})
	}
}
