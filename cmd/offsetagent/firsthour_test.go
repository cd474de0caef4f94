package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// blackhole listens on loopback and accepts connections that it never answers (a broker
// address behind a firewall that drops packets looks the same to a client: no answer).
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// refused is a loopback address where nothing listens.
func refused(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// cli runs the command line in-process and returns its status, stdout and stderr.
func cli(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// A broker address that accepts and never answers: the command says at once what it waits
// for and ends after --connect-timeout with a line naming the cluster, the address and the
// cause (it used to wait about two minutes in silence and end in "unexpected EOF").
func TestConnectTimeoutNamesClusterAddressAndCause(t *testing.T) {
	hole := blackhole(t)
	start := time.Now()
	code, out, stderr := cli("migrate", "--from-brokers", hole, "--to-brokers", hole, "--connect-timeout", "1s")
	took := time.Since(start)
	require.Equal(t, 2, code, stderr)
	require.Empty(t, out)
	require.Less(t, took, 10*time.Second, "bounded by --connect-timeout")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Equal(t, "connecting to A's Kafka cluster at "+hole+" (--from-brokers; waiting up to 1s, --connect-timeout)", lines[0])
	require.Equal(t, "connecting to B's Kafka cluster at "+hole+" (--to-brokers; waiting up to 1s, --connect-timeout)", lines[1])
	require.Equal(t, "offsetagent migrate: A's Kafka cluster (--from-brokers) is unreachable: "+hole+
		": no answer within 1s (--connect-timeout): nothing listens there, or something that is not a Kafka broker, or a firewall drops the packets", lines[2])
	require.Contains(t, lines[3], "B's Kafka cluster (--to-brokers) is unreachable: "+hole+": no answer within 1s")

	// export, a refused address next to the black hole: each address with its own cause.
	closed := refused(t)
	code, _, stderr = cli("export", "--from-brokers", hole+","+closed, "--connect-timeout", "500ms")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "offsetagent export: A's Kafka cluster (--from-brokers) is unreachable: ")
	require.Contains(t, stderr, hole+": no answer within 500ms")
	require.Contains(t, stderr, closed+": dial tcp "+closed+": connect: connection refused")

	code, _, stderr = cli("export", "--from-brokers", "127.0.0.1:1", "--connect-timeout", "0s")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--connect-timeout 0s: must be positive")
}

// offsets and publish with no broker name the broker and the cause (offsets used to say "log
// is not running").
func TestClientCommandsWithoutBroker(t *testing.T) {
	closed := refused(t)
	t.Setenv("OFFSETAGENT_BROKERS", closed)
	code, out, stderr := cli("offsets", "--connect-timeout", "2s", "file-src-1")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "offsetagent offsets: the Kafka cluster (OFFSETAGENT_BROKERS) is unreachable: "+closed+": dial tcp "+closed+": connect: connection refused\n", stderr)
	require.NotContains(t, stderr, "log is not running")

	hole := blackhole(t)
	t.Setenv("OFFSETAGENT_BROKERS", hole)
	start := time.Now()
	code, _, stderr = cli("publish", "--connect-timeout", "1s", "-")
	require.Equal(t, 1, code)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Contains(t, stderr, "connecting to the Kafka cluster at "+hole+" (OFFSETAGENT_BROKERS; waiting up to 1s, --connect-timeout)\n",
		"said while waiting, past the first half second")
	require.Contains(t, stderr, "offsetagent publish: the Kafka cluster (OFFSETAGENT_BROKERS) is unreachable: "+hole+": no answer within 1s")
}

