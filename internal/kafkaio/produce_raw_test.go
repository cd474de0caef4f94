package kafkaio

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// exchange is a connection that records what is written and answers with a canned response.
type exchange struct {
	written bytes.Buffer
	answer  *bytes.Reader
}

func (e *exchange) Write(p []byte) (int, error) { return e.written.Write(p) }
func (e *exchange) Read(p []byte) (int, error)  { return e.answer.Read(p) }

// The hand-written Produce framing is the request franz-go's kmsg writes, byte for byte, for
// record sets copied into the framing (small) and written on their own (large), over two
// topics; the answer is decoded per partition.
func TestRawProduceMatchesKmsg(t *testing.T) {
	small := func(b byte) []byte { return append(binary.BigEndian.AppendUint32(nil, 3), b, b, b) }
	large := append(binary.BigEndian.AppendUint32(nil, rawProduceInline+10), bytes.Repeat([]byte{'x'}, rawProduceInline+10)...)
	req := &rawProduce{clientID: "agent", acks: -1, timeoutMs: 30_000, parts: []rawProducePart{
		{topic: "a", partition: 0, set: small(1)},
		{topic: "a", partition: 2, set: large},
		{topic: "a", partition: 1, set: small(2)},
		{topic: "b", partition: 0, set: large},
	}}
	for _, version := range []int16{3, 7, 8, 11} {
		res := kmsg.NewProduceResponse()
		res.Version = min(version, maxProduceVersion)
		res.Topics = []kmsg.ProduceResponseTopic{{Topic: "a", Partitions: []kmsg.ProduceResponseTopicPartition{
			{Partition: 0, BaseOffset: 7}, {Partition: 2, ErrorCode: 87}}}}
		answer := binary.BigEndian.AppendUint32(nil, 1) // correlation id
		answer = res.AppendTo(answer)
		conn := &exchange{answer: bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, uint32(len(answer))), answer...))}
		require.True(t, req.Required(map[protocol.ApiKey]int16{protocol.Produce: version}))
		msg, err := req.RawExchange(conn)
		require.NoError(t, err, "v%d", version)
		got := msg.(*produceResult)
		require.Equal(t, int64(7), got.Topics[0].Partitions[0].BaseOffset)
		require.Equal(t, int16(87), got.Topics[0].Partitions[1].ErrorCode)

		want := kmsg.NewProduceRequest()
		want.Version, want.Acks, want.TimeoutMillis = min(version, maxProduceVersion), -1, 30_000
		for _, p := range req.parts {
			if len(want.Topics) == 0 || want.Topics[len(want.Topics)-1].Topic != p.topic {
				want.Topics = append(want.Topics, kmsg.ProduceRequestTopic{Topic: p.topic})
			}
			tp := &want.Topics[len(want.Topics)-1]
			tp.Partitions = append(tp.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p.partition, Records: p.set[4:]})
		}
		wantBytes := kmsg.NewRequestFormatter(kmsg.FormatterClientID("agent")).AppendRequest(nil, &want, 1)
		require.Equal(t, wantBytes, conn.written.Bytes(), "v%d", version)
	}

	// A broker without record batches (Produce v2 at most) is refused before anything is sent.
	req.Required(map[protocol.ApiKey]int16{protocol.Produce: 2})
	conn := &exchange{answer: bytes.NewReader(nil)}
	_, err := req.RawExchange(conn)
	require.ErrorContains(t, err, "v3 is needed")
	require.Zero(t, conn.written.Len())
}
