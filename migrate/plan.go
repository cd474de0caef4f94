package migrate

import (
	"context"
	"time"

	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Plan reads A and B, runs every check of a migration and asks B's agents to plan each
// connector (a dry run: nothing is stopped on A, nothing written on B), and returns the plan
// file of it, for review, and the dry run's report. The caller fills in the file's Settings,
// Selection and CreatedBy, which are in its terms. An error wrapping ErrPrecheck means no plan
// (a cluster unreachable, a precheck refused).
func Plan(ctx context.Context, opts MigrateOptions) (*plan.File, *apply.Report, error) {
	opts.DryRun = true
	var f *plan.File
	hook := &stageHook{done: func(ctx context.Context, sg *staged, rep *apply.Report) error {
		f = planFile(ctx, sg, rep)
		return nil
	}}
	rep, _, err := opts.run(ctx, hook)
	if err != nil {
		return nil, rep, err
	}
	return f, rep, nil
}

// planFile is the plan file of a dry run: sg's plan, with what B's agents planned (rep).
func planFile(ctx context.Context, sg *staged, rep *apply.Report) *plan.File {
	o := sg.opts
	f := &plan.File{Version: plan.FileVersion, MigrationID: o.MigrationID, Created: time.Now().UTC().Truncate(time.Second)}
	a := sg.clusterA
	f.From = plan.Side{KafkaClusterID: a.KafkaClusterID, ConfigTopic: a.ConfigTopic, OffsetsTopic: a.OffsetsTopic,
		ConnectVersion: a.Connect.Version, ConnectCommit: a.Connect.Commit}
	if o.Topics != nil {
		f.From.Brokers = o.Topics.Brokers
	}
	if o.ConnectURL != "" {
		f.From.ConnectURL = connectrest.Redact(o.ConnectURL)
	}
	f.To = plan.Side{KafkaClusterID: sg.b.ClusterID, Brokers: o.To.Brokers, ConfigTopic: o.To.ConfigTopic, OffsetsTopic: o.To.OffsetsTopic,
		RequestTopic: o.To.RequestTopic, ResultTopic: o.To.ResultTopic, ConnectVersion: sg.b.Connect.Version, ConnectCommit: sg.b.Connect.Commit}
	if o.States != nil {
		f.To.StateTopic = o.States.TopicOrDefault()
	}
	if o.To.ConnectURL != "" {
		f.To.ConnectURL = connectrest.Redact(o.To.ConnectURL)
	}
	onB := sg.connectorsOnB(ctx)
	fo := sg.fileOptions(onB != nil, func(target string) bool { _, ok := onB[target]; return ok })
	f.Connectors = sg.plan.File(fo)
	byName := map[string]*apply.Entry{}
	for _, e := range rep.Connectors {
		byName[e.Name] = e
	}
	for _, fc := range f.Connectors {
		e := byName[fc.Name]
		if e == nil {
			continue
		}
		ap := &plan.AgentPlan{Outcome: string(e.Outcome), Message: e.Message.Spell(fo.Words)}
		if p := e.Plan; p != nil {
			for _, r := range p.ConfigRecords {
				ap.ConfigRecords = append(ap.ConfigRecords, r.Key)
			}
			ap.OffsetRecords, ap.GroupOffsets = len(p.Records), len(p.GroupOffsets)
			if p.Error != "" && ap.Message == "" {
				ap.Message = p.Error
			}
		}
		fc.AgentPlan = ap
		fc.Translation = translationOf(e)
		if fc.Refused == "" && e.Outcome != apply.OutcomePlanned {
			// Not refused by a check, but not planned by B's agent either.
			fc.Refused = string(e.Outcome) + ": " + e.Message.Spell(fo.Words)
		}
	}
	f.Summary.Selected = len(f.Connectors)
	for _, fc := range f.Connectors {
		if fc.Refused != "" {
			f.Summary.Refused++
		} else {
			f.Summary.ToMove++
		}
		for _, h := range fc.Hazards {
			if !h.Refuse {
				f.Summary.Warnings++
			}
		}
		f.Summary.Warnings += len(fc.Warnings)
	}
	return f
}

// fileOptions are the options of the plan file of sg's plan: its selection and state, A's
// config records, and whether B has each connector now (known false when B's config topic
// could not be read).
func (sg *staged) fileOptions(known bool, onB func(target string) bool) plan.FileOptions {
	o := sg.opts
	fo := plan.FileOptions{Registry: o.Registry, Selection: o.Selection, InitialState: o.InitialState, RecordAt: sg.src.RecordAt, Words: o.Words}
	if fo.Words == nil {
		fo.Words = fleet.GoWords
	}
	if o.Topics != nil {
		fo.ConfigTopic = o.Topics.ConfigTopic
	}
	if known {
		fo.ExistsOnB = map[string]bool{}
		for _, pc := range sg.plan.Connectors {
			fo.ExistsOnB[pc.Target] = onB(pc.Target)
		}
	}
	return fo
}

// connectorsOnB reads the connectors B's config topic holds now, by name; nil, with a warning,
// when it cannot be read.
func (sg *staged) connectorsOnB(ctx context.Context) map[string]map[string]string {
	o := sg.opts
	onB, err := offsetstore.ReadConnectorConfigs(ctx, kafkaio.Options{Brokers: o.To.Brokers, Transport: o.To.Transport, Logger: o.Logger,
		Principal: o.To.Principal}, o.To.ConfigTopic)
	if err != nil {
		o.Logger.Warn("cannot read the connectors B has: whether each exists on B is not known", "topic", o.To.ConfigTopic, "err", err)
		return nil
	}
	return onB
}

// translationOf is the plan file's view of e's translation across MirrorMaker 2; nil for a
// connector that was not translated.
func translationOf(e *apply.Entry) *plan.Translation {
	tr, ok := e.Translation.(*apply.SinkTranslation)
	if !ok || tr == nil {
		return nil
	}
	out := &plan.Translation{Policy: string(tr.Policy), Partitions: []plan.PartitionTranslation{}}
	for _, p := range tr.All {
		pt := plan.PartitionTranslation{OnA: p.Source.String(), OnB: p.Target.String(), CommittedA: p.Committed,
			Verdict: string(p.Verdict), ReplayBound: p.ReplayBound, Reason: p.Reason}
		if p.Verdict != mm2.VerdictMissing {
			offset := p.Offset
			pt.OffsetB = &offset
		}
		out.Partitions = append(out.Partitions, pt)
	}
	return out
}
