package migrate

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/mm2"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// defaultGrace is MigrateOptions.Grace when it is 0.
const defaultGrace = 30 * time.Second

// defaultWaitReport is MigrateOptions.WaitReport when it is 0.
const defaultWaitReport = 15 * time.Second

// defaultMaxRequestBytes is Target.MaxRequestBytes when it is 0 (the agent's default).
const defaultMaxRequestBytes = 16 << 20

// MigrateOptions configure Migrate.
type MigrateOptions struct {
	Options
	To target.Target
	// MigrationID names the migration; "" derives one from A's cluster id and the selection
	// flags, so the same command run again continues the same migration.
	MigrationID string
	// SelectionKey is the text the derived id hashes besides A's cluster id (the selection
	// and edit flags as given).
	SelectionKey string
	// Concurrency bounds the requests in flight (default 16).
	Concurrency int
	// WaveSize is, with StopSource, how many connectors a wave stops on A and publishes
	// before the next wave starts (waves.go; default Concurrency). A sink that follows its
	// sources is in their wave.
	WaveSize int
	// Timeout bounds the prechecks and each wave (0: none): a wave's stop on A, and its
	// requests' deadline (Timeout after the wave starts publishing), which B's agents honour:
	// past it they write nothing and answer failed. Nothing of a wave is published from its
	// deadline on; results are awaited until Grace after it, and a connector still without
	// one is failed. Without StopSource the selection is one wave. With StopSource, 0 is
	// refused: a run that stopped connectors on A must not wait forever. Cancelling ctx ends
	// the run at once: the requests in flight are OutcomePending, and the connectors of the
	// waves not started are skipped, untouched on A.
	Timeout time.Duration
	// Grace is how long past the requests' deadline results are awaited (default 30 s): a
	// request that B's agent took up just before its deadline finishes within it. It also
	// absorbs clock skew between this machine and B's agents.
	Grace time.Duration
	// DryRun publishes dry-run requests: B's agents plan and change nothing.
	DryRun bool
	// Progress is told about each connector as its outcome is known; nil for none.
	Progress apply.Progress
	// WaitReport is how often Progress is told, while results are awaited, how many are in
	// (default 15 s).
	WaitReport time.Duration
	// Strimzi, when not nil, migrates into a Connect cluster the Strimzi operator manages:
	// offsets only on B, and a KafkaConnector manifest per connector (strimzi.go).
	Strimzi *strimzi.Target
	// Verify, when not 0, bounds the verification of the cutover that follows a migration
	// (not a dry run, nor one into an operator-managed B, whose connectors start only once
	// their manifests are applied): VerifyCutover reads on B what each moved connector
	// committed after the offsets placed, until every partition is decided or Verify has
	// passed (Migrate's cutover report). 0, the default, verifies nothing: the cutover report
	// then lists the partitions placed, waiting.
	Verify time.Duration
	// VerifyPoll is the pause between two reads of B while verifying (default 1 s).
	VerifyPoll time.Duration
	// VerifyProgress, when not nil, is told what the verification waits for, and the counts
	// per verdict while it waits (VerifyCutoverOptions.Progress).
	VerifyProgress func(cutover.Waiting)
	// Words spell the texts a plan file holds (Plan, Apply) in its reader's terms; nil:
	// fleet.GoWords.
	Words fleet.Words
	// Checkpoint, when not nil, is told after each wave the report of the run so far and its
	// cutover report (nil for a dry run), not yet verified: the connectors of the waves done,
	// with their outcomes, and how many are still to come (Report.Unfinished). They are the
	// caller's to keep (to write them as the run goes, so that a run killed before its end
	// leaves them); Migrate's own results replace them at the end.
	Checkpoint func(*apply.Report, *cutover.Cutover)
}

// Migrate exports the selected connectors of A and creates them on B through B's agents, then
// returns the report and, for a migration that is not a dry run, its cutover report (verified
// with Verify). An error wrapping ErrPrecheck means nothing was stopped or published.
func Migrate(ctx context.Context, opts MigrateOptions) (*apply.Report, *cutover.Cutover, error) {
	return opts.run(ctx, nil)
}

