package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/plan"
)

// cmdMigrateApply is `migrate apply PLAN`: carry out a reviewed plan, exactly: the addresses,
// settings and selection are the plan's; the flags give credentials, timing, the values of
// the secret --set edits the plan marks value_at_apply, and where the reports go. Exit status
// as migrate's.
func cmdMigrateApply(args []string, stdout, stderr io.Writer) int {
	var c migrateCmd
	fs := verbFlagSet("apply", &c, nil)
	path, _, code, done := parseVerb(fs, args, "PLAN", stdout, stderr)
	if done {
		return code
	}
	if path == "" {
		fmt.Fprintln(stderr, "offsetagent migrate apply: the plan file is required: offsetagent migrate apply PLAN")
		return 2
	}
	f, err := plan.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate apply: %s\n", errorText(err))
		return 2
	}
	if err := c.fromPlan(f); err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate apply: %s: %s\n", path, errorText(err))
		return 2
	}
	if c.vf.cutoverReport == "" {
		c.vf.cutoverReport = path + ".cutover.json"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	toHTTP, err := c.mf.toConnectClient(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate apply: %s\n", errorText(err))
		return 2
	}
	mo, code, done := c.options(ctx, "migrate apply", toHTTP, stderr)
	if done {
		return code
	}
	rep, cut, drifts, err := migrate.Apply(ctx, mo, f)
	for _, d := range drifts {
		fmt.Fprintf(stderr, "offsetagent migrate apply: drift since the plan: %s\n", d)
	}
	if err != nil {
		return fleetError(stderr, "migrate apply", err)
	}
	code = finishReport(rep, c.f.report, stdout, stderr)
	code = worseExit(code, c.vf.finish(cut, mo.Verify > 0 && mo.Strimzi == nil, stdout, stderr))
	if cut != nil {
		fmt.Fprintf(stdout, "cutover report: %s (then: offsetagent migrate verify %s)\n", c.vf.cutoverReport, c.vf.cutoverReport)
	}
	return code
}

// fromPlan sets the flags the plan decides (addresses, settings, selection and edits) from
// f; the --set flags given must be exactly the values of the secret edits f marks
// value_at_apply.
func (c *migrateCmd) fromPlan(f *plan.File) error {
	given := map[string]string{}
	for _, kv := range c.f.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--set %q: not KEY=VALUE", kv)
		}
		given[k] = v
	}
	var set listFlag
	var missing []string
	for _, s := range f.Selection.Set {
		if !s.ValueAtApply {
			set = append(set, s.Key+"="+s.Value)
			continue
		}
		v, ok := given[s.Key]
		if !ok {
			missing = append(missing, s.Key)
			continue
		}
		delete(given, s.Key)
		set = append(set, s.Key+"="+v)
	}
	if len(missing) > 0 {
		return fmt.Errorf("the plan's --set of %s takes its value at apply (a secret the plan does not hold): give --set %s=VALUE",
			strings.Join(missing, ", "), missing[0])
	}
	if len(given) > 0 {
		return fmt.Errorf("--set %s: the plan has no secret edit of that key to take a value for (apply does the plan's edits only; re-plan to change them)",
			strings.Join(slices.Sorted(maps.Keys(given)), ", "))
	}
	ff, mf := &c.f, &c.mf
	ff.fromBrokers, ff.fromConfigTopic, ff.fromOffsetsTopic, ff.fromConnectURL = strings.Join(f.From.Brokers, ","), f.From.ConfigTopic, f.From.OffsetsTopic, f.From.ConnectURL
	ff.toBrokers, *mf.toConfigTopic, *mf.toOffsetsTopic, *mf.toConnectURL = strings.Join(f.To.Brokers, ","), f.To.ConfigTopic, f.To.OffsetsTopic, f.To.ConnectURL
	*mf.requestTopic, *mf.resultTopic = f.To.RequestTopic, f.To.ResultTopic
	if f.To.StateTopic != "" {
		ff.stateTopic = f.To.StateTopic
	}
	*mf.migrationID = f.MigrationID
	s := f.Settings
	ff.stopSource, ff.initialState, ff.sinkOffsets, ff.sinkFollowsSource = s.StopSource, s.InitialState, s.SinkOffsets, s.SinkFollowsSource
	ff.allowEmpty, ff.allowUnreadable, *mf.allowNoAgent = s.AllowEmpty, s.AllowUnreadable, s.AllowNoAgent
	ff.mm2SourceAlias, ff.mm2TargetAlias, ff.replicationPolicy, ff.replicationSeparator = s.MM2SourceAlias, s.MM2TargetAlias, s.ReplicationPolicy, s.ReplicationSeparator
	ff.exact, ff.allowReplay, ff.checkpointMaxAge, ff.mm2ConfigTopics = s.Exact, s.AllowReplay, s.CheckpointMaxAge, listFlag(slices.Clone(s.MM2ConfigTopic))
	sel := f.Selection
	ff.include, ff.exclude, ff.rename, ff.set = listFlag(sel.Include), listFlag(sel.Exclude), listFlag(sel.Rename), set
	ff.unset, ff.mapValue, ff.keepA = listFlag(sel.Unset), listFlag(sel.MapValue), listFlag(sel.KeepA)
	if st := f.Strimzi; st != nil {
		c.sf.cluster, c.sf.namespace, c.sf.apiVersion, c.sf.manifests, c.sf.secret = st.Cluster, st.Namespace, st.APIVersion, st.Manifests, st.Secret
	}
	return nil
}
