package hazard

import (
	"context"
	"time"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/mm2"
)

// MirrorMaker 2's health for the sinks moved across it (HazardMM2): before anything is stopped,
// each sink whose offsets go through MM2's checkpoints is asked why no checkpoint of its group
// would come (mm2.Translator.Health): MM2's configuration read on B (its connectors' configs in
// B's Connect config topic, a dedicated MM2's mm2-configs.<alias>.internal, a Strimzi
// KafkaMirrorMaker2's mirrormaker2-cluster-configs, or the --mm2-config-topic given), else what
// the checkpoints topic shows, and the age of the group's checkpoints (--checkpoint-max-age);
// the status of MM2's checkpoint connector is read from B's Connect REST API when it runs
// there (mm2Status), and a finding says so when it could not be read. A
// group MM2 will not checkpoint refuses its sink, with the MM2 setting to change; with
// --allow-replay, which accepts partitions without a checkpoint, it is a warning, and the
// translation does not wait for the checkpoints (--checkpoint-wait).

// checkMM2 runs the health check on every selected sink translated through MM2's checkpoints
// (a sink following its sources takes no checkpoint: follow.go).
func (hc *Checks) checkMM2(ctx context.Context, entries []*Subject) {
	m := hc.opts.MM2
	if m == nil {
		return
	}
	var sinks []*Subject
	for _, e := range entries {
		if c := e.Connector; c.Problem.IsZero() && c.Type == connectors.Sink && e.Follows == nil {
			sinks = append(sinks, e)
		}
	}
	if len(sinks) == 0 {
		return
	}
	topics := m.ConfigTopics
	if len(topics) == 0 {
		if hc.b != nil {
			topics = append(topics, hc.b.Target.ConfigTopic)
		}
		topics = append(topics, mm2.DedicatedConfigTopic(m.Policy.SourceAlias), mm2.StrimziConfigTopic)
	}
	b := m.Translator.Target()
	if hc.b != nil && b.Transport == nil {
		b.Transport = hc.b.Target.Transport
	}
	setup := mm2.ReadSetup(ctx, b, topics, m.Policy)
	if hc.Blocked == nil {
		hc.Blocked = map[string]bool{}
	}
	hc.mm2Status(ctx, &setup)
	for _, e := range sinks {
		c := e.Connector
		committed, err := mm2.SinkPartitions(c.Offsets)
		if err != nil {
			continue // the translation says so
		}
		fs, err := m.Translator.Health(ctx, c.Group, committed, mm2.HealthCheck{Setup: setup, MaxAge: m.CheckpointMaxAge})
		if err != nil {
			e.add(Hazard{Check: HazardMM2, Message: fleet.Textf("MirrorMaker 2's health could not be checked: %v", err)})
			continue
		}
		for _, f := range fs {
			e.add(Hazard{Check: HazardMM2, Key: f.Key, Message: f.Message, Fix: f.Fix, Refuse: f.Blocked && !m.AllowReplay})
			if f.Blocked {
				hc.Blocked[c.Group] = true
			}
		}
	}
}

// mm2StatusTimeout bounds the read of one MirrorMaker 2 connector's status.
const mm2StatusTimeout = 15 * time.Second

// mm2Status reads the status of MirrorMaker 2's checkpoint connectors from B's Connect REST API
// when they run on B's Connect cluster (their config is in B's config topic) and the API was
// given; otherwise it says why their status was not read. A connector that is not running
// writes no checkpoint: its sink is refused before anything is stopped (mm2.Health). Why a
// status was not read is a Text, which mm2's finding quotes as it is: a setting it names stays
// typed until the reader spells it.
func (hc *Checks) mm2Status(ctx context.Context, setup *mm2.Setup) {
	for i := range setup.Checkpoint {
		c := &setup.Checkpoint[i]
		switch {
		case c.Dedicated:
			c.StatusUnread = fleet.Plain("a dedicated MirrorMaker 2 (connect-mirror-maker.sh) runs it, with no Connect REST API to ask: see that process's log")
		case hc.b == nil || c.Topic != hc.b.Target.ConfigTopic:
			c.StatusUnread = fleet.Textf("it runs on the Connect cluster whose config topic is %s, not on B's Connect (whose REST API %s would give): "+
				"ask that cluster's REST API, or for a Strimzi KafkaMirrorMaker2 its status (kubectl get kafkamirrormaker2 -o yaml)", c.Topic, fleet.ToConnectURL)
		case hc.b.REST == nil:
			c.StatusUnread = fleet.Textf("B's Connect REST API was not given: give %s", fleet.ToConnectURL)
		default:
			rctx, cancel := context.WithTimeout(ctx, mm2StatusTimeout)
			st, ok, err := hc.b.REST.Status(rctx, c.Name)
			cancel()
			switch {
			case err != nil:
				c.StatusUnread = fleet.Textf("GET /connectors/%s/status on B's Connect REST API failed: %v", c.Name, err)
			case !ok:
				c.StatusUnread = fleet.Textf("B's Connect REST API does not know it (GET /connectors/%s/status: 404): does %s serve the Connect cluster of config topic %s?",
					c.Name, fleet.ToConnectURL, c.Topic)
			default:
				c.Status = mm2Status(st)
			}
		}
	}
}

// mm2Status is a connector's status on B's Connect REST API, as MirrorMaker 2's health check
// reads it.
func mm2Status(st connectrest.Status) *mm2.ConnectorStatus {
	out := &mm2.ConnectorStatus{Tasks: make([]mm2.TaskStatus, 0, len(st.Tasks))}
	out.Connector.State, out.Connector.Trace = st.Connector.State, st.Connector.Trace
	for _, t := range st.Tasks {
		out.Tasks = append(out.Tasks, mm2.TaskStatus{ID: t.ID, State: t.State.State, Trace: t.Trace})
	}
	return out
}