// staged is what a run has read and planned before its first wave: A, A's identity, B, and
// the plan.
type staged struct {
	// opts are the run's options, defaults filled in and the migration id derived.
	opts     MigrateOptions
	src      *source.A
	clusterA fleet.Cluster
	b        *target.B
	plan     *plan.Plan
	planOpts plan.Options
	// failedStep is the failed step of a connector the hook gave a Problem; extra are
	// skipped entries the hook adds for connectors the plan does not hold (a plan file's
	// connector gone from A), reported after the waves.
	failedStep map[string]string
	extra      []*apply.Entry
}

// stageHook, when not nil, sees a run's plan before its first wave: it may refuse the run (an
// error) or give connectors a Problem (they are then skipped), and add entries. before is
// called with the plan's options before the plan is built, to narrow them.
type stageHook struct {
	before  func(po *plan.Options)
	planned func(ctx context.Context, st *staged) error
	// done sees the run's report once its waves are over (before its verification).
	done func(ctx context.Context, st *staged, rep *apply.Report) error
}

// run is Migrate, with hook (nil for none).
func (opts MigrateOptions) run(ctx context.Context, hook *stageHook) (*apply.Report, *cutover.Cutover, error) {
	started := time.Now().UTC()
	if err := opts.validateTarget(); err != nil {
		return nil, nil, err
	}
	opts.setDefaults()
	interrupt := ctx // cancelled by the caller only: tells an interrupt from the deadline
	if opts.Timeout > 0 {
		// The prechecks' bound; each wave has its own (waves.go).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	stopPlanned := opts.setDryRun()
	opts.Options.defaults()
	if err := opts.Options.validate(); err != nil {
		return nil, nil, err
	}
	po := plan.Options{Hazard: opts.hazardOptions(stopPlanned), AllowEmpty: opts.AllowEmpty, KubernetesNames: opts.Strimzi != nil}
	if opts.Strimzi != nil {
		po.ExistingOnB = func(ctx context.Context) (map[string]map[string]string, error) {
			return offsetstore.ReadConnectorConfigs(ctx, kafkaio.Options{Brokers: opts.To.Brokers, Transport: opts.To.Transport, Logger: opts.Logger, Principal: opts.To.Principal},
				opts.To.ConfigTopic)
		}
		po.Declared = opts.Strimzi.Declared(opts.Registry)
	}
	st, stateOps := opts.stateStore()
	so := opts.sourceOptions()
	so.States = &st
	src, err := source.Open(ctx, so)
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	a, err := src.Cluster(ctx)
	if err != nil {
		return nil, nil, fleet.Precheckf("A's cluster id: %v", err)
	}
	clusterA := a.KafkaClusterID
	configOps := opts.configOps()
	if opts.MigrationID == "" {
		opts.MigrationID = fleet.DeriveMigrationID(clusterA, opts.SelectionKey)
	}
	b, err := target.Open(ctx, opts.To, a, configOps, stateOps, fleet.RequestSourcePrefix+opts.MigrationID, opts.Logger)
	if err != nil {
		return nil, nil, err
	}
	results, err := apply.OpenResults(ctx, opts.To, fleet.RequestSourcePrefix+opts.MigrationID, opts.Logger)
	if err != nil {
		return nil, nil, fleet.Precheckf("read B's result topic %q: %v", opts.To.ResultTopic, err)
	}
	defer results.Close()
	if err := src.OpenStates(ctx, clusterA, opts.MigrationID); err != nil {
		return nil, nil, err
	}

	if hook != nil && hook.before != nil {
		hook.before(&po)
	}
	p, err := plan.Build(ctx, src, &hazard.B{Target: opts.To, REST: b.REST}, po)
	if err != nil {
		return nil, nil, err
	}
	sg := &staged{opts: opts, src: src, clusterA: a, b: b, plan: p, planOpts: po}
	if hook != nil && hook.planned != nil {
		if err := hook.planned(ctx, sg); err != nil {
			return nil, nil, err
		}
	}
	entries := apply.EntriesOf(p)
	for _, e := range entries {
		if step := sg.failedStep[e.Name]; step != "" {
			e.FailedStep = step // skipped with its Problem (apply.Build)
		}
	}
	rep := &apply.Report{MigrationID: opts.MigrationID, From: src.Describe(), To: strings.Join(opts.To.Brokers, ","),
		Started: started, Connectors: entries}
	ao := opts.applyOptions()
	if opts.Checkpoint != nil {
		ao.WaveDone = func(d apply.Done) { opts.checkpoint(rep, d, a.KafkaClusterID) }
	}
	ap := apply.New(ao, src, p.Blocked, results, b.REST)
	rep.Publishing = ap.RunWaves(interrupt, entries)
	rep.Connectors = append(rep.Connectors, sg.extra...)
	if hook != nil && hook.done != nil {
		if err := hook.done(ctx, sg, rep); err != nil {
			return rep, nil, err
		}
	}
	if opts.Strimzi != nil && !opts.DryRun {
		if err := opts.writeStrimziManifests(rep, entries); err != nil {
			return rep, nil, err
		}
	}
	rep.Finished = time.Now().UTC()
	if opts.DryRun {
		return rep, nil, nil
	}
	return rep, opts.verifyCutover(interrupt, rep, a.KafkaClusterID), nil
}

// setDefaults fills in the options left at zero, B's transport included.
func (o *MigrateOptions) setDefaults() {
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.WaveSize <= 0 {
		o.WaveSize = o.Concurrency
	}
	if o.To.MaxRequestBytes <= 0 {
		o.To.MaxRequestBytes = defaultMaxRequestBytes
	}
	if o.Grace <= 0 {
		o.Grace = defaultGrace
	}
	if o.WaitReport <= 0 {
		o.WaitReport = defaultWaitReport
	}
	if o.To.Transport == nil {
		// Not kafka-go's shared default: it caches metadata for 6 s and would not see topics
		// an agent created just before.
		o.To.Transport = &kafka.Transport{MetadataTTL: time.Second}
	}
}

// setDryRun keeps a dry run from stopping A's connectors: it plans their stop instead, and
// says so (stopPlanned).
func (o *MigrateOptions) setDryRun() (stopPlanned bool) {
	if o.DryRun && o.StopSource {
		// A dry run changes nothing: not on B, and not on A either.
		o.StopSource = false
		if o.Logger != nil {
			fleet.Warn(o.Logger, fleet.Textf("a plan stops nothing: connectors on A are not stopped while planning (%s); their offsets are read as they are now, and again at the stop", fleet.StopSource))
		}
		return true
	}
	return false
}

// applyOptions are what carrying out the plan takes of o.
func (o *MigrateOptions) applyOptions() apply.Options {
	ao := o.Options.applyOptions()
	ao.To, ao.MigrationID = o.To, o.MigrationID
	ao.Concurrency, ao.WaveSize, ao.Timeout, ao.Grace = o.Concurrency, o.WaveSize, o.Timeout, o.Grace
	ao.DryRun, ao.Progress, ao.WaitReport, ao.OffsetsOnly = o.DryRun, o.Progress, o.WaitReport, o.Strimzi != nil
	return ao
}

// stateStore returns the migration state store (on B's brokers unless given) and the
// permissions its topic needs, checked with B's when it is on B.
func (o *MigrateOptions) stateStore() (source.StateStore, kafkaio.TopicOps) {
	st := source.StateStore{}
	if o.States != nil {
		st = *o.States
	}
	// The state topic's permissions are checked with B's when it is on B.
	stateOps := kafkaio.TopicOps{Topic: st.TopicOrDefault(), Ops: []string{kafkaio.OpRead}}
	if o.StopSource {
		stateOps.Ops = append(stateOps.Ops, kafkaio.OpWrite)
	}
	if len(st.Brokers) == 0 {
		st.Brokers, st.Transport, st.Principal = o.To.Brokers, o.To.Transport, o.To.Principal
	} else if !slices.Equal(st.Brokers, o.To.Brokers) {
		stateOps = kafkaio.TopicOps{}
	}
	return st, stateOps
}

// configOps returns the operations the precheck needs on B's config topic: into an
// operator-managed B, its config topic is read (refuseExisting).
func (o *MigrateOptions) configOps() []string {
	if o.Strimzi != nil {
		return []string{kafkaio.OpRead}
	}
	return []string{kafkaio.OpDescribe}
}

// StepWriteManifest is the report's failed step of a connector whose manifest could not be
// written (its offsets are on B).
const StepWriteManifest = "write_manifest"

// writeStrimziManifests writes the KafkaConnector manifests of the entries into an operator-managed
// B and says in rep.Next how to apply them.
func (o *MigrateOptions) writeStrimziManifests(rep *apply.Report, entries []*apply.Entry) error {
	n, err := writeManifestsOf(o.Strimzi, entries, o.MigrationID, o.Registry)
	if err != nil {
		return err
	}
	rep.Next = fleet.Textf("%d KafkaConnector manifests for the Connect cluster %s are in %s: applying them (kubectl apply -f %s, "+
		"or a commit that Argo CD or Flux syncs) completes the migration; each connector starts at the offsets placed. "+
		"Then check: %s", n, o.Strimzi.Cluster, o.Strimzi.Dir, o.Strimzi.Dir, fleet.Next{Verb: fleet.VerbVerifyManifests, Args: []string{o.Strimzi.Dir}})
	if o.Strimzi.Secret != "" {
		rep.Next = fleet.Textf("First apply the Secret %s that the manifests reference (kubectl apply -f %s; it holds the values in clear text: keep it out of Git). %v",
			o.Strimzi.Secret, o.Strimzi.SecretFile, rep.Next)
	}
	return nil
}

// writeManifestsOf writes the manifest of every entry whose offsets are on B (succeeded), and
// PlacedFile; an entry whose manifest cannot be written fails at StepWriteManifest. It returns
// the number written.
func writeManifestsOf(s *strimzi.Target, entries []*apply.Entry, migrationID string, reg *connectors.Registry) (int, error) {
	var cs []strimzi.Connector
	var of []*apply.Entry
	for _, e := range entries {
		if e.Outcome != apply.OutcomeSucceeded || e.Body == nil {
			continue
		}
		cs = append(cs, strimzi.Connector{Name: e.Name, Target: e.Body.Name, Type: e.Type, State: e.Body.InitialState,
			Config: e.Body.Config, Offsets: e.Body.InitialOffsets})
		of = append(of, e)
	}
	written, err := s.WriteManifests(cs, migrationID, reg)
	n := 0
	for i, w := range written {
		e := of[i]
		if w.Err != nil {
			e.Outcome, e.FailedStep, e.Message = apply.OutcomeFailed, StepWriteManifest, fleet.Textf("%v", w.Err)
			continue
		}
		e.Manifest = w.Path
		e.Warnings = append(e.Warnings, w.Warnings...)
		n++
	}
	return n, err
}

// verifyCutover is rep's cutover report, the partitions placed, verified on B with Verify (not
// into an operator-managed B); an error of the verification is in the cutover.
func (o *MigrateOptions) verifyCutover(interrupt context.Context, rep *apply.Report, fromClusterID string) *cutover.Cutover {
	var clusterA string
	if o.Topics != nil {
		clA := kafkaio.NewClient(kafkaio.Options{Brokers: o.Topics.Brokers, Transport: o.Topics.Transport, Principal: o.Topics.Principal})
		clusterA, _ = kafkaio.ClusterID(interrupt, clA) // "": the verification asks it
	}
	cut := o.cutoverOf(rep, clusterA, fromClusterID)
	cut.ReadHistoryOnA(interrupt, o.Topics, rep, o.Registry)
	clB := kafkaio.NewClient(kafkaio.Options{Brokers: o.To.Brokers, Transport: o.To.Transport, Principal: o.To.Principal})
	clB.Timeout = 30 * time.Second
	if id, err := kafkaio.ClusterID(interrupt, clB); err == nil { // else the verification records it
		cut.ToClusterID = id
	}
	if o.Verify > 0 && o.Strimzi == nil {
		vo := cutover.VerifyOptions{Brokers: o.To.Brokers, Transport: o.To.Transport, Principal: o.To.Principal,
			Timeout: o.Verify, Poll: o.VerifyPoll, Registry: o.Registry, Progress: o.VerifyProgress}
		if o.Topics != nil {
			vo.FromBrokers, vo.FromTransport, vo.FromPrincipal = o.Topics.Brokers, o.Topics.Transport, o.Topics.Principal
		}
		err := cutover.Verify(interrupt, cut, vo)
		if err != nil {
			cut.Error = err.Error()
			o.Logger.Warn("cannot verify the cutover on B", "err", err)
		}
	}
	return cut
}

// describeForRollback writes into cut what a rollback of the migration takes from it: the
// Connect REST APIs (without userinfo), the state topic, MirrorMaker 2's policy, and whether B
// is operator-managed.
func (o *MigrateOptions) describeForRollback(cut *cutover.Cutover) {
	cut.FromConnectURL, cut.ToConnectURL = withoutUserinfo(o.ConnectURL), withoutUserinfo(o.To.ConnectURL)
	if o.StopSource {
		st, _ := o.stateStore()
		if slices.Equal(st.Brokers, o.To.Brokers) {
			cut.StateTopic = st.TopicOrDefault()
		}
	}
	if o.MM2 != nil {
		p := o.MM2.Policy
		kind := p.Kind
		if kind == "" {
			kind = mm2.PolicyDefault
		}
		cut.MM2 = &cutover.MM2{SourceAlias: p.SourceAlias, TargetAlias: p.TargetAlias, Policy: string(kind), Separator: p.Separator}
	}
	cut.OperatorManaged = o.Strimzi != nil
}

// withoutUserinfo is URL s without its user and password (credentials come from the
// --*-connect-config files, never from a report); "" for "" or a URL that does not parse.
func withoutUserinfo(s string) string {
	u, err := url.Parse(s)
	if s == "" || err != nil {
		return ""
	}
	u.User = nil
	return u.String()
}

// checkpoint tells Checkpoint the report of the run so far, after a wave (d), and its cutover
// report: rep's header with the waves' entries as they are now.
func (o *MigrateOptions) checkpoint(rep *apply.Report, d apply.Done, fromClusterID string) {
	snap := &apply.Report{MigrationID: rep.MigrationID, From: rep.From, To: rep.To, Started: rep.Started,
		Connectors: d.Entries, Unfinished: d.Unfinished}
	var cut *cutover.Cutover
	if !o.DryRun {
		// Neither A's cluster id (the verification asks it) nor A's history of each
		// source's offsets (read once, at the end) is read for a checkpoint.
		cut = o.cutoverOf(snap, "", fromClusterID)
	}
	o.Checkpoint(snap, cut)
}

// cutoverOf is the cutover report of rep, before A's history and the verification: with
// StopSource, how each connector was stopped on A (clusterA, A's cluster id as the workers'
// check reads it, "" unknown), and what a rollback takes from it (fromClusterID, A's cluster
// id as the migration read it).
func (o *MigrateOptions) cutoverOf(rep *apply.Report, clusterA, fromClusterID string) *cutover.Cutover {
	cut := cutover.New(rep, o.To.OffsetsTopic, o.Registry)
	o.describeForRollback(cut)
	cut.FromClusterID = fromClusterID
	byTarget := map[string]*apply.Entry{}
	for _, e := range rep.Connectors {
		byTarget[e.TargetName] = e
	}
	for _, cc := range cut.Connectors {
		// With StopSource every connector published was stopped on A before its offsets
		// were read (the stop barrier, or no worker of A holding it), or skipped.
		cc.StoppedOnA = o.StopSource && cc.Type != string(connectors.Sink)
		if e := byTarget[cc.TargetName]; cc.StoppedOnA && cc.StoppedOnABy != apply.StoppedByREST && e != nil && e.Connector != nil && o.Topics != nil {
			cc.WorkersOfA = &cutover.WorkersCheck{Brokers: o.Topics.Brokers, ClusterID: clusterA, ConfigTopic: o.Topics.ConfigTopic, RecordAt: e.RecordAt}
		}
	}
	return cut
}

func (o *MigrateOptions) validateTarget() error {
	var errs []fleet.Text
	if len(o.To.Brokers) == 0 {
		errs = append(errs, fleet.Textf("%s is required", fleet.ToBrokers))
	}
	if o.To.RequestTopic == "" || o.To.ResultTopic == "" {
		errs = append(errs, fleet.Plain("the request and result topics must be set"))
	}
	if o.To.ConfigTopic == "" || o.To.OffsetsTopic == "" {
		errs = append(errs, fleet.Plain("B's Connect config and offsets topics must be set"))
	}
	if _, err := o.To.Compression.Codec(); err != nil {
		errs = append(errs, fleet.Textf("%v", err))
	}
	if o.StopSource && !o.DryRun && o.Timeout <= 0 {
		errs = append(errs, fleet.Textf("%s with %s: a run that stops connectors on A must end; give %s", fleet.StopSource, fleet.Give{Setting: fleet.Timeout, Value: "0"}, fleet.Timeout))
	}
	if o.Strimzi != nil {
		errs = append(errs, o.Strimzi.Validate()...)
	}
	if !fleet.ValidMigrationID(o.MigrationID) {
		errs = append(errs, fleet.Textf("%s %q: no '/' or spaces", fleet.MigrationID, o.MigrationID))
	}
	if len(errs) > 0 {
		return fleet.Precheckf("%v", fleet.Join(errs, "; "))
	}
	return nil
}
