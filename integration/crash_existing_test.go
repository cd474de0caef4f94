package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// crashPoints are every point at which the agent can be stopped inside a request, in the
// order a request passes them: the stage boundaries, inside validate_config (the claim taken;
// the intent written while the existence check has not settled), in the middle of each
// multi-record write, and around the publication of the result. A request passes only the
// points of the stages it runs (a rejected one stops after validate_config, a dry run writes
// nothing).
var crashPoints = []string{
	"before:validate_config", "validate_config:claimed", "validate_config:intent", "after:validate_config",
	"before:validate_offsets", "after:validate_offsets",
	"before:wipe_offsets", "mid:wipe_offsets", "after:wipe_offsets",
	"before:write_offsets", "mid:write_offsets", "after:write_offsets",
	"before:write_config", "mid:write_config", "after:write_config",
	"before:publish", "after:publish",
}

// crashCase is one request of the crash matrix, for a connector of its own.
type crashCase struct {
	name     string
	sink     bool
	existing bool // the connector exists before the request (the request must fail with 409)
	offsets  bool // the request has initial_offsets
	dry      bool
	// offsetsOnly: the request has "create": "offsets-only" (a connector an operator creates
	// afterwards): it places the offsets and writes no config record.
	offsetsOnly bool
}

// crashCases are the matrix's requests; suffix keeps the connector names (and so the sinks'
// groups) of tests sharing a broker apart.
func crashCases(suffix string) []crashCase {
	var out []crashCase
	for _, sink := range []bool{false, true} {
		for _, existing := range []bool{false, true} {
			for _, v := range []struct{ offsets, dry bool }{{true, false}, {false, false}, {true, true}} {
				c := crashCase{sink: sink, existing: existing, offsets: v.offsets, dry: v.dry}
				c.name = map[bool]string{false: "src", true: "sink"}[sink] + map[bool]string{false: "-new", true: "-old"}[existing] +
					map[bool]string{false: "-plain", true: "-offsets"}[v.offsets] + map[bool]string{false: "", true: "-dry"}[v.dry] + suffix
				out = append(out, c)
			}
		}
	}
	return out
}

// offsetsOnlyCases are the offsets-only requests of the matrix: a new source and sink, and an
// existing source (whose 409 takes the creation's path), at every point but write_config's,
// which they never reach; fewer cases keep the matrix's time in make test down.
func offsetsOnlyCases(point, suffix string) []crashCase {
	if strings.HasSuffix(point, ":write_config") {
		return nil
	}
	return []crashCase{
		{name: "src-new-only" + suffix, offsets: true, offsetsOnly: true},
		{name: "sink-new-only" + suffix, sink: true, offsets: true, offsetsOnly: true},
		{name: "src-old-only" + suffix, existing: true, offsets: true, offsetsOnly: true},
	}
}

func (c crashCase) config() string {
	if c.sink {
		return fmt.Sprintf(`{"connector.class":"FileStreamSink","topics":"in","file":"/tmp/%s"}`, c.name)
	}
	return `{"connector.class":"FileStreamSource","file":"f","topic":"t"}`
}

func (c crashCase) body() string {
	b := fmt.Sprintf(`{"name":%q,"config":%s`, c.name, c.config())
	if c.offsetsOnly {
		b += `,"create":"offsets-only"`
	}
	switch {
	case c.offsets && c.sink:
		b += `,"initial_offsets":[{"partition":{"kafka_topic":"in","kafka_partition":0},"offset":{"kafka_offset":5}},
		                          {"partition":{"kafka_topic":"in","kafka_partition":1},"offset":{"kafka_offset":6}}]`
	case c.offsets:
		b += `,"initial_offsets":[{"partition":{"filename":"f"},"offset":{"position":100}},{"partition":{"filename":"g"},"offset":{"position":101}}]`
	}
	return b + "}"
}

