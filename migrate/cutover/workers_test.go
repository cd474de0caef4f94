package cutover

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// The helpers below are those of the root package's tests of the stop without A's REST API.

// connectBytes writes Connect's worker group protocol for the tests (offsetstore decodes it,
// against bytes Connect's own classes made: its TestWorkerGroupGoldens).
type connectBytes []byte

func (b connectBytes) i16(v int16) connectBytes { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func (b connectBytes) i32(v int32) connectBytes { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func (b connectBytes) i64(v int64) connectBytes { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func (b connectBytes) str(s string) connectBytes {
	return append(b.i16(int16(len(s))), s...)
}

// held is a connector's entry of an assignment: the connector instance (-1) and tasks.
type held struct {
	connector string
	tasks     []int32
}

func (b connectBytes) entries(hs []held) connectBytes {
	b = b.i32(int32(len(hs)))
	for _, h := range hs {
		b = b.str(h.connector).i32(int32(len(h.tasks)))
		for _, t := range h.tasks {
			b = b.i32(t)
		}
	}
	return b
}

// sessionedAssignment is an assignment of the "sessioned" protocol (version 2).
func sessionedAssignment(configOffset int64, delay int32, assigned ...held) []byte {
	return connectBytes{}.i16(2).i16(0).str("connect-1-leader").str("http://leader:8083/").i64(configOffset).
		entries(assigned).entries(nil).i32(delay)
}

// sessionedMetadata is a worker's metadata of the "sessioned" protocol, holding allocation.
func sessionedMetadata(url string, configOffset int64, allocation []byte) []byte {
	b := connectBytes{}.i16(2).str(url).i64(configOffset)
	if allocation == nil {
		return b.i32(-1)
	}
	return append(b.i32(int32(len(allocation))), allocation...)
}

// deadURL is a URL nothing answers at: a port that was listening and is closed.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

// workersCluster is A's Kafka cluster on kfake: its config topic holds connector "mdb-cdc"
// (a source) at offset 0, then fill more records, so that A's config topic ends at 1+fill.
func workersCluster(t *testing.T, fill int) []string {
	t.Helper()
	brokers := startKfake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &kafka.Transport{MetadataTTL: time.Second}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, cl, "connect-configs", "connect-offsets", true))
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Transport: tr, BatchTimeout: time.Millisecond}
	defer w.Close()
	msgs := []kafka.Message{{Topic: "connect-configs", Key: []byte("connector-mdb-cdc"),
		Value: []byte(`{"properties":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"in.txt","topic":"t","name":"mdb-cdc"}}`)}}
	for i := range fill {
		msgs = append(msgs, kafka.Message{Topic: "connect-configs", Key: []byte(fmt.Sprintf("target-state-other-%d", i)),
			Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`)})
	}
	require.NoError(t, w.WriteMessages(ctx, msgs...))
	return brokers
}

func jsonvalueMap(t *testing.T, s string) jsonvalue.Map {
	t.Helper()
	m, err := jsonvalue.NewScanner([]byte(s)).Object()
	require.NoError(t, err)
	return m
}

// The verification asks A's Kafka cluster again for a connector stopped on A without A's REST
// API: a worker of A holding it by then runs it again, and A's later records are no evidence
// (the record track is inert, saying why); so when A's cluster cannot be asked, or is another.
func TestVerificationChecksWorkersOfAAgain(t *testing.T) {
	brokers := workersCluster(t, 50)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clusterA, err := kafkaio.ClusterID(ctx, &kafka.Client{Addr: kafka.TCP(brokers...)})
	require.NoError(t, err)
	entry := func(w *WorkersCheck) *Connector {
		return &Connector{Name: "mdb-cdc", TargetName: "mdb-cdc", Type: "source", Class: "io.debezium.connector.mariadb.MariaDbConnector",
			TopicPrefix: "shop", BornAfter: time.Now(), StoppedOnA: true, StoppedOnABy: "no live worker of A holds it (...)", WorkersOfA: w,
			Partitions: []*Partition{{Placed: jsonvalueMap(t, `{"file":"bin.000001","pos":4}`)}}}
	}
	check := func(w *WorkersCheck) *Connector {
		c := &Cutover{Connectors: []*Connector{entry(w)}}
		c.checkWorkersOfA(ctx, VerifyOptions{}, "another-cluster")
		return c.Connectors[0]
	}
	inert := func(cc *Connector) string {
		r := newRecordTrack(connectors.Builtin(), cc, &sourceTrack{cc: cc, p: cc.Partitions[0]})
		require.NotNil(t, r, "a Debezium MariaDB source has a record track")
		return r.inert.String()
	}

	cc := check(&WorkersCheck{Brokers: brokers, ClusterID: clusterA, ConfigTopic: "connect-configs", RecordAt: 0})
	require.False(t, cc.WorkersOfA.Held, cc.WorkersOfA.Checked)
	require.Contains(t, cc.WorkersOfA.Checked.String(), "checked again at the verification: no live worker of A holds it")
	require.Empty(t, inert(cc), "the records are evidence")

	kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
		Metadata: sessionedMetadata("http://w1:8083/", 45, nil), Assignment: sessionedAssignment(45, 0, held{"mdb-cdc", []int32{-1, 0}})})
	cc = check(&WorkersCheck{Brokers: brokers, ClusterID: clusterA, ConfigTopic: "connect-configs", RecordAt: 0})
	require.True(t, cc.WorkersOfA.Held)
	require.Contains(t, cc.WorkersOfA.Checked.String(), `A runs it: member "`)
	require.Contains(t, inert(cc), "the records on B are no evidence: checked again at the verification: A runs it")

	cc = check(&WorkersCheck{Brokers: brokers, ClusterID: "not-" + clusterA, ConfigTopic: "connect-configs", RecordAt: 0})
	require.True(t, cc.WorkersOfA.Held)
	require.Contains(t, cc.WorkersOfA.Checked.String(), "whether a worker of A holds the connector again is not known")

	cc = check(&WorkersCheck{Brokers: []string{deadURL(t)[len("http://"):]}, ClusterID: clusterA, ConfigTopic: "connect-configs", RecordAt: 0})
	require.True(t, cc.WorkersOfA.Held)
	require.Contains(t, cc.WorkersOfA.Checked.String(), "could not be asked")
}
