package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// agentBuild is one flavour of cmd/offsetagent, built once per test run.
type agentBuild struct {
	once sync.Once
	path string
	err  error
}

var raceBuild, faultBuild, plainBuild agentBuild

// releaseBuild is what decides the packages the release build compiles (the Makefile's build
// target, the Dockerfile): cgo off and -trimpath; its -ldflags only change the link. The agents
// built here without the race detector take it too, as make test's run without the race detector
// and TestReleaseBuild do, so that all of them share one set of compiled packages: a first run on
// an empty Go build cache compiles the standard library and the dependencies once for all of
// them, not once more for each set of flags.
var releaseBuild = struct {
	env   []string
	flags []string
}{env: []string{"CGO_ENABLED=0"}, flags: []string{"-trimpath"}}

// binary builds cmd/offsetagent with the go build flags given (and env added to the test's
// environment), the first time it is asked.
func (b *agentBuild) binary(t *testing.T, env []string, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "offsetagent-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "offsetagent")
		args := append(append([]string{"build"}, flags...), "-o", b.path, "../cmd/offsetagent")
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", strings.Join(args[1:], " "), err, out)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// agentBinary is cmd/offsetagent with the race detector and the fault hook
// (OFFSETAGENT_FAULT_EXIT_AT) that production builds lack. It shares its compiled packages with
// the race detector's test binaries.
func agentBinary(t *testing.T) string {
	t.Helper()
	return raceBuild.binary(t, nil, "-race", "-tags", "faultinject")
}

// faultAgentBinary is cmd/offsetagent with the fault hook but without the race detector: the
// crash matrices (TestCrashAtEveryPoint, TestCrashKeepsExistingConnectors and the group
// restores) start hundreds of agent processes to prove what recovery leaves on the topics, and
// the race detector multiplied their CPU by five. TestChaos and TestConcurrentRequestsForOneConnector
// run the race detector's build through crashes and contention. Built as the release build is
// (releaseBuild) plus the tag: only package main differs.
func faultAgentBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv("OFFSETAGENT_CRASH_RACE") == "1" {
		return agentBinary(t)
	}
	return faultBuild.binary(t, releaseBuild.env, append([]string{"-tags", "faultinject"}, releaseBuild.flags...)...)
}

// plainAgentBinary is cmd/offsetagent as the release build makes it (releaseBuild, without the
// version stamped in): the race detector would multiply the memory a test measures.
func plainAgentBinary(t *testing.T) string {
	t.Helper()
	return plainBuild.binary(t, releaseBuild.env, releaseBuild.flags...)
}

// agentProcess is the real binary running `offsetagent run` against the test's broker.
type agentProcess struct {
	cmd  *exec.Cmd
	out  *lockedBuffer // written by os/exec's copying goroutine while a failure's message reads it
	once sync.Once
	done chan struct{}
}

// startAgentProcess starts cmd with its output in p.out; the test's cleanup kills it and
// waits for it.
func startAgentProcess(t *testing.T, cmd *exec.Cmd) *agentProcess {
	t.Helper()
	p := &agentProcess{cmd: cmd, out: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited() })
	return p
}

// exited is closed once the process has exited (cmd.ProcessState set). cmd.Wait is called
// once, here: a second Wait while the first is in flight (a test's wait timing out, then its
// cleanup) waits forever for output copiers the first one already took, and held the whole
// package until its timeout.
func (p *agentProcess) exited() <-chan struct{} {
	p.once.Do(func() {
		p.done = make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(p.done) }()
	})
	return p.done
}

func processEnv(cfg agent.Config, fault string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"OFFSETAGENT_BROKERS=" + strings.Join(cfg.Brokers, ","),
		"OFFSETAGENT_REQUEST_TOPIC=" + cfg.RequestTopic,
		"OFFSETAGENT_RESULT_TOPIC=" + cfg.ResultTopic,
		"OFFSETAGENT_INTENT_TOPIC=" + cfg.IntentTopic,
		"OFFSETAGENT_GROUP_ID=" + cfg.GroupID,
		"OFFSETAGENT_CONFIG_TOPIC=" + cfg.ConfigTopic,
		"OFFSETAGENT_OFFSETS_TOPIC=" + cfg.OffsetsTopic,
		"OFFSETAGENT_CREATE_CONNECT_TOPICS=true",
		"OFFSETAGENT_HTTP_ADDR=127.0.0.1:0",
		"OFFSETAGENT_SESSION_TIMEOUT=1s",
		"OFFSETAGENT_SHUTDOWN_TIMEOUT=5s",
		"OFFSETAGENT_LOG_FORMAT=text",
	}
	if fault != "" {
		env = append(env, "OFFSETAGENT_FAULT_EXIT_AT="+fault)
	}
	return env
}

func startProcess(t *testing.T, cfg agent.Config, fault string) *agentProcess {
	t.Helper()
	return startBinary(t, agentBinary(t), cfg, fault)
}

// startBinary runs `bin run` against the test's broker, stopping at the fault point fault.
func startBinary(t *testing.T, bin string, cfg agent.Config, fault string) *agentProcess {
	t.Helper()
	cmd := exec.Command(bin, "run")
	cmd.Env = processEnv(cfg, fault)
	return startAgentProcess(t, cmd)
}