// seedCrashCase writes what the connector has before its request: an existing connector's
// config records as a Connect worker writes them (target state, connector, task, commit) and
// its offsets; for a new one, offsets (or a group) and a target state left behind by an earlier
// connector of the name, which a request with initial offsets replaces and the others keep.
func seedCrashCase(t *testing.T, cl *client, cfg agent.Config, c crashCase) {
	t.Helper()
	if c.existing {
		props := strings.TrimSuffix(c.config(), "}") + fmt.Sprintf(`,"name":%q}`, c.name)
		cl.produce(cfg.ConfigTopic,
			kafka.Message{Key: []byte("target-state-" + c.name), Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`)},
			kafka.Message{Key: []byte("connector-" + c.name), Value: []byte(`{"properties":` + props + `}`)},
			kafka.Message{Key: []byte("task-" + c.name + "-0"), Value: []byte(`{"properties":` + props + `}`)},
			kafka.Message{Key: []byte("commit-" + c.name), Value: []byte(`{"tasks":1}`)},
		)
	} else {
		cl.produce(cfg.ConfigTopic, kafka.Message{Key: []byte("target-state-" + c.name), Value: []byte(`{"state":"PAUSED"}`)})
	}
	if c.sink {
		commitGroup(t, cl, "connect-"+c.name, map[int]int64{0: 40, 1: 41}, "in")
		return
	}
	cl.produce(cfg.OffsetsTopic,
		kafka.Message{Key: []byte(fmt.Sprintf(`[%q,{"filename":"f"}]`, c.name)), Value: []byte(`{"position":7}`)},
		kafka.Message{Key: []byte(fmt.Sprintf(`[%q,{"filename":"g"}]`, c.name)), Value: []byte(`{"position":8}`)},
	)
}

// connectorState is everything of one connector in Connect's topics and its group: config
// records by key, offsets records by key (partition and value), group entries by partition
// (offset, leader epoch, metadata).
type connectorState struct {
	Config  map[string]string
	Offsets map[string]liveRecord
	Group   map[string]string
}

func stateOf(t *testing.T, cl *client, cfg agent.Config, name string, configs, offsets map[string]liveRecord) connectorState {
	t.Helper()
	s := connectorState{Config: map[string]string{}, Offsets: map[string]liveRecord{}, Group: groupEntries(t, cfg, "connect-"+name)}
	for k, r := range configs {
		for _, prefix := range []string{"target-state-", "connector-", "commit-"} {
			if k == prefix+name {
				s.Config[k] = r.Value
			}
		}
		if strings.HasPrefix(k, "task-"+name+"-") {
			s.Config[k] = r.Value
		}
	}
	for k, r := range offsets {
		if strings.HasPrefix(k, fmt.Sprintf(`[%q,`, name)) {
			s.Offsets[k] = r
		}
	}
	return s
}

// groupEntries reads a group's committed offsets with everything a commit stores: offset,
// leader epoch and metadata, by "topic/partition".
func groupEntries(t *testing.T, cfg agent.Config, group string) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	out := map[string]string{}
	if resp.ErrorCode == kerr.GroupIDNotFound.Code {
		return out // no group: no entries
	}
	require.Zero(t, resp.ErrorCode)
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			require.Zero(t, p.ErrorCode)
			if p.Offset >= 0 {
				meta := ""
				if p.Metadata != nil {
					meta = *p.Metadata
				}
				out[fmt.Sprintf("%s/%d", tp.Topic, p.Partition)] = fmt.Sprintf("offset=%d epoch=%d metadata=%q", p.Offset, p.LeaderEpoch, meta)
			}
		}
	}
	return out
}

// startOnceProcess starts the agent stopping at point once per connector (fault.go's
// OFFSETAGENT_FAULT_ONCE_DIR), with extra environment (env: NAME=value).
func startOnceProcess(t *testing.T, cfg agent.Config, point, onceDir string, env ...string) *agentProcess {
	t.Helper()
	cmd := exec.Command(faultAgentBinary(t), "run")
	cmd.Env = append(append(processEnv(cfg, point), "OFFSETAGENT_FAULT_ONCE_DIR="+onceDir), env...)
	return startAgentProcess(t, cmd)
}

// The agent is stopped (as a SIGKILL stops it) at every point of a request, for a new
// connector and for an existing one, source and sink, with and without initial_offsets, dry
// runs and offsets-only requests; each request of the matrix is stopped once at the point (restart after restart),
// then the agent runs to the end. Every connector that existed before is byte for byte what it
// was (config records, offsets, group entries with their epoch and metadata), its request
// failed with 409, and every new connector holds exactly what its request asked for (an
// offsets-only one: its offsets, and the config records it found, untouched).
func TestCrashKeepsExistingConnectors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	faultAgentBinary(t) // built once, before the parallel subtests
	c := crashCluster(t)
	// Six points at a time: each runs agent processes one after another, the member of each
	// killed one removed at once (dropKilled), so that the six keep two cores mostly busy
	// (alone: 13.7 s of wall time, 22.2 CPU-seconds).
	sem := make(chan struct{}, 6)
	for i, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			crashMatrix(t, c, point, fmt.Sprintf("-%d", i))
		})
	}
}

func crashMatrix(t *testing.T, c *cluster, point, suffix string) {
	cfg := testConfig(c)
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 3)
	cl.createTopic("in", 2) // shared by the subtests: the first one creates it
	seedConnectTopics(t, cl, cfg)
	cases := append(crashCases(suffix), offsetsOnlyCases(point, suffix)...)
	for _, cc := range cases {
		seedCrashCase(t, cl, cfg, cc)
	}
	configs, offsets := cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic)
	before := map[string]connectorState{}
	for _, cc := range cases {
		before[cc.name] = stateOf(t, cl, cfg, cc.name, configs, offsets)
	}
	ids := map[string]crashCase{}
	for _, cc := range cases {
		ids[cl.publish(cc.body(), events.RequestOptions{DryRun: cc.dry})] = cc
	}

	onceDir := t.TempDir()
	var outputs []*lockedBuffer
	t.Cleanup(func() {
		if t.Failed() {
			for i, o := range outputs {
				t.Logf("agent run %d:\n%s", i, o)
			}
		}
	})
	kills := 0
	deadline := time.Now().Add(3 * time.Minute)
	for run := 0; run <= len(cases) && time.Now().Before(deadline); run++ {
		p := startOnceProcess(t, cfg, point, onceDir)
		outputs = append(outputs, p.out)
		done := p.exited()
		stopped := false
		for !stopped {
			select {
			case <-done:
				require.Equal(t, 137, p.cmd.ProcessState.ExitCode(), "the fault hook should have stopped the process; output:\n%s", p.out)
				kills++
				dropKilled(t, cfg)
				stopped = true
			case <-time.After(100 * time.Millisecond):
				if len(cl.allResults()) < len(cases) {
					continue
				}
				// Every request has its result and nothing stopped the agent at the point
				// meanwhile: let it sweep what the last stop left (an intent and claim whose
				// result is out), then stop it.
				waitNoIntents(t, cl, cfg)
				if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					require.ErrorIs(t, err, os.ErrProcessDone)
				}
				<-done
				stopped = true
				if p.cmd.ProcessState.ExitCode() == 137 {
					// The hook stopped it after the last result went out (after:publish):
					// the next run sweeps what it left.
					kills++
					dropKilled(t, cfg)
					continue
				}
				require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "graceful shutdown; output:\n%s", p.out)
				run = len(cases) + 1
			}
		}
	}
	require.NotZero(t, kills, "no request reached %s", point)
	t.Logf("%s: %d stops", point, kills)

	results := cl.allResults()
	require.Len(t, results, len(cases), "one result per request")
	configs, offsets = cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic)
	for _, r := range results {
		cc, ok := ids[r.Data.RequestID]
		require.True(t, ok, "a result for an unknown request %s", r.Data.RequestID)
		delete(ids, r.Data.RequestID)
		after := stateOf(t, cl, cfg, cc.name, configs, offsets)
		if cc.existing {
			require.Equal(t, events.TypeCreateFailed, r.Type, cc.name)
			require.Equal(t, 409, r.Data.ErrorCode, "%s: %s", cc.name, r.Data.Message)
			require.Equal(t, before[cc.name], after, "%s existed before its request and must be untouched", cc.name)
			continue
		}
		want := before[cc.name]
		if cc.dry {
			require.Equal(t, events.TypeCreatePlanned, r.Type, "%s: %s", cc.name, r.Data.Message)
			require.Equal(t, want, after, "%s: a dry run writes nothing", cc.name)
			continue
		}
		require.Equal(t, events.TypeCreateSucceeded, r.Type, "%s: %s", cc.name, r.Data.Message)
		if cc.offsetsOnly {
			require.Equal(t, events.CreateOffsetsOnly, r.Data.Created, cc.name)
			require.Equal(t, want.Config, after.Config, "%s: offsets only, no config record written or removed", cc.name)
		} else {
			require.Equal(t, `{"state":"STARTED","state.v2":"STARTED"}`, after.Config["target-state-"+cc.name], cc.name)
			require.Contains(t, after.Config, "connector-"+cc.name)
		}
		switch {
		case !cc.offsets && cc.sink:
			require.Equal(t, want.Group, after.Group, "%s: a request without offsets leaves the group alone", cc.name)
		case !cc.offsets:
			require.Equal(t, want.Offsets, after.Offsets, "%s: a request without offsets leaves the offsets alone", cc.name)
		case cc.sink:
			require.Equal(t, map[string]int64{"in/0": 5, "in/1": 6}, cl.groupOffsets("connect-"+cc.name), cc.name)
		default:
			require.Equal(t, map[string]string{
				fmt.Sprintf(`[%q,{"filename":"f"}]`, cc.name): `{"position":100}`,
				fmt.Sprintf(`[%q,{"filename":"g"}]`, cc.name): `{"position":101}`,
			}, values(after.Offsets), cc.name)
		}
		// The audit record of the result is the state before the request, not what a stop
		// left.
		if cc.offsets {
			require.Len(t, r.Data.PreviousOffsets.Offsets, 2, cc.name)
		}
	}
	require.Empty(t, ids, "requests without a result")
	require.Empty(t, cl.live(cfg.IntentTopic), "no intent or claim left behind")
}

func values(m map[string]liveRecord) map[string]string {
	out := map[string]string{}
	for k, r := range m {
		out[k] = r.Value
	}
	return out
}

// waitNoIntents waits a while for the intent topic to hold no live record.
func waitNoIntents(t *testing.T, cl *client, cfg agent.Config) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(cl.live(cfg.IntentTopic)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}
