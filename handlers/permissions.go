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
// (kafkaio.ProbeGroupCommit, ProbeGroupDelete, ProbeWrite: requests for partition -1, which
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
	// rewritten (and put back by the cleanup).
	if err := c.checkWrite(ctx, c.opts.ConfigTopic, "config"); err != nil {
		return err
	}
	if j.typ == connectors.Sink {
		return c.checkSinkPermissions(ctx, j)
	}
	for _, topic := range j.sourceTopics(c.opts.OffsetsTopic) {
		if err := c.checkWrite(ctx, topic, "offsets"); err != nil {
			return err
		}
	}
	return nil
}

// checkWrite fails with 403 unless the agent may Write topic (what: "config", "offsets").
func (c *Creator) checkWrite(ctx context.Context, topic, what string) error {
	if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.ProbeWrite(ctx, topic) }); err != nil {
		return c.refused(fmt.Errorf("check permission to write %s topic %q: %w", what, topic, err))
	}
	return nil
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
