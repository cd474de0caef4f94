package migrate

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
)

// A source with exactly.once.source.support=enabled writes its topic in transactions, each
// ended by a marker that takes an offset and that no consumer is handed. A Connect sink
// commits the offset after the last record it delivered, which is the last marker's offset:
// one below the end of the topic. Its lag counts committed records only, up to the last
// stable offset; a transaction still open keeps the sink waiting until it commits or aborts.
func TestSinkFollowsTransactionalSource(t *testing.T) {
	type step struct {
		records int
		commit  bool // commit, else abort
	}
	tests := []struct {
		name string
		txns []step
		// committed is where A's sink stands when the run starts; caughtUp what it commits
		// after its source stopped (-1: nothing more).
		committed, caughtUp int64
		// open leaves a transaction open when the run starts, ended (open.commit) after
		// openFor; the sink then commits openCaughtUp when it commits.
		open         *step
		openFor      time.Duration
		openCaughtUp int64
		timeout      time.Duration
		skipped      string
	}{
		// 0-2, marker 3; 4-5 aborted, marker 6; 7-8, marker 9: end 10.
		{name: "delivered up to the last marker", txns: []step{{3, true}, {2, false}, {2, true}}, committed: 9, caughtUp: -1, timeout: 10 * time.Second},
		{name: "catches up to the last marker", txns: []step{{3, true}, {2, false}, {2, true}}, committed: 3, caughtUp: 9, timeout: 10 * time.Second},
		{name: "only aborted records left", txns: []step{{3, true}, {2, false}}, committed: 3, caughtUp: -1, timeout: 10 * time.Second},
		{name: "records left: it stays on A", txns: []step{{3, true}, {2, true}}, committed: 3, caughtUp: -1, timeout: 2 * time.Second,
			skipped: `stop on A: not stopped: group "connect-sink" did not consume all its sources wrote on A within the run's Timeout: lag 4 (T-0: 4)`},
		{name: "open transaction aborted", txns: []step{{3, true}}, committed: 3, caughtUp: -1, open: &step{2, false}, openFor: time.Second, timeout: 20 * time.Second},
		{name: "open transaction committed", txns: []step{{3, true}}, committed: 3, caughtUp: -1, open: &step{2, true}, openFor: time.Second, openCaughtUp: 6, timeout: 20 * time.Second},
		{name: "open transaction never ends", txns: []step{{3, true}}, committed: 3, caughtUp: -1, open: &step{2, true}, timeout: 2 * time.Second,
			skipped: `stop on A: not stopped: group "connect-sink" did not consume all its sources wrote on A within the run's Timeout: lag 3 (T-0: a transaction open from offset 4, log end 6)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			brokersA, clA := followCluster(t, ctx, 0, true)
			_, err := clA.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "T", NumPartitions: 1, ReplicationFactor: 1}}})
			require.NoError(t, err)
			txn, err := kgo.NewClient(kgo.SeedBrokers(brokersA...), kgo.DefaultProduceTopic("T"), kgo.TransactionalID("eos-src"))
			require.NoError(t, err)
			defer txn.Close()
			write := func(s step) {
				require.NoError(t, txn.BeginTransaction())
				for range s.records {
					require.NoError(t, txn.ProduceSync(ctx, &kgo.Record{Value: []byte("r")}).FirstErr())
				}
			}
			end := func(commit bool) {
				require.NoError(t, txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
			}
			for _, s := range tt.txns {
				write(s)
				end(s.commit)
			}
			if tt.open != nil {
				write(*tt.open)
			}
			brokersB, _ := followCluster(t, ctx, 2, false)
			pair := newFollowPair(t, ctx, clA)
			require.NoError(t, kafkaio.CommitGroupOffsets(ctx, clA, "connect-sink", []kafkaio.GroupOffset{{Topic: "T", Offset: tt.committed}}))
			settled := make(chan time.Time, 1)
			go func() {
				<-pair.srcStopped
				if tt.caughtUp >= 0 {
					time.Sleep(300 * time.Millisecond)
					_ = kafkaio.CommitGroupOffsets(ctx, clA, "connect-sink", []kafkaio.GroupOffset{{Topic: "T", Offset: tt.caughtUp}})
				}
				if tt.open != nil && tt.openFor > 0 {
					time.Sleep(tt.openFor)
					_ = txn.EndTransaction(ctx, kgo.TransactionEndTry(tt.open.commit))
					if tt.openCaughtUp > 0 {
						_ = kafkaio.CommitGroupOffsets(ctx, clA, "connect-sink", []kafkaio.GroupOffset{{Topic: "T", Offset: tt.openCaughtUp}})
					}
				}
				settled <- time.Now()
			}()
			rep := pair.export(t, ctx, brokersA, brokersB, tt.timeout)
			done := time.Now()
			var sink *apply.Entry
			for _, e := range rep.Connectors {
				if e.Name == "sink" {
					sink = e
				}
			}
			require.NotNil(t, sink)
			if tt.skipped != "" {
				require.Equal(t, apply.OutcomeSkipped, sink.Outcome)
				require.Equal(t, tt.skipped, sink.Message.String())
				return
			}
			require.Equal(t, apply.OutcomePlanned, sink.Outcome, sink.Message)
			require.True(t, done.After(<-settled), "the run waited until A's sink had consumed every committed record")
			pair.fc.mu.Lock()
			require.Equal(t, []string{"src", "sink"}, pair.fc.stops)
			pair.fc.mu.Unlock()
		})
	}
}
