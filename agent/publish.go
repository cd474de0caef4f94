package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// defaultResultMaxBytes is the result topic's max.message.bytes when the broker does not say.
const defaultResultMaxBytes = 1 << 20

// recordOverhead is what a record batch of one record adds to its key, value and headers
// (the batch header, the record's varints), with room to spare: brokers compare the whole
// batch with max.message.bytes.
const recordOverhead = 512

// readResultMaxBytes reads the result topic's max.message.bytes, the bound every result is
// shortened to (defaultResultMaxBytes when it cannot be read).
func (a *Agent) readResultMaxBytes(ctx context.Context) {
	v, ok, err := kafkaio.TopicConfig(ctx, a.client, a.cfg.ResultTopic, "max.message.bytes")
	n, perr := strconv.Atoi(v)
	_, refused := kafkaio.AuthorizationCode(err)
	switch {
	case refused:
		// DescribeConfigs on the result topic is optional (docs/operations.md, Kafka ACLs).
		a.log.Info("results are bounded to 1 MiB: the result topic's max.message.bytes cannot be read without the optional DescribeConfigs ACL",
			"topic", a.cfg.ResultTopic, "err", err)
	case err != nil:
		a.log.Warn("read max.message.bytes of the result topic; assuming 1 MiB", "topic", a.cfg.ResultTopic, "err", err)
	case ok && perr == nil && n > 0:
		a.resultMaxBytes.Store(int64(n))
		return
	}
	a.resultMaxBytes.Store(defaultResultMaxBytes)
}

// publish writes the outcome's result event and waits for the broker's acknowledgement. A
// result that does not fit the result topic is shortened first (resultRecord). Transient
// errors are retried (produceResult). An error that says the broker refuses the record (too
// large, invalid, not authorised) is not the end of it either: after a refusal of its size a
// minimal result is tried at once; while the result is refused, it is counted in
// offsetagent_results_pending, logged, and tried again, the whole result first (a refusal
// that is not about size, an ACL say, may lift: the whole result then goes out, not the
// minimal one), shortened anew to the result topic's max.message.bytes, read again after a
// size refusal, with a backoff of up to resultRefusedMaxDelay, until it is out or the agent's
// work context ends. The request is committed only after its result is out: a result is never
// dropped, since a requester that hears nothing takes the request for not done. The error
// returned is the work context's end only; it leaves the request uncommitted, to be run again
// by the next owner of its partition (whose intent check rolls back what this run did).
func (a *Agent) publish(work context.Context, out *handlers.Outcome) error {
	backoff := kafkaio.Backoff{Base: time.Second, Max: resultRefusedMaxDelay, Attempts: 1}
	pending := false
	defer func() {
		if pending {
			a.metrics.ResultsPending.Dec()
		}
	}()
	for attempt := 1; ; attempt++ {
		err := a.publishOnce(work, out)
		if err == nil || work.Err() != nil {
			return err
		}
		if !pending {
			pending = true
			a.metrics.ResultsPending.Inc()
			a.log.Error("result refused by the broker; the request stays uncommitted and its result is retried",
				"connector", out.Result.Name, "request_id", out.Result.RequestID, "result", out.EventType, "err", err)
		} else {
			a.log.Warn("result still refused by the broker, retrying", "connector", out.Result.Name, "request_id", out.Result.RequestID, "err", err)
		}
		if !kafkaio.Sleep(work, backoff.Delay(attempt)) {
			return work.Err()
		}
		if sizeRefused(err) {
			a.readResultMaxBytes(work) // the topic's limit may have been lowered since it was read
		}
	}
}

// sizeRefused reports whether a publish error is the broker's refusal of the record's size:
// the one refusal a shorter result answers.
func sizeRefused(err error) bool {
	return errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.RecordListTooLarge)
}

// resultRefusedMaxDelay bounds the wait between two tries of a result the broker refuses.
const resultRefusedMaxDelay = 30 * time.Second

// publishOnce writes the outcome's result, or, when the broker refuses it for its size, its
// minimal result (Result.Minimal: the outcome, its counts and a note that it is shortened).
// It returns the last refusal, or the work context's end.
func (a *Agent) publishOnce(work context.Context, out *handlers.Outcome) error {
	msg, err := a.resultRecord(out.EventType, &out.Result)
	if err == nil {
		err = a.produceResult(work, msg, &out.Result)
	}
	if err == nil || work.Err() != nil || !sizeRefused(err) {
		return err
	}
	a.log.Warn("result refused by the broker; publishing a minimal result instead",
		"connector", out.Result.Name, "request_id", out.Result.RequestID, "err", err)
	minimal := out.Result.Minimal()
	if msg, err = a.encodeResult(out.EventType, &minimal); err == nil {
		err = a.produceResult(work, msg, &out.Result)
	}
	return err
}

