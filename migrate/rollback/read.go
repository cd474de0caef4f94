package rollback

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// stateRecord is the value of a record of the migration's state topic on B, as migrate's
// --stop-source writes it (key "<migration id>/<name on A>").
type stateRecord struct {
	MigrationID string `json:"migration_id"`
	Connector   string `json:"connector"`
	State       string `json:"state"`
}

// stateRecords are the state records of the state topic, by key; unread is set when the
// topic could not be read, or none was given, and says why.
type stateRecords struct {
	byKey  map[string]string
	unread string
}

// get is the state recorded for connector name (on A) of migration id.
func (s stateRecords) get(id, name string) (string, bool) {
	st, ok := s.byKey[id+"/"+name]
	return st, ok
}

// readStates reads the state topic to its end. A topic that does not exist holds no record
// (a migration without --stop-source never created it); it is never created here.
func readStates(ctx context.Context, opts kafkaio.Options, topic string, logger *slog.Logger) (stateRecords, error) {
	out := stateRecords{byKey: map[string]string{}}
	if topic == "" {
		out.unread = "no state topic given"
		return out, nil
	}
	cl := kafkaio.NewClient(opts)
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return out, fmt.Errorf("read metadata of state topic %q: %w", topic, err)
	}
	if len(md.Topics) == 0 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) == 0 {
		return out, nil
	}
	var mu sync.Mutex
	apply := func(msgs []kafka.Message) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if m.Value == nil {
				delete(out.byKey, string(m.Key))
				continue
			}
			var rec stateRecord
			if err := json.Unmarshal(m.Value, &rec); err != nil || !knownState(rec.State) {
				logger.Warn("skip unreadable migration state record", "topic", topic, "offset", m.Offset, "err", err)
				continue
			}
			out.byKey[string(m.Key)] = rec.State
		}
	}
	l, err := kafkaio.NewLog(opts, topic, apply)
	if err != nil {
		return out, fmt.Errorf("read state topic %q: %w", topic, err)
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- l.Run(lctx) }()
	err = l.WaitReady(ctx)
	cancel()
	<-done
	if err != nil {
		return out, fmt.Errorf("read state topic %q: %w", topic, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return out, nil
}

func knownState(s string) bool {
	return s == StateRunning || s == StatePaused || s == StateStopped
}

// logStarts reads the log start of partitions of topics on A, once per topic; a topic it cannot
// read is left out, with why.
type logStarts struct {
	cl     *kafka.Client
	mu     sync.Mutex
	starts map[string][]int64
	errs   map[string]error
}

func newLogStarts(opts kafkaio.Options) *logStarts {
	if len(opts.Brokers) == 0 {
		return nil
	}
	cl := kafkaio.NewClient(opts)
	cl.Timeout = 30 * time.Second
	return &logStarts{cl: cl, starts: map[string][]int64{}, errs: map[string]error{}}
}

// of is the log start of topic's partition on A.
func (l *logStarts) of(ctx context.Context, topic string, partition int32) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err, ok := l.errs[topic]; ok {
		return 0, err
	}
	starts, ok := l.starts[topic]
	if !ok {
		n, err := kafkaio.PartitionCount(ctx, l.cl, topic)
		if err == nil {
			starts, err = kafkaio.ListOffsets(ctx, l.cl, topic, n, kafka.FirstOffset)
		}
		if err != nil {
			err = fmt.Errorf("read the log start of topic %q on A: %w", topic, err)
			if ctx.Err() == nil {
				l.errs[topic] = err
			}
			return 0, err
		}
		l.starts[topic] = starts
	}
	if int(partition) >= len(starts) {
		return 0, fmt.Errorf("topic %q on A has %d partitions, not partition %d", topic, len(starts), partition)
	}
	return starts[partition], nil
}

// oneLine is s on one line, cut at n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
