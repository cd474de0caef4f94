package kafkaio

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// A client's first requests wait until its transport knows the cluster's layout: kafka-go gives
// each metadata refresh the transport's MetadataTTL as its timeout, and a first answer later
// than that failed every request of the client until a refresh succeeded, however long the
// request's own bound. Only a timeout is waited out: a refused connection is the answer.
func TestNewClientWaitsForTheLayout(t *testing.T) {
	tests := []struct {
		name string
		// slowFirst delays the broker's first Metadata answer by this much.
		slowFirst time.Duration
		principal string
		closed    bool // the brokers' address refuses connections
		wantErr   string
	}{
		{name: "first metadata answer later than the TTL", slowFirst: 1500 * time.Millisecond},
		{name: "the same with a principal", slowFirst: 1500 * time.Millisecond, principal: "User:alice"},
		{name: "answers in time", slowFirst: 0},
		{name: "a refused connection fails at once", closed: true, wantErr: "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"),
				kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
			require.NoError(t, err)
			t.Cleanup(c.Close)
			var asked atomic.Int32
			c.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
				if asked.Add(1) == 1 && tt.slowFirst > 0 {
					c.SleepControl(func() { time.Sleep(tt.slowFirst) })
				}
				return nil, nil, false
			})
			brokers := c.ListenAddrs()
			if tt.closed {
				brokers = []string{kafkatest.ClosedAddr(t)}
			}
			// As offsetagent's transports: a metadata TTL of a second.
			tr := &kafka.Transport{MetadataTTL: time.Second}
			t.Cleanup(tr.CloseIdleConnections)
			ctx := testContext(t)
			n, err := PartitionCount(ctx, NewClient(Options{Brokers: brokers, Transport: tr, Principal: tt.principal}), "orders")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.NoError(t, ctx.Err(), "answered, not waited out until the context's end")
				return
			}
			require.NoError(t, err)
			require.Equal(t, 3, n)
			if tt.slowFirst > 0 {
				require.GreaterOrEqual(t, asked.Load(), int32(2), "the slow answer was given up on and asked again")
			}
		})
	}
}
