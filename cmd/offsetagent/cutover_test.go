package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A run's exit status is the worse of its parts: a failure (1) or bad flags (2) over a
// replay (4), a replay over success (0).
func TestWorseExit(t *testing.T) {
	tests := []struct {
		name       string
		a, b, want int
	}{
		{name: "both fine", a: 0, b: 0, want: 0},
		{name: "a replay over success", a: 0, b: exitReplay, want: exitReplay},
		{name: "a failed connector over a replay", a: 1, b: exitReplay, want: 1},
		{name: "a mismatch over success", a: 0, b: 1, want: 1},
		{name: "a replay, then a mismatch", a: exitReplay, b: 1, want: 1},
		{name: "bad flags over all", a: 2, b: exitReplay, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, worseExit(tt.a, tt.b))
		})
	}
}

// migrate --verify's exit status says what the cutover is: 0 verified, 1 a mismatch, 4 a
// replay (B continues from A's last committed offset and produces again what A produced past
// it), each with its summary line.
func TestVerifyExitStatus(t *testing.T) {
	const placed = `{"lsn_proc":1000,"lsn_commit":1000,"lsn":1000,"txId":100,"ts_usec":1}`
	event := func(lsn int) []byte {
		return fmt.Appendf(nil, `{"before":null,"after":{"id":%d},"source":{"connector":"postgresql","name":"shop","snapshot":"false","txId":%d,"lsn":%d},"op":"c"}`,
			lsn, lsn/10, lsn)
	}
	tests := []struct {
		name     string
		a, b     []int // the lsns of A's records (before the birth on B) and B's
		furthest string
		code     int
		summary  string
		listed   string
	}{
		{name: "verified", a: []int{900, 1000}, b: []int{1100}, code: 0, summary: "1 verified, 0 waiting, 0 mismatch, 0 unordered, 0 replay"},
		{name: "replay", a: []int{1000, 1050, 1080}, b: []int{1050}, code: exitReplay,
			summary: "0 verified, 0 waiting, 0 mismatch, 0 unordered, 1 replay", listed: `replay: pg-b {"server":"shop"}: B produces again the 2 records A produced past its last committed offset, from {"lsn":1050}`},
		{name: "set back", a: []int{1000, 1050}, b: []int{1050}, furthest: `"furthest_on_a":{"lsn":1050,"txId":105},`, code: 1,
			summary: "0 verified, 0 waiting, 1 mismatch, 0 unordered, 0 replay", listed: `mismatch: pg-b {"server":"shop"}: A's offset was set back`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := startEmbedded("127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(b.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			born := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
			w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
			defer w.Close()
			part := jsonvalue.Map{{Key: "server", Value: "shop"}}
			msgs := []kafka.Message{{Topic: "connect-offsets", Key: offsetstore.AppendKey(nil, "pg-b", offsetstore.JavaHashMapOrder(part)), Value: []byte(placed)}}
			for i, lsn := range tt.a {
				msgs = append(msgs, kafka.Message{Topic: "shop.public.orders", Value: event(lsn), Time: born.Add(-time.Duration(len(tt.a)-i) * time.Second)})
			}
			for i, lsn := range tt.b {
				msgs = append(msgs, kafka.Message{Topic: "shop.public.orders", Value: event(lsn), Time: born.Add(time.Duration(i+1) * time.Second)})
			}
			cl := &kafka.Client{Addr: kafka.TCP(b.Addr())}
			for _, topic := range []string{"connect-offsets", "shop.public.orders"} {
				require.NoError(t, kafkaio.EnsureTopic(ctx, cl, topic, 1, nil))
			}
			require.NoError(t, w.WriteMessages(ctx, msgs...))
			path := filepath.Join(t.TempDir(), "cutover.json")
			require.NoError(t, os.WriteFile(path, []byte(`{"migration_id":"m-1","offsets_topic":"connect-offsets","connectors":[
  {"name":"pg","target_name":"pg-b","type":"source","class":"io.debezium.connector.postgresql.PostgresConnector","offsets_topic":"connect-offsets",
   "topic_prefix":"shop","born_after":"`+born.Format(time.RFC3339Nano)+`","stopped_on_a":true,"history_on_a":"read","partitions":[
    {"partition":{"server":"shop"},"offset_on_a":`+placed+`,"offset_placed":`+placed+`,`+tt.furthest+`"verdict":"waiting","evidence":"offsets"}]}]}`), 0o600))
			var out, errOut bytes.Buffer
			code := run([]string{"migrate", "--verify", "--cutover-report", path, "--to-brokers", b.Addr(), "--verify-timeout", "0s"},
				strings.NewReader(""), &out, &errOut)
			require.Equal(t, tt.code, code, "%s\n%s", out.String(), errOut.String())
			require.Contains(t, out.String(), tt.summary)
			require.Contains(t, out.String(), tt.listed)
		})
	}
}

// The verification's refusals and details name the run's settings by type; this command
// spells them as its flags, on standard error and in the report it writes back.
func TestVerifySpellsSettingsAsFlags(t *testing.T) {
	const placed = `{"lsn_proc":1000,"lsn_commit":1000,"lsn":1000,"txId":100,"ts_usec":1}`
	b, err := startEmbedded("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr())}
	for _, topic := range []string{"connect-offsets", "shop.public.orders"} {
		require.NoError(t, kafkaio.EnsureTopic(ctx, cl, topic, 1, nil))
	}
	part := jsonvalue.Map{{Key: "server", Value: "shop"}}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets",
		Key: offsetstore.AppendKey(nil, "pg-b", offsetstore.JavaHashMapOrder(part)), Value: []byte(placed)}))
	report := func(t *testing.T, toCluster string) string {
		born := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
		path := filepath.Join(t.TempDir(), "cutover.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"migration_id":"m-1","offsets_topic":"connect-offsets",`+toCluster+`"connectors":[
  {"name":"pg","target_name":"pg-b","type":"source","class":"io.debezium.connector.postgresql.PostgresConnector","offsets_topic":"connect-offsets",
   "topic_prefix":"shop","born_after":"`+born.Format(time.RFC3339Nano)+`","history_on_a":"read","partitions":[
    {"partition":{"server":"shop"},"offset_on_a":`+placed+`,"offset_placed":`+placed+`,"verdict":"waiting","evidence":"offsets"}]}]}`), 0o600))
		return path
	}
	verify := func(path string) (int, string) {
		var out, errOut bytes.Buffer
		code := run([]string{"migrate", "--verify", "--cutover-report", path, "--to-brokers", b.Addr(), "--verify-timeout", "0s"},
			strings.NewReader(""), &out, &errOut)
		return code, errOut.String()
	}

	t.Run("a report of another cluster", func(t *testing.T) {
		code, stderr := verify(report(t, `"to_cluster_id":"another-cluster",`))
		require.Equal(t, 2, code, stderr)
		require.Contains(t, stderr, `the cutover report is of a migration into Kafka cluster "another-cluster"; --to-brokers reach cluster "`)
		require.NotContains(t, stderr, "ToBrokers")
	})
	t.Run("A not stopped: the records are no evidence", func(t *testing.T) {
		path := report(t, "")
		_, stderr := verify(path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(data), "A was not stopped before its offsets were read (migrate without --stop-source)", stderr)
		require.NotContains(t, string(data), "StopSource")
	})
}
