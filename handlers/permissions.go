package handlers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// validateOffsetsAndPermissions is the validate_offsets stage: the offsets' own rules
// (validateOffsets), then the permissions the rest of the request needs (checkPermissions).
func (c *Creator) validateOffsetsAndPermissions(ctx context.Context, j *job) error {
	if err := c.validateOffsets(ctx, j); err != nil {
		return err
	}
	return c.checkPermissions(ctx, j)
}

// checkPermissions is the last part of validate_offsets: before wipe_offsets deletes or
// rewrites anything, it asks the brokers whether the agent's principal will be allowed to
// write the new offsets and to put the old ones back, so that a missing ACL never leaves a
// connector's offsets wiped and unrestorable. The questions are probes that change nothing
// (kafkaio.ProbeGroupCommit, ProbeGroupDelete, ProbeWrites: requests for partition -1, which
// a broker refuses for the ACL before it looks the partition up):
//   - a sink: Read on its group and on every topic of the new offsets and of the group's
//     current ones (an OffsetCommit needs both, for the new offsets and for the restore),
//     and Delete on the group when it has offsets to wipe;
//   - a source: Write on every offsets topic the wipe tombstones and the write writes to
//     (the global one, and the connector's own);
//   - both: Write on the config topic, which write_config writes last.
//
// A refusal fails the request with 403 and a message naming the principal, the operation
// and the resource (kafkaio.AuthzError). A dry run asks too: its plan must not promise what
// the real run would be refused.
//
// What the probes cannot see: Apache Kafka leaves out of an OffsetFetch the topics the
// principal may not Describe, so a group's entries on such topics are neither in the
// snapshot nor checked, and deleting the group drops them. Read on every topic a sink group
// has committed offsets for is in the documented ACLs for that reason.
func (c *Creator) checkPermissions(ctx context.Context, j *job) error {
	// write_config comes last: refused, it would fail a request whose offsets were already
	// rewritten (and put back by the cleanup). The Write probes were asked while
	// validate_config read the config topic (startWriteProbes).
	p := j.writeProbes
	if p == nil {
		p = c.writeProbeTopics(j)
	}
	errs := c.probeWrites(ctx, p.topics, p.queued)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		if err := c.refused(fmt.Errorf("check permission to write %s topic %q: %w", p.whats[i], p.topics[i], err)); err != nil {
			return err
		}
	}
	if j.typ == connectors.Sink {
		return c.checkSinkPermissions(ctx, j)
	}
	return nil
}

// writeProbes are the Write probes of a request: the config topic first (write_config's),
// then a source's offsets topics, asked in one request.
type writeProbes struct {
	topics, whats []string // the topics, and "config" or "offsets" for each
	// queued, when not nil, waits for the answers of the probes startWriteProbes queued.
	queued func(context.Context) []error
}

// writeProbeTopics are the Write probes j needs, not asked yet.
func (c *Creator) writeProbeTopics(j *job) *writeProbes {
	p := &writeProbes{topics: []string{c.opts.ConfigTopic}, whats: []string{"config"}}
	if j.typ != connectors.Sink {
		for _, topic := range j.sourceTopics(c.opts.OffsetsTopic) {
			p.topics, p.whats = append(p.topics, topic), append(p.whats, "offsets")
		}
	}
	return p
}

// startWriteProbes queues the Write probes validate_offsets will wait for, once
// validate_config knows the request's topics: they go with the store's next write (the
// request's intent, queued with them), and their round trip overlaps the reads of the config
// and offsets topics to their end instead of adding one after them. A request without offsets
// skips validate_offsets and asks nothing.
func (c *Creator) startWriteProbes(ctx context.Context, j *job) {
	if !j.req.Data.HasInitialOffsets {
		return
	}
	p := c.writeProbeTopics(j)
	p.queued = c.opts.Store.QueueProbeWrites(ctx, p.topics)
	j.writeProbes = p
}

// probeWrites asks whether the agent may Write each of topics, in one request, with the
// Creator's retries of an error that is not an answer; queued, when not nil, waits for the
// answers of the first ask, queued earlier.
func (c *Creator) probeWrites(ctx context.Context, topics []string, queued func(context.Context) []error) []error {
	var errs []error
	err := c.retry(ctx, func(ctx context.Context) error {
		if queued != nil {
			wait := queued
			queued = nil
			errs = wait(ctx)
		} else {
			errs = c.opts.Store.ProbeWrites(ctx, topics)
		}
		return errors.Join(errs...)
	})
	if errs == nil && err != nil {
		errs = make([]error, len(topics))
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

func (c *Creator) checkSinkPermissions(ctx context.Context, j *job) error {
	var topics []string
	for _, o := range j.sinkOffsets {
		topics = append(topics, o.Topic)
	}
	var prevTopics []string
	if err := c.retry(ctx, func(ctx context.Context) error {
		prev, err := c.opts.Store.GroupOffsets(ctx, j.group)
		prevTopics = prevTopics[:0]
		for _, o := range prev {
			prevTopics = append(prevTopics, o.Topic)
		}
		return err
	}); err != nil {
		return c.refused(fmt.Errorf("list offsets of group %q: %w", j.group, err))
	}
	topics = append(topics, prevTopics...)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	if len(topics) == 0 {
		return nil // nothing to commit and nothing to restore
	}
	if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.ProbeGroupCommit(ctx, j.group, topics) }); err != nil {
		return c.refused(fmt.Errorf("check permission to commit offsets of group %q: %w", j.group, err))
	}
	if len(prevTopics) > 0 {
		if err := c.retry(ctx, func(ctx context.Context) error {
			return c.opts.Store.ProbeGroupDelete(ctx, j.group, prevTopics[0])
		}); err != nil {
			return c.refused(fmt.Errorf("check permission to delete group %q: %w", j.group, err))
		}
	}
	return nil
}

// refused turns an authorization refusal into the request's failure: 403 and the
// AuthzError's words. Any other error of a probe (one the retries did not get past) is no
// answer to the question, and the request goes on: the write itself meets it, where the
// cleanup handles it as before.
func (c *Creator) refused(err error) error {
	var az *kafkaio.AuthzError
	if !errors.As(err, &az) {
		if errors.Is(err, context.Canceled) {
			return err
		}
		c.opts.Logger.Warn("permission probe not answered; going on", "err", err)
		return nil
	}
	return &Failure{Code: 403, Message: az.Error(), Reason: kafkaio.ReasonPermanent}
}
