package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// connectA is A's Connect REST API for the precheck tests: one running source connector,
// which PUT /stop stops; every stop is counted.
type connectA struct {
	mu    sync.Mutex
	state string
	stops int
}

func startConnectA(t *testing.T) (*connectA, string) {
	t.Helper()
	c := &connectA{state: "RUNNING"}
	srv := httptest.NewServer(c) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (c *connectA) stopped() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stops
}

func (c *connectA) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if v != nil {
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	tasks := []any{map[string]any{"id": 0, "state": c.state, "worker_id": "w:8083"}}
	if c.state == "STOPPED" {
		tasks = []any{}
	}
	status := map[string]any{"name": "src-1", "connector": map[string]any{"state": c.state, "worker_id": "w:8083"}, "tasks": tasks, "type": "source"}
	info := map[string]any{"name": "src-1", "type": "source", "tasks": []any{}, "config": map[string]string{
		"name": "src-1", "connector.class": fileSource, "file": "a.txt", "topic": "t", "tasks.max": "1"}}
	switch p := r.URL.Path; {
	case p == "/":
		reply(200, map[string]string{"version": "3.9.0", "commit": "x", "kafka_cluster_id": "cluster-A"})
	case p == "/connectors" && r.URL.Query().Has("expand"):
		reply(200, map[string]any{"src-1": map[string]any{"info": info, "status": status}})
	case p == "/connectors":
		reply(200, []string{"src-1"})
	case p == "/connectors/src-1":
		reply(200, info)
	case p == "/connectors/src-1/status":
		reply(200, status)
	case p == "/connectors/src-1/stop" && r.Method == http.MethodPut:
		c.stops++
		c.state = "STOPPED"
		reply(204, nil)
	case p == "/connectors/src-1/offsets":
		reply(200, map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"filename": "a.txt"}, "offset": map[string]any{"position": 5}}}})
	default:
		reply(404, map[string]any{"error_code": 404, "message": "not found"})
	}
}

// advertisingMember joins group on brokers as a consumer of topic that sends userData in its
// membership, as an agent advertises itself, and stays until the test ends.
func advertisingMember(t *testing.T, brokers []string, group, topic string, userData []byte) {
	t.Helper()
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: group, Brokers: brokers, Topics: []string{topic},
		GroupBalancers: []kafka.GroupBalancer{userDataBalancer{kafka.RangeGroupBalancer{}, userData}},
		Timeout:        10 * time.Second, JoinGroupBackoff: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cg.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = cg.Next(ctx)
	require.NoError(t, err, "join group %s", group)
}

type userDataBalancer struct {
	kafka.GroupBalancer
	data []byte
}

func (b userDataBalancer) UserData() ([]byte, error) { return b.data, nil }

