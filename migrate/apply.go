package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// StepDrift is the report's failed step of a connector apply refused because A or B changed
// since its plan (plan.Drift): it was neither stopped nor published.
const StepDrift = "drift"

// StepRefusedInPlan is the report's failed step of a connector its plan already refused:
// apply never moves what was not reviewed.
const StepRefusedInPlan = "refused_in_plan"

// Apply carries out the plan file f with opts (its addresses, settings and selection, which
// the caller takes from f, and the credentials): it reads A and B again and builds the plan
// again for f's connectors only, before anything is stopped; it refuses the whole run (an
// error wrapping ErrPrecheck) when A or B is another cluster than f's, or when f's edits give
// another config on B for an unchanged connector, and skips, at StepDrift, each connector
// whose config or state on A, or whose presence on B, is not what f saw, naming what changed.
// The others move as Migrate moves them, under f's migration id: applying f again continues
// the same migration. drifts are the findings, for the caller to print.
func Apply(ctx context.Context, opts MigrateOptions, f *plan.File) (rep *apply.Report, cut *cutover.Cutover, drifts []plan.Drift, err error) {
	opts.MigrationID = f.MigrationID
	opts.DryRun = false
	only := map[string]bool{}
	for _, fc := range f.Connectors {
		only[fc.Name] = true
	}
	hook := &stageHook{
		before: func(po *plan.Options) { po.Only = only },
		planned: func(ctx context.Context, sg *staged) error {
			var err error
			drifts, err = sg.drift(ctx, f)
			return err
		},
		done: func(_ context.Context, _ *staged, rep *apply.Report) error {
			warnGoneOffsets(f, rep)
			return nil
		},
	}
	rep, cut, err = opts.run(ctx, hook)
	return rep, cut, drifts, err
}

// drift compares plan file f with what sg read and planned now: a finding on the whole plan
// is an error; a connector's findings give it a Problem (it is skipped at StepDrift), and a
// connector of f that A has no more an entry of its own.
func (sg *staged) drift(ctx context.Context, f *plan.File) ([]plan.Drift, error) {
	o := sg.opts
	now := plan.File{From: plan.Side{KafkaClusterID: sg.clusterA.KafkaClusterID, ConfigTopic: sg.clusterA.ConfigTopic},
		To: plan.Side{KafkaClusterID: sg.b.ClusterID, ConfigTopic: o.To.ConfigTopic}}
	drifts := plan.IdentityDrift(*f, now)
	if len(drifts) > 0 {
		return drifts, fleet.Precheckf("the plan's clusters are not these: %s", driftText(drifts))
	}
	onB := sg.markedOnB(ctx, f)
	nowFile := sg.plan.File(sg.fileOptions(onB != nil, func(target string) bool { return onB[target] != nil }))
	byName := map[string]*plan.FileConnector{}
	for _, fc := range nowFile {
		byName[fc.Name] = fc
	}
	byNamePlanned := map[string]*plan.Connector{}
	for _, pc := range sg.plan.Connectors {
		byNamePlanned[pc.Connector.Name] = pc
	}
	sg.failedStep = map[string]string{}
	var whole []plan.Drift
	var unseen []string
	for _, planned := range f.Connectors {
		if planned.Refused == "" && planned.ConfigRecordOnA == nil {
			unseen = append(unseen, planned.Name)
		}
	}
	if len(unseen) > 0 {
		o.Logger.Warn("the plan read these connectors' configs on A through its REST API only: a change of a secret value alone since the plan "+
			"is not seen (A's config topic, read with A's brokers, shows every rewrite)", "connectors", strings.Join(unseen, ","))
	}
	for _, planned := range f.Connectors {
		pc := byNamePlanned[planned.Name]
		if planned.Refused != "" {
			if pc != nil {
				pc.Connector.Problem = fleet.Textf("refused in the plan: %s", planned.Refused)
				sg.failedStep[planned.Name] = StepRefusedInPlan
			}
			continue
		}
		found := plan.ConnectorDrift(planned, byName[planned.Name], onB[planned.Target])
		var mine []string
		for _, d := range found {
			drifts = append(drifts, d)
			if d.WholePlan() {
				whole = append(whole, d)
				continue
			}
			mine = append(mine, string(d.Kind)+": "+d.Message)
		}
		if len(mine) == 0 {
			continue
		}
		msg := "changed since the plan: " + strings.Join(mine, "; ")
		if pc == nil { // gone from A
			sg.extra = append(sg.extra, &apply.Entry{Name: planned.Name, TargetName: planned.Target, Type: planned.Type,
				Outcome: apply.OutcomeSkipped, FailedStep: StepDrift, Message: fleet.Plain(msg)})
			continue
		}
		pc.Connector.Problem = fleet.Plain(msg)
		sg.failedStep[planned.Name] = StepDrift
	}
	if len(whole) > 0 {
		return drifts, fleet.Precheckf("%s", driftText(whole))
	}
	return drifts, nil
}

