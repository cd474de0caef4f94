package migrate

import (
	"context"
	"sync"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/mm2"
)

// MirrorMaker 2's health for the sinks moved across it (HazardMM2): before anything is stopped,
// each sink whose offsets go through MM2's checkpoints is asked why no checkpoint of its group
// would come (mm2.Translator.Health): MM2's configuration read on B (its connectors' configs in
// B's Connect config topic, a dedicated MM2's mm2-configs.<alias>.internal, a Strimzi
// KafkaMirrorMaker2's mirrormaker2-cluster-configs, or the --mm2-config-topic given), else what
// the checkpoints topic shows, and the age of the group's checkpoints (--checkpoint-max-age). A
// group MM2 will not checkpoint refuses its sink, with the MM2 setting to change; with
// --allow-replay, which accepts partitions without a checkpoint, it is a warning, and the
// translation does not wait for the checkpoints (--checkpoint-wait).

// checkMM2 runs the health check on every selected sink translated through MM2's checkpoints
// (a sink following its sources takes no checkpoint: follow.go).
func (s *source) checkMM2(ctx context.Context, entries []*Entry) {
	m, ok := s.opts.SinkTranslator.(*MM2Sinks)
	if !ok {
		return
	}
	var sinks []*Entry
	for _, e := range entries {
		if c := e.connector; c.Problem == "" && c.Type == connectors.Sink && c.follows == nil {
			sinks = append(sinks, e)
		}
	}
	if len(sinks) == 0 {
		return
	}
	topics := m.ConfigTopics
	if len(topics) == 0 {
		if s.b != nil {
			topics = append(topics, s.b.to.ConfigTopic)
		}
		topics = append(topics, mm2.DedicatedConfigTopic(m.Policy.SourceAlias), mm2.StrimziConfigTopic)
	}
	b := m.Translator.Target()
	if s.b != nil && b.Transport == nil {
		b.Transport = s.b.to.Transport
	}
	setup := mm2.ReadSetup(ctx, b, topics, m.Policy)
	for _, e := range sinks {
		c := e.connector
		committed, err := mm2.SinkPartitions(c.Offsets)
		if err != nil {
			continue // the translation says so
		}
		fs, err := m.Translator.Health(ctx, c.Group, committed, mm2.HealthCheck{Setup: setup, MaxAge: m.CheckpointMaxAge})
		if err != nil {
			e.hazard(Hazard{Check: HazardMM2, Message: "MirrorMaker 2's health could not be checked: " + err.Error()})
			continue
		}
		for _, f := range fs {
			e.hazard(Hazard{Check: HazardMM2, Key: f.Key, Message: f.Message, Fix: f.Fix, Refuse: f.Blocked && !m.AllowReplay})
			if f.Blocked {
				m.blocked.Store(c.Group, true)
			}
		}
	}
}

// blockedGroups are the groups whose checkpoints checkMM2 found will not come: their
// translation does not wait.
type blockedGroups struct{ sync.Map }

func (b *blockedGroups) has(group string) bool {
	_, ok := b.Load(group)
	return ok
}