// wait waits for the process to exit and returns its exit code.
func (p *agentProcess) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited():
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		t.Fatalf("agent did not exit within %s; output:\n%s", timeout, p.out)
		return -1
	}
}

// dropKilled removes the members of cfg's group once the test has seen its agent processes
// killed (exited, none running): the coordinator removes them as it does at the expiry of their
// sessions (kafkatest.RemoveMembers), and the next agent joins at once. Without it each restart
// of a crash test waited out the killed member's session (OFFSETAGENT_SESSION_TIMEOUT, 1 s),
// most of each run of the crash matrices.
func dropKilled(t *testing.T, cfg agent.Config) {
	t.Helper()
	kafkatest.RemoveMembers(t, cfg.Brokers, cfg.GroupID)
}

func crashCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Getenv("OFFSETAGENT_TEST_BROKERS") != "" || os.Getenv("OFFSETAGENT_TEST_DOCKER") == "1" {
		return startCluster(t)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &cluster{brokers: c.ListenAddrs(), fake: c}
}

// The process exits at every stage boundary and in the middle of multi-record writes (as a
// SIGKILL would stop it), is restarted, and the request still ends with exactly one result,
// no half-created connector, and the offsets the request asked for — with the previous ones
// gone exactly once.
func TestCrashAtEveryPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	points := []string{
		"before:validate_config", "after:validate_offsets", "before:wipe_offsets", "mid:wipe_offsets",
		"after:wipe_offsets", "mid:write_offsets", "after:write_offsets", "mid:write_config", "after:write_config",
	}
	c := crashCluster(t)
	for i, point := range points {
		t.Run(point, func(t *testing.T) {
			cfg := testConfig(c)
			cl := newClient(t, cfg)
			cl.createTopic(cfg.RequestTopic, 1)
			// Two previous offsets of the name, so the wipe and the write are multi-record.
			seedConnectTopics(t, cl, cfg)
			cl.produce(cfg.OffsetsTopic,
				kafka.Message{Key: []byte(`["mm2",{"cluster":"A","partition":0,"topic":"t"}]`), Value: []byte(`{"offset":1}`)},
				kafka.Message{Key: []byte(`["mm2",{"cluster":"A","partition":9,"topic":"t"}]`), Value: []byte(`{"offset":2}`)},
			)
			body := `{"name":"mm2","config":{"connector.class":"MirrorSourceConnector","source.cluster.alias":"A"},
			  "initial_offsets":[{"partition":{"cluster":"A","topic":"t","partition":0},"offset":{"offset":100}},
			                     {"partition":{"cluster":"A","topic":"t","partition":1},"offset":{"offset":101}}]}`
			id := cl.publish(body, events.RequestOptions{})

			p := startBinary(t, faultAgentBinary(t), cfg, point)
			code := p.wait(t, 60*time.Second)
			require.Equal(t, 137, code, "the fault hook should have stopped the process; output:\n%s", p.out)
			// The first point leaves the killed member to its session's expiry, as a crash in
			// production does: the next agent joins while it still holds the partitions.
			if i > 0 {
				dropKilled(t, cfg)
			}

			q := startBinary(t, faultAgentBinary(t), cfg, "")
			res := cl.waitResult(id, 60*time.Second)
			require.NoError(t, q.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 0, q.wait(t, 30*time.Second), "graceful shutdown; output:\n%s", q.out)

			require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
			require.Len(t, cl.allResults(), 1, "exactly one result")
			// The interrupted attempt was rolled back first, so the result's audit record is the
			// state before the request, not whatever the crash left.
			require.Equal(t, []string{
				`{"partition":{"cluster":"A","partition":0,"topic":"t"},"offset":{"offset":1}}`,
				`{"partition":{"cluster":"A","partition":9,"topic":"t"},"offset":{"offset":2}}`,
			}, offsetSet(t, res.Data.PreviousOffsets))
			require.Equal(t, map[string]liveRecord{
				`["mm2",{"cluster":"A","partition":0,"topic":"t"}]`: {Partition: partitionOf(`["mm2",{"cluster":"A","partition":0,"topic":"t"}]`), Value: `{"offset":100}`},
				`["mm2",{"cluster":"A","partition":1,"topic":"t"}]`: {Partition: partitionOf(`["mm2",{"cluster":"A","partition":1,"topic":"t"}]`), Value: `{"offset":101}`},
			}, cl.live(cfg.OffsetsTopic))
			live := cl.live(cfg.ConfigTopic)
			require.Contains(t, live, "connector-mm2")
			require.Equal(t, `{"state":"STARTED","state.v2":"STARTED"}`, live["target-state-mm2"].Value)
			require.Empty(t, cl.live(cfg.IntentTopic), "no intent left behind")
		})
	}
}

// seedConnectTopics creates Connect's topics as Connect would, before any agent runs.
func seedConnectTopics(t *testing.T, cl *client, cfg agent.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cl.kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: cfg.ConfigTopic, NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}},
		{Topic: cfg.OffsetsTopic, NumPartitions: 25, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}},
	}})
	require.NoError(t, err)
}