// markedOnB is what B's config topic holds now by the target names of f's connectors that
// it holds live, each judged by its record's request mark; nil, with a warning, when the
// topic cannot be read (whether each exists on B is then not compared).
func (sg *staged) markedOnB(ctx context.Context, f *plan.File) map[string]*plan.OnB {
	o := sg.opts
	keys := make([]string, 0, len(f.Connectors))
	for _, fc := range f.Connectors {
		keys = append(keys, "connector-"+fc.Target)
	}
	recs, err := offsetstore.ReadConfigRecords(ctx, kafkaio.Options{Brokers: o.To.Brokers, Transport: o.To.Transport, Logger: o.Logger,
		Principal: o.To.Principal}, o.To.ConfigTopic, keys)
	if err != nil {
		o.Logger.Warn("cannot read the connectors B has: whether each exists on B since the plan is not compared", "topic", o.To.ConfigTopic, "err", err)
		return nil
	}
	source := fleet.RequestSourcePrefix + o.MigrationID
	out := map[string]*plan.OnB{}
	for _, fc := range f.Connectors {
		r := recs["connector-"+fc.Target]
		if !r.Live {
			continue
		}
		w := r.Writer
		switch {
		case w.RequestSource == source:
			out[fc.Target] = &plan.OnB{ByThisMigration: true}
		case w.RequestID != "":
			out[fc.Target] = &plan.OnB{Writer: fmt.Sprintf("request %s of %s, not of this migration", w.RequestID, w.RequestSource)}
		default:
			out[fc.Target] = &plan.OnB{Writer: "a writer without a request mark (Connect's REST API or another tool)"}
		}
	}
	return out
}

// warnGoneOffsets warns, on each entry of rep that moved, of the partitions f's connector had
// an offset for on A at the plan and no longer had when its offsets were read again (at the
// stop): B's connector starts them as a new partition. The offsets themselves are not
// compared: they are expected to move on between the plan and the stop.
func warnGoneOffsets(f *plan.File, rep *apply.Report) {
	byName := map[string]*plan.FileConnector{}
	for _, fc := range f.Connectors {
		byName[fc.Name] = fc
	}
	for _, e := range rep.Connectors {
		fc := byName[e.Name]
		if fc == nil || fc.OffsetsNow == nil || e.Connector == nil || e.Outcome == apply.OutcomeSkipped {
			continue
		}
		now := map[string]bool{}
		for _, o := range e.Connector.Offsets {
			b, err := json.Marshal(o.Partition)
			if err == nil {
				now[string(b)] = true
			}
		}
		for _, p := range fc.OffsetsNow.Partitions {
			if !now[p.Partition] {
				e.Warnings = append(e.Warnings, fleet.Textf("partition %s had an offset on A at the plan (%s) and none when its offsets were read again: "+
					"B's connector starts it as a new partition", p.Partition, p.Offset))
			}
		}
	}
}

// driftText is the findings, for a person.
func driftText(ds []plan.Drift) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}