// migrate checks B's agents before publishing: none on the request topic is refused (or,
// with --allow-no-agent, published and failed at the deadline), and agents that write other
// Connect topics than B's are refused with their names.
func TestMigrateChecksBsAgents(t *testing.T) {
	a := startEmbeddedAgent(t) // A: one connector, its agent consumes A's request topic
	var out bytes.Buffer
	for attempt := 0; attempt < 50; attempt++ {
		out.Reset()
		if run([]string{"publish", "--wait", "--timeout", "30s", "-"}, strings.NewReader(demoRequest), &out, &bytes.Buffer{}) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Contains(t, out.String(), "create.succeeded")

	// B: another Kafka cluster whose agent made its topics (the request topic too) and stopped.
	b, err := startEmbedded("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(b.Close)
	t.Setenv("OFFSETAGENT_BROKERS", b.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- runAgentForTest(ctx) }()
	require.Eventually(t, func() bool {
		code, _, _ := cli("offsets", "x")
		return code == 0
	}, 20*time.Second, 100*time.Millisecond, "B's agent made its topics")
	cancel()
	<-done

	code, out2, stderr := cli("migrate", "--from-brokers", a, "--to-brokers", b.Addr())
	require.Equal(t, 2, code, stderr)
	require.Empty(t, out2, "nothing published")
	require.Contains(t, stderr, `no agent consumes B's request topic "connect-offset-requests" now (no consumer group on B has a member subscribed to it): `+
		"start one against B (OFFSETAGENT_BROKERS="+b.Addr()+", OFFSETAGENT_REQUEST_TOPIC=connect-offset-requests")
	require.Contains(t, stderr, "--allow-no-agent publishes anyway")

	code, out2, stderr = cli("migrate", "--from-brokers", a, "--to-brokers", b.Addr(), "--allow-no-agent", "--timeout", "8s", "--grace", "100ms")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, `level=WARN msg="no agent consumes B's request topic`)
	require.Regexp(t, `file-src-1\s+file-src-1\s+source\s+1\s+failed\s+await_result`, out2)

	// B on A's Kafka cluster with other Connect topics (made by an agent that consumed another
	// request topic and stopped): the default request topic reaches A's agent, which writes A's
	// Connect topics. Refused, naming them.
	t.Setenv("OFFSETAGENT_BROKERS", a)
	t.Setenv("OFFSETAGENT_CONFIG_TOPIC", "b-configs")
	t.Setenv("OFFSETAGENT_OFFSETS_TOPIC", "b-offsets")
	t.Setenv("OFFSETAGENT_REQUEST_TOPIC", "b-requests")
	t.Setenv("OFFSETAGENT_RESULT_TOPIC", "b-results")
	t.Setenv("OFFSETAGENT_GROUP_ID", "offsetagent-b")
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- runAgentForTest(ctx) }()
	require.Eventually(t, func() bool {
		code, _, _ := cli("offsets", "x")
		return code == 0
	}, 20*time.Second, 100*time.Millisecond, "the other agent made its topics")
	cancel()
	<-done
	for _, k := range []string{"CONFIG_TOPIC", "OFFSETS_TOPIC", "REQUEST_TOPIC", "RESULT_TOPIC", "GROUP_ID"} {
		require.NoError(t, os.Unsetenv("OFFSETAGENT_"+k)) // t.Setenv above restores it after the test
	}
	code, out2, stderr = cli("migrate", "--from-brokers", a, "--to-brokers", a, "--to-config-topic", "b-configs", "--to-offsets-topic", "b-offsets")
	require.Equal(t, 2, code, stderr)
	require.Empty(t, out2)
	require.Contains(t, stderr, `the agents consuming B's request topic "connect-offset-requests" serve another Connect cluster `+
		`(group "offsetagent" writes config topic "connect-configs" and offsets topic "connect-offsets"), not B's config topic "b-configs" `+
		`and offsets topic "b-offsets": give --request-topic and --result-topic of the agents running for B's Connect cluster`)
}

// make demo-migrate: export, a selection that matches nothing, the dry run, the migration with
// --stop-source and its re-run, as a user sees them, what is on B, then the rollback (a dry run
// and --execute) that brings B's progress back to A; in seconds.
func TestDemoMigrate(t *testing.T) {
	var out, errOut bytes.Buffer
	start := time.Now()
	require.NoError(t, demoMigrate(context.Background(), &out, &errOut), "%s\n%s", out.String(), errOut.String())
	t.Logf("demo-migrate took %s", time.Since(start))
	s := out.String()
	for _, want := range []string{
		"   orders-sink  sink, RUNNING, 2 offsets\n",
		"   legacy-src   source, STOPPED, 0 offsets\n",
		"4 connectors: 0 succeeded, 4 planned, 0 failed, 0 skipped\n$ cat bodies.jsonl\n",
		`{"name":"orders-src","config":{"connector.class":"FileStreamSource","file":"orders.txt","name":"orders-src","tasks.max":"1","topic":"orders"},"initial_state":"PAUSED","initial_offsets":[{"partition":{"filename":"orders.txt"},"offset":{"position":4096}}]}`,
		"no connector of A matches the selection (--include, --exclude); A has 4: file-src-1, legacy-src, orders-sink, orders-src\n",
		`{"name":"orders-sink","target_name":"orders-sink","plan":{`,
		"3 connectors: 3 succeeded, 0 planned, 0 failed, 0 skipped\nwarning: file-src-1, orders-sink, orders-src: plugin: not checked whether B's Connect has the connector's plugin",
		"\n\n== again",
		"  key:   [\"orders-src\",{\"filename\":\"orders.txt\"}]\n  value: {\"position\":4096}\n",
		"  orders partition 0: offset 120\n  orders partition 1: offset 75\n",
		"3 connectors: 0 rolled back, 3 would roll back, 0 refused, 0 failed, 0 kept on B; partitions: 4 carried, 0 not carried, 0 skip (a dry run",
		"3 connectors: 3 rolled back, 0 would roll back, 0 refused, 0 failed, 0 kept on B; partitions: 4 carried, 0 not carried, 0 skip\n",
		// A at B's progress, in its state before the move; legacy-src never left.
		"   file-src-1   RUNNING  {\"filename\":\"test.txt\"} {\"position\":55}\n",
		"   legacy-src   STOPPED  no offsets\n",
		"   orders-sink  RUNNING  {\"kafka_partition\":0,\"kafka_topic\":\"orders\"} {\"kafka_offset\":160}, {\"kafka_partition\":1,\"kafka_topic\":\"orders\"} {\"kafka_offset\":90}\n",
		"   orders-src   PAUSED   {\"filename\":\"orders.txt\"} {\"position\":4096}\n",
	} {
		require.Contains(t, s, want)
	}
	require.Equal(t, 2, strings.Count(s, "3 connectors: 3 succeeded"), "the migration and its re-run")
	require.Equal(t, 1, strings.Count(s, "  key:   connector-orders-sink\n"), "the re-run wrote nothing twice")
	require.NotContains(t, s, "key:   connector-legacy-src", "a STOPPED connector whose state before is unknown is not moved with --stop-source")
}