// encodeResult builds a result's record.
func (a *Agent) encodeResult(typ string, res *events.Result) (kafka.Message, error) {
	msg, err := events.ResultMessage(a.cfg.ResultTopic, typ, res, events.SchemaURI(typ))
	if err != nil {
		return kafka.Message{}, fmt.Errorf("encode result: %w", err)
	}
	// The request's identity rides in headers too, so the dedupe view reads results without
	// decoding their data.
	events.AddRequestHeaders(&msg, res)
	msg.Partition = -1 // kafka.Hash of the key
	return msg, nil
}

// resultRecord builds the record of res, shortened to fit the result topic's
// max.message.bytes: the long lists keep as many entries as fit, and when even none fit, the
// minimal result goes. A result with long lists is measured entry by entry first
// (Result.FittingKeep) and encoded once at the size that fits: encoding a large dry run's
// whole plan only to throw it away was most of what a large request cost in memory.
func (a *Agent) resultRecord(typ string, res *events.Result) (kafka.Message, error) {
	limit := int(a.resultMaxBytes.Load())
	if limit == 0 {
		limit = defaultResultMaxBytes
	}
	n := res.LongestList()
	if n == 0 {
		msg, err := a.encodeResult(typ, res)
		if err != nil || recordSize(&msg) <= limit {
			return msg, err
		}
		minimal := res.Minimal()
		return a.encodeResult(typ, &minimal)
	}
	empty := res.Shortened(0)
	base, err := a.encodeResult(typ, &empty)
	if err != nil {
		return kafka.Message{}, err
	}
	if recordSize(&base) > limit {
		minimal := res.Minimal()
		return a.encodeResult(typ, &minimal)
	}
	keep := res.FittingKeep(limit - recordSize(&base) - listKeysBytes)
	if keep == n {
		// Everything fits (the full result has no "truncated" and "full_counts" to carry).
		if msg, err := a.encodeResult(typ, res); err != nil || recordSize(&msg) <= limit {
			return msg, err
		}
		keep = n - 1
	}
	if keep == 0 {
		return base, nil
	}
	short := res.Shortened(keep)
	msg, err := a.encodeResult(typ, &short)
	if err != nil || recordSize(&msg) <= limit {
		return msg, err
	}
	// The measure leaves room to spare; should it still be short, bisect below it.
	lo, hi, best := 0, keep-1, base
	for lo <= hi {
		mid := lo + (hi-lo)/2
		short := res.Shortened(mid)
		m, err := a.encodeResult(typ, &short)
		if err != nil {
			return kafka.Message{}, err
		}
		if recordSize(&m) <= limit {
			best, lo = m, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}

// listKeysBytes is room for what the long lists of a shortened result add besides their
// entries: the key of a list that Shortened(0) leaves out because it is empty.
const listKeysBytes = 64

// recordSize is what a record counts against max.message.bytes.
func recordSize(m *kafka.Message) int {
	n := len(m.Key) + len(m.Value) + recordOverhead
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// produceResult writes msg, retrying every error but those that mean the broker refuses it
// (refusedResult), which it returns. After an ambiguous error (a timeout or a dropped
// connection: the broker may have appended the record) the result log is read to its end
// first, so a result that did land is not written twice.
func (a *Agent) produceResult(work context.Context, msg kafka.Message, res *events.Result) error {
	backoff := kafkaio.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second, Attempts: 1}
	for attempt := 1; ; attempt++ {
		var err error
		// Awaited: the result is sent by this goroutine when the producer is idle, and its
		// outcome is known before the request is committed or given up.
		w := a.store.Producer().EnqueueAwaited(work, []kafka.Message{msg})
		if errs := w.Wait(work); errs != nil {
			err = errs[0]
		}
		if err == nil {
			a.results.written(w, &msg, res)
			break
		}
		if work.Err() != nil || refusedResult(err) {
			if _, ok := kafkaio.AuthorizationCode(err); ok {
				a.kickPermissions()
			}
			return err
		}
		reason, _ := kafkaio.Classify(err)
		a.metrics.Retries.WithLabelValues(string(reason)).Inc()
		a.log.Warn("publish result, retrying", "connector", res.Name, "request_id", res.RequestID, "reason", reason, "err", err)
		if !kafkaio.Sleep(work, backoff.Delay(attempt)) {
			return work.Err()
		}
		if reason == kafkaio.ReasonTimeout || reason == kafkaio.ReasonNetwork {
			if err := a.results.log.Sync(work); err == nil && a.results.seen(res.RequestSource, res.RequestID) {
				break
			}
		}
	}
	a.results.add(res.RequestSource, res.RequestID)
	return nil
}

// refusedResult reports whether a publish error means the broker refuses the record itself,
// so that writing it again cannot succeed. Other errors, permanent-looking ones included, are
// retried: a leader moving or a broker restarting only delays a result.
func refusedResult(err error) bool {
	var kerr kafka.Error
	if !errors.As(err, &kerr) {
		return false
	}
	switch kerr {
	case kafka.MessageSizeTooLarge, kafka.RecordListTooLarge, kafka.InvalidRecord, kafka.InvalidMessage,
		kafka.TopicAuthorizationFailed, kafka.ClusterAuthorizationFailed, kafka.TransactionalIDAuthorizationFailed:
		return true
	}
	return false
}
