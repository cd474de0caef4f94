package kafkaio

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
)

// Reason is the bounded classification of an error: a metric label value and part of a
// failed result's message.
type Reason string

// Reasons returned by Classify.
const (
	ReasonNone        Reason = "none"
	ReasonTimeout     Reason = "timeout"
	ReasonNetwork     Reason = "network"
	ReasonNotLeader   Reason = "not_leader"
	ReasonReplicas    Reason = "not_enough_replicas"
	ReasonCoordinator Reason = "coordinator"
	ReasonBroker      Reason = "broker_transient"
	ReasonCanceled    Reason = "canceled"
	ReasonPermanent   Reason = "permanent"
)

// TransientReasons lists the reasons Classify returns for errors worth retrying, in a fixed
// order: the label values of retry metrics.
func TransientReasons() []Reason {
	return []Reason{ReasonTimeout, ReasonNetwork, ReasonNotLeader, ReasonReplicas, ReasonCoordinator, ReasonBroker}
}

// Classify decides whether err is worth retrying. The same answer feeds the retry loop, the
// retries metric and, when retries run out, the failed result. Context cancellation is not
// transient: the agent is shutting down.
func Classify(err error) (reason Reason, transient bool) {
	if err == nil {
		return ReasonNone, false
	}
	if errors.Is(err, context.Canceled) {
		return ReasonCanceled, false
	}
	// kafka-go reports per-message errors of a write as WriteErrors: judge the first.
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if e != nil {
				return Classify(e)
			}
		}
	}
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		switch kerr {
		case kafka.NotLeaderForPartition, kafka.LeaderNotAvailable, kafka.FencedLeaderEpoch,
			kafka.UnknownLeaderEpoch, kafka.UnknownTopicOrPartition:
			return ReasonNotLeader, true
		case kafka.NotEnoughReplicas, kafka.NotEnoughReplicasAfterAppend:
			return ReasonReplicas, true
		case kafka.GroupCoordinatorNotAvailable, kafka.NotCoordinatorForGroup,
			kafka.GroupLoadInProgress, kafka.RebalanceInProgress:
			return ReasonCoordinator, true
		case kafka.RequestTimedOut:
			return ReasonTimeout, true
		}
		if kerr.Temporary() {
			return ReasonBroker, true
		}
		return ReasonPermanent, false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ReasonTimeout, true
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return ReasonTimeout, true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return ReasonNetwork, true
	}
	var operr *net.OpError
	if errors.As(err, &operr) {
		return ReasonNetwork, true
	}
	return ReasonPermanent, false
}

// Backoff is a capped exponential backoff with full jitter.
type Backoff struct {
	// Base is the first delay's upper bound; Max caps every delay; Attempts bounds the tries
	// (including the first).
	Base, Max time.Duration
	Attempts  int
}

// DefaultBackoff retries for roughly a minute before giving up.
func DefaultBackoff() Backoff {
	return Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second, Attempts: 16}
}

// Delay returns the jittered delay before retry number n (1-based).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Base << min(n-1, 20)
	if d <= 0 || d > b.Max {
		d = b.Max
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// Retry runs op until it succeeds, fails permanently, runs out of attempts or ctx ends.
// onRetry, when not nil, is told the reason of every retried error.
func Retry(ctx context.Context, b Backoff, onRetry func(Reason), op func(context.Context) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = op(ctx)
		reason, transient := Classify(err)
		if err == nil || !transient || attempt >= b.Attempts {
			return err
		}
		if onRetry != nil {
			onRetry(reason)
		}
		if !Sleep(ctx, b.Delay(attempt)) {
			return errors.Join(err, ctx.Err())
		}
	}
}

// Expired reports whether ctx's deadline has come: a read cut short by it (a connection's
// deadline is its context's) can fail a moment before ctx.Err says so.
func Expired(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// Sleep waits d unless ctx ends first; it reports whether the whole wait passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
