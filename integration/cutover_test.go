package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// cutoverVerdicts maps "<connector on B> <partition>" to its verdict.
// mismatched names the connectors with a partition whose verdict is mismatch.
func mismatched(c *cutover.Cutover) []string {
	var out []string
	for _, cc := range c.Connectors {
		for _, p := range cc.Partitions {
			if p.Verdict == cutover.VerdictMismatch && !slices.Contains(out, cc.TargetName) {
				out = append(out, cc.TargetName)
			}
		}
	}
	return out
}

func cutoverVerdicts(c *cutover.Cutover) map[string]cutover.Verdict {
	out := map[string]cutover.Verdict{}
	for _, cc := range c.Connectors {
		for _, p := range cc.Partitions {
			b, _ := p.Partition.MarshalJSON()
			var m map[string]any // keys sorted
			_ = json.Unmarshal(b, &m)
			b, _ = json.Marshal(m)
			out[cc.TargetName+" "+string(b)] = p.Verdict
		}
	}
	return out
}

// TestMigrateVerifyCutover moves a FileStream source, a MirrorMaker 2 source, a Debezium MySQL
// source and a sink; then writes on B what Connect's workers would commit there: offsets after
// the placed ones, one MirrorMaker 2 offset before the placed one (as a wrong offset written on
// B would make the task produce), and sink group commits past, at and before the placed
// offsets. The migration's own verification finds every partition waiting (no traffic); the
// next finds each verified, waiting or a mismatch, also when it reads the cutover report back
// from its file.
func TestMigrateVerifyCutover(t *testing.T) {
	f := newFleet(t)
	f.seed(t)
	startAgent(t, f.cfgB, agent.Options{})
	opts := f.options(t, source.SelectionFlags{Include: []string{"file-src-1", "mm2-src", "dbz-mysql", "sink-1"}})
	opts.Verify, opts.VerifyPoll = 500*time.Millisecond, 100*time.Millisecond
	ctx := context.Background()
	rep, cut, err := migrate.Migrate(ctx, opts)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", outcomes(rep))
	require.NotNil(t, cut)
	require.Equal(t, rep.MigrationID, cut.MigrationID)
	require.False(t, cut.VerifyStarted.IsZero())
	require.Empty(t, cut.Error)
	want := map[string]cutover.Verdict{
		`file-src-1 {"filename":"file-src-1.txt"}`: cutover.VerdictWaiting,
		`dbz-mysql {"server":"dbserver1"}`:         cutover.VerdictWaiting,
	}
	for i, topic := range []string{"t0", "t1", "t0", "t1", "t0"} {
		want[`mm2-src {"cluster":"src","partition":`+strconv.Itoa(i)+`,"topic":"`+topic+`"}`] = cutover.VerdictWaiting
	}
	for p := range 3 {
		want[`sink-1 {"kafka_partition":`+strconv.Itoa(p)+`,"kafka_topic":"`+f.orders+`"}`] = cutover.VerdictWaiting
	}
	require.Equal(t, want, cutoverVerdicts(cut))
	for _, cc := range cut.Connectors {
		for _, p := range cc.Partitions {
			require.Equal(t, "as read", p.Translation, cc.Name)
			require.Equal(t, mustJSON(t, p.OnA), mustJSON(t, p.Placed), cc.Name)
		}
	}

	// What B's workers commit once the connectors run there.
	next := map[string]string{
		`["file-src-1",{"filename":"file-src-1.txt"}]`: `{"position":45}`,
		`["dbz-mysql",{"server":"dbserver1"}]`:         `{"ts_sec":1700000100,"file":"mysql-bin.000004","pos":4,"server_id":223344}`,
	}
	var msgs []kafka.Message
	for key, rec := range f.clB.live(f.cfgB.OffsetsTopic) {
		name, partition, ok := offsetstore.DecodeKey([]byte(key))
		require.True(t, ok)
		if name != "mm2-src" {
			continue
		}
		topic, _ := partition.Get("topic")
		part, _ := partition.Get("partition")
		switch {
		case topic == "t0" && fmt.Sprint(part) == "0":
			next[key] = `{"offset":1005}` // after the placed 1000
		case topic == "t1" && fmt.Sprint(part) == "1":
			next[key] = `{"offset":1001}` // before the placed 1007
		}
		require.Contains(t, rec.Value, `"offset":`)
	}
	require.Len(t, next, 4)
	for key, value := range next {
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: []byte(value)})
	}
	f.clB.produce(f.cfgB.OffsetsTopic, msgs...)
	commitGroup(t, f.clB, "connect-sink-1", map[int]int64{0: 15, 2: 25}, f.orders) // placed 10, 20, 30

	want[`file-src-1 {"filename":"file-src-1.txt"}`] = cutover.VerdictVerified
	want[`dbz-mysql {"server":"dbserver1"}`] = cutover.VerdictVerified
	want[`mm2-src {"cluster":"src","partition":0,"topic":"t0"}`] = cutover.VerdictVerified
	want[`mm2-src {"cluster":"src","partition":1,"topic":"t1"}`] = cutover.VerdictMismatch
	want[`sink-1 {"kafka_partition":0,"kafka_topic":"`+f.orders+`"}`] = cutover.VerdictVerified
	want[`sink-1 {"kafka_partition":2,"kafka_topic":"`+f.orders+`"}`] = cutover.VerdictMismatch

	// From the cutover report's file, as migrate --verify --cutover-report reads it.
	path := filepath.Join(t.TempDir(), "cutover.json")
	var buf bytes.Buffer
	require.NoError(t, cut.WriteJSON(&buf))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	again, err := cutover.Read(path)
	require.NoError(t, err)
	for name, c := range map[string]*cutover.Cutover{"in memory": cut, "from its file": again} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, cutover.Verify(ctx, c, cutover.VerifyOptions{Brokers: f.cfgB.Brokers,
				Timeout: 700 * time.Millisecond, Poll: 100 * time.Millisecond}))
			require.Equal(t, want, cutoverVerdicts(c))
			require.False(t, c.OK())
			require.Equal(t, map[cutover.Verdict]int{cutover.VerdictVerified: 4, cutover.VerdictWaiting: 4, cutover.VerdictMismatch: 2,
				cutover.VerdictUnordered: 0, cutover.VerdictReplay: 0}, c.Counts)
			for _, cc := range c.Connectors {
				for _, p := range cc.Partitions {
					if p.Verdict == cutover.VerdictMismatch {
						require.Regexp(t, `1001.*before|before the 30 placed`, p.Detail.String())
					}
				}
			}
			require.Contains(t, mismatched(c), "sink-1")
		})
	}

	// Placed again after a wipe (a tombstone, as B's agent writes before placing), then an
	// earlier offset written over it: the connector would resume there and produce again
	// what A had produced.
	for key := range next {
		if bytes.Contains([]byte(key), []byte("file-src-1")) {
			f.clB.produce(f.cfgB.OffsetsTopic, kafka.Message{Key: []byte(key)}, kafka.Message{Key: []byte(key), Value: []byte(`{"position":30}`)},
				kafka.Message{Key: []byte(key), Value: []byte(`{"position":12}`)}, kafka.Message{Key: []byte(key), Value: []byte(`{"position":30}`)})
		}
	}
	require.NoError(t, cutover.Verify(ctx, again, cutover.VerifyOptions{Brokers: f.cfgB.Brokers, Timeout: time.Second}))
	for _, cc := range again.Connectors {
		if cc.TargetName == "file-src-1" {
			require.Equal(t, cutover.VerdictMismatch, cc.Partitions[0].Verdict)
			require.Contains(t, cc.Partitions[0].Detail.String(), `B's first offset after the placed {"position":30} is {"position":12}: before it`)
		}
	}
}