// migrate refuses, before anything is stopped on A or published to B, a run whose requests B's
// agents would refuse or write to another Connect cluster, or whose results they publish where
// migrate does not read: what the agents advertise in their group membership is compared with
// the run's source, B's Kafka cluster and Connect topics, and the result topic. Each refusal
// exits 2 (as every precheck refusal) naming both sides, with A's connector still running.
func TestMigrateRefusesWhatBsAgentsAdvertise(t *testing.T) {
	tests := []struct {
		name string
		// setup starts what consumes B's request topic and returns B's agent configuration
		// (B's topics, as migrate is given them) and extra flags.
		setup func(t *testing.T) (agent.Config, []string)
		// want are parts of the refusal, given B's agent configuration.
		want func(cfg agent.Config) []string
	}{
		{
			name: "B's agents refuse the migration's source",
			setup: func(t *testing.T) (agent.Config, []string) {
				cfg := testConfig(startCluster(t))
				cfg.AllowedSources = []string{"/offsetagent/cli", "/offsetagent/migrate/other"}
				startAgent(t, cfg, agent.Options{})
				return cfg, nil
			},
			want: func(cfg agent.Config) []string {
				return []string{`B's agents refuse the requests of this run, which have source "/offsetagent/migrate/mig-1": their OFFSETAGENT_ALLOWED_SOURCES`,
					fmt.Sprintf(`group %q accepts ["/offsetagent/cli" "/offsetagent/migrate/other"]`, cfg.GroupID)}
			},
		},
		{
			name: "B's agents publish to another result topic",
			setup: func(t *testing.T) (agent.Config, []string) {
				cfg := testConfig(startCluster(t))
				startAgent(t, cfg, agent.Options{})
				newClient(t, cfg).createTopic("other-"+cfg.ResultTopic, 1)
				return cfg, []string{"--result-topic", "other-" + cfg.ResultTopic}
			},
			want: func(cfg agent.Config) []string {
				return []string{fmt.Sprintf(`B's agents publish their results to another topic than "other-%s", the one this run reads (--result-topic`, cfg.ResultTopic),
					fmt.Sprintf(`group %q publishes to %q`, cfg.GroupID, cfg.ResultTopic)}
			},
		},
		{
			name: "B on A's Kafka cluster, B's agent in the group of A's",
			setup: func(t *testing.T) (agent.Config, []string) {
				c := startCluster(t)
				cfgA := testConfig(c)
				startAgent(t, cfgA, agent.Options{})
				cfgB, other := cfgA, testConfig(c)
				cfgB.ConfigTopic, cfgB.OffsetsTopic, cfgB.IntentTopic = other.ConfigTopic, other.OffsetsTopic, other.IntentTopic
				launchAgent(t, cfgB, agent.Options{}) // never ready: its group mixes two Connect clusters
				require.Eventually(t, func() bool { return groupMembers(t, cfgA, cfgA.GroupID) == 2 }, 30*time.Second, 50*time.Millisecond)
				return cfgB, []string{"--to-config-topic", cfgB.ConfigTopic, "--to-offsets-topic", cfgB.OffsetsTopic}
			},
			want: func(cfg agent.Config) []string {
				return []string{fmt.Sprintf(`serve another Connect cluster (group %q writes config topic "connect-configs-`, cfg.GroupID),
					fmt.Sprintf(`not B's config topic %q and offsets topic %q`, cfg.ConfigTopic, cfg.OffsetsTopic),
					fmt.Sprintf(`group %q also holds agents of B's Connect cluster`, cfg.GroupID), "must serve one Connect cluster only"}
			},
		},
		{
			name: "two Kafka clusters, a member of B's group writes A's",
			setup: func(t *testing.T) (agent.Config, []string) {
				// Two Kafka clusters, with ids of their own (kfake's default is one for all).
				a, b := startSecureCluster(t, kfake.ClusterID("kafka-a")), startSecureCluster(t, kfake.ClusterID("kafka-b"))
				cfg := testConfig(b)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cl := newClient(t, cfg)
				require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl.kc, cfg.ConfigTopic, cfg.OffsetsTopic, true))
				cl.createTopic(cfg.RequestTopic, 1)
				cl.createTopic(cfg.ResultTopic, 1)
				// What an agent writing A's Connect topics (the same names, on A's brokers)
				// advertises; it consumes B's request topic in B's group.
				md, err := newClient(t, testConfig(a)).kc.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
				require.NoError(t, err)
				ad := fmt.Sprintf(`{"agent":"offsetagent","kafka_cluster_id":%q,"config_topic":%q,"offsets_topic":%q,"request_topic":%q,"result_topic":%q,"any_source":true}`,
					md.ClusterID, cfg.ConfigTopic, cfg.OffsetsTopic, cfg.RequestTopic, cfg.ResultTopic)
				advertisingMember(t, cfg.Brokers, cfg.GroupID, cfg.RequestTopic, []byte(ad))
				return cfg, nil
			},
			want: func(cfg agent.Config) []string {
				return []string{fmt.Sprintf(`serve another Connect cluster (group %q writes config topic %q and offsets topic %q on Kafka cluster "kafka-a"), `+
					`not B's config topic %q and offsets topic %q on Kafka cluster "kafka-b" (--to-brokers)`,
					cfg.GroupID, cfg.ConfigTopic, cfg.OffsetsTopic, cfg.ConfigTopic, cfg.OffsetsTopic)}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, extra := tt.setup(t)
			connect, url := startConnectA(t)
			env := []string{"PATH=" + os.Getenv("PATH"),
				"OFFSETAGENT_REQUEST_TOPIC=" + cfg.RequestTopic, "OFFSETAGENT_RESULT_TOPIC=" + cfg.ResultTopic,
				"OFFSETAGENT_CONFIG_TOPIC=" + cfg.ConfigTopic, "OFFSETAGENT_OFFSETS_TOPIC=" + cfg.OffsetsTopic,
				"OFFSETAGENT_GROUP_ID=" + cfg.GroupID}
			args := append([]string{"migrate", "--from-connect-url", url, "--to-brokers", strings.Join(cfg.Brokers, ","),
				"--stop-source", "--migration-id", "mig-1", "--timeout", "15s", "--grace", "1s"}, extra...)
			out, code := runCLI(t, env, args...)
			t.Log(out)
			require.Equal(t, 2, code, out)
			for _, w := range tt.want(cfg) {
				require.Contains(t, out, w)
			}
			require.Zero(t, connect.stopped(), "a connector of A was stopped:\n%s", out)
			require.Empty(t, newClient(t, cfg).readAll(cfg.RequestTopic), "a request was published")
		})
	}
}

