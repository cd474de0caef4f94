package migrate

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

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

// exportStopped runs export --stop-source of connector mdb-cdc with A's REST API at restURL.
func exportStopped(t *testing.T, brokers []string, restURL string) (*apply.Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Export(ctx, Options{
		Topics:     &source.TopicsSource{Brokers: brokers, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets"},
		ConnectURL: restURL, StopSource: true, StablePause: 50 * time.Millisecond, StopPoll: 20 * time.Millisecond,
		StopTimeout: 30 * time.Second, States: &source.StateStore{Brokers: brokers},
	})
}

// With --stop-source and A's REST API unreachable, a connector is stopped on A when the
// Connect groups on A's Kafka cluster show that no live worker of A holds it, and refused,
// untouched, when one does or when they cannot tell.
func TestStopWithoutRESTJudgedByConnectGroups(t *testing.T) {
	const end = 51 // A's config topic: the connector's record at 0, then 50 more
	// A worker of the "sessioned" protocol that holds the connector since an earlier round
	// (its metadata's allocation, bytes Connect's own classes made, offsetstore's goldens):
	// this round's assignment, a task only, adds nothing of it.
	goldenHolder, err := hex.DecodeString("0002000f687474703a2f2f77323a383038332f00000000000000290000004c00020000000c636f6e6e6563742d312d3961000f687474703a2f2f77323a383038332f00000000000000290000000100076d64622d63646300000002ffffffff000000000000000000000000")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		// group joins a Connect group "connect-a" to A's Kafka cluster (nil: none).
		group func(t *testing.T, brokers []string)
		// planned: the connector is taken for stopped; else the entry's message has want.
		planned bool
		want    []string
	}{
		{name: "no Connect group", planned: true, want: []string{"there is none"}},
		{name: "an empty group: its only worker left", planned: true, want: []string{`group "connect-a" has no member`},
			group: func(t *testing.T, brokers []string) {
				kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
					Metadata:   sessionedMetadata("http://w1:8083/", 40, nil),
					Assignment: sessionedAssignment(40, 0, held{"mdb-cdc", []int32{-1, 0}})}).Leave(t)
			}},
		{name: "a live member that holds it since an earlier round",
			want: []string{"A runs it", `member "`, `Connect group "connect-a"`, "worker http://w2:8083/", "connector mdb-cdc", "session.timeout.ms"},
			group: func(t *testing.T, brokers []string) {
				kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
					Metadata: goldenHolder, Assignment: sessionedAssignment(41, 0, held{"orders-src", []int32{0}})})
			}},
		{name: "a live member assigned one of its tasks", want: []string{"A runs it", "task mdb-cdc-2"},
			group: func(t *testing.T, brokers []string) {
				kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
					Metadata: sessionedMetadata("http://w1:8083/", 40, nil), Assignment: sessionedAssignment(45, 0, held{"mdb-cdc", []int32{2}})})
			}},
		{name: "an assignment that cannot be decoded", want: []string{"cannot decide whether a worker of A runs it", `Connect group "connect-a"`, "protocol version 7"},
			group: func(t *testing.T, brokers []string) {
				kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
					Metadata: sessionedMetadata("http://w1:8083/", 40, nil), Assignment: []byte{0, 7, 0, 0, 0, 0}})
			}},
		{name: "a reassignment of a departed worker's work scheduled", want: []string{"cannot decide", "5m0s", "scheduled.rebalance.max.delay.ms"},
			group: func(t *testing.T, brokers []string) {
				kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
					Metadata: sessionedMetadata("http://w1:8083/", 45, nil), Assignment: sessionedAssignment(45, 300000)})
			}},
		{name: "a leader that has not read the connector's record", want: []string{"cannot decide", "read its config topic to offset 0", "record at offset 0"},
			group: func(t *testing.T, brokers []string) {
				kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
					Metadata: sessionedMetadata("http://w1:8083/", 0, nil), Assignment: sessionedAssignment(0, 0)})
			}},
		{name: "a live group of A that has read past it and holds none of it", planned: true, want: []string{`group "connect-a"'s 1 members hold no part of it`},
			group: func(t *testing.T, brokers []string) {
				kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
					Metadata: sessionedMetadata("http://w1:8083/", 45, nil), Assignment: sessionedAssignment(45, 0, held{"orders-src", []int32{-1, 0}})})
			}},
		{name: "a group reading another config topic holds a connector of that name", planned: true,
			want: []string{`group "connect-a" reads another config topic than A's (its leader read to offset 900, A's ends at 51)`},
			group: func(t *testing.T, brokers []string) {
				kafkatest.JoinGroup(t, brokers, "connect-a", kafkatest.Member{ProtocolType: "connect", Protocol: "sessioned",
					Metadata: sessionedMetadata("http://b1:8083/", 900, nil), Assignment: sessionedAssignment(900, 0, held{"mdb-cdc", []int32{-1, 0}})})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokers := workersCluster(t, end-1)
			if tc.group != nil {
				tc.group(t, brokers)
			}
			rep, err := exportStopped(t, brokers, deadURL(t))
			require.NoError(t, err)
			require.Len(t, rep.Connectors, 1)
			e := rep.Connectors[0]
			if tc.planned {
				require.Equal(t, apply.OutcomePlanned, e.Outcome, e.Message)
				require.Len(t, e.Warnings, 1)
				require.Contains(t, e.Warnings[0].String(), "no live worker of A holds it")
				require.Contains(t, e.Warnings[0].String(), "do not restart A's workers with it")
				for _, w := range tc.want {
					require.Contains(t, e.Warnings[0].String(), w)
				}
				require.Contains(t, e.StoppedBy, "no live worker of A holds it")
				require.Equal(t, int64(0), e.RecordAt)
				return
			}
			require.Equal(t, apply.OutcomeSkipped, e.Outcome)
			require.Nil(t, e.Body)
			require.Contains(t, e.Message.String(), "stop on A: ")
			for _, w := range tc.want {
				require.Contains(t, e.Message.String(), w)
			}
		})
	}
}

// A REST API that answers, even with an error, is not unreachable: --stop-source stops through
// it or fails, and never judges by the groups instead.
func TestStopWithRESTAnsweringAnError(t *testing.T) {
	brokers := workersCluster(t, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error_code":500,"message":"boom"}`, http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	_, err := exportStopped(t, brokers, srv.URL)
	require.ErrorIs(t, err, fleet.ErrPrecheck)
	require.ErrorContains(t, err, "A's Connect REST API is unreachable")
	require.NotContains(t, err.Error(), "Connect groups")
	// Without A's brokers nothing can tell: refused, saying what would.
	_, err = Export(context.Background(), Options{ConnectURL: deadURL(t), StopSource: true, States: &source.StateStore{Brokers: brokers}})
	require.ErrorIs(t, err, fleet.ErrPrecheck)
	require.ErrorContains(t, err, "with FromBrokers, StopSource takes a connector for stopped on A")
}