// groupMembers is the number of members of group, once it is stable (0 before).
func groupMembers(t *testing.T, cfg agent.Config, group string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dg, err := newClient(t, cfg).kc.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(dg.Groups) != 1 || dg.Groups[0].GroupState != "Stable" {
		return 0
	}
	return len(dg.Groups[0].Members)
}

// Two agents in one consumer group that write two Connect clusters (B's agent started against
// A's Kafka cluster with A's group and request topic, where the defaults lead) both refuse
// loudly: /readyz 503 and an ERROR naming both Connect clusters, and every request fails
// before any step, so that none is written to the wrong cluster. Once B's agent leaves, A's
// serves again.
func TestAgentsRefuseAGroupOfTwoConnectClusters(t *testing.T) {
	c := startCluster(t)
	cfgA := testConfig(c)
	cfgB, other := cfgA, testConfig(c)
	cfgB.ConfigTopic, cfgB.OffsetsTopic, cfgB.IntentTopic = other.ConfigTopic, other.OffsetsTopic, other.IntentTopic
	logsA, logsB := &lockedBuffer{}, &lockedBuffer{}
	jsonLogger := func(b *lockedBuffer) *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }
	a := startAgent(t, cfgA, agent.Options{Logger: jsonLogger(logsA)})
	b := launchAgent(t, cfgB, agent.Options{Logger: jsonLogger(logsB)})

	refusing := func(r *runningAgent, logs *lockedBuffer) bool {
		code, body := r.get(t, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, cfgA.ConfigTopic) && strings.Contains(body, cfgB.ConfigTopic) &&
			strings.Contains(logs.String(), `"level":"ERROR"`)
	}
	require.Eventually(t, func() bool { return refusing(a, logsA) && refusing(b, logsB) }, 40*time.Second, 100*time.Millisecond,
		"both agents refuse the mixed group\nA: %s\nB: %s", logsA.String(), logsB.String())
	for _, logs := range []*lockedBuffer{logsA, logsB} {
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"level":"ERROR"`) {
				line = l
				break
			}
		}
		require.Contains(t, line, cfgA.ConfigTopic)
		require.Contains(t, line, cfgB.ConfigTopic)
	}

	cl := newClient(t, cfgA)
	id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	r := cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateFailed, r.Type, "%+v", r.Data)
	require.Equal(t, 500, r.Data.ErrorCode)
	require.Contains(t, r.Data.Message, "mixes two Connect clusters")
	require.Empty(t, cl.live(cfgA.ConfigTopic), "nothing written to A")
	require.Empty(t, cl.live(cfgB.ConfigTopic), "nothing written to B")

	b.stop(t)
	require.Eventually(t, a.Ready, 40*time.Second, 100*time.Millisecond, "A's agent serves again once alone")
	id = cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(id, resultWait).Type)
}
