package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/plan"
)

// cmdMigratePlan is `migrate plan -o PLAN`: today's dry run, written as a plan file for review.
// Exit status: 0 nothing refused, 1 a connector refused, 2 bad flags, an unreachable cluster
// or a refused precheck (no file written).
func cmdMigratePlan(args []string, stdout, stderr io.Writer) int {
	var c migrateCmd
	var out string
	fs := verbFlagSet("plan", &c, func(fs *flag.FlagSet) {
		fs.StringVar(&out, "o", "", "write the plan to this file (YAML, mode 0600)")
	})
	if _, _, code, done := parseVerb(fs, args, "", stdout, stderr); done {
		return code
	}
	if out == "" {
		fmt.Fprintln(stderr, "offsetagent migrate plan: -o PLAN is required")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	toHTTP, err := c.mf.toConnectClient(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate plan: %s\n", errorText(err))
		return 2
	}
	if code, done := c.sf.run(ctx, *c.mf.toConnectURL, toHTTP, stdout, stderr); done {
		return code
	}
	*c.mf.dry = true
	mo, code, done := c.options(ctx, "migrate plan", toHTTP, stderr)
	if done {
		return code
	}
	f, rep, err := migrate.Plan(ctx, mo)
	if err != nil {
		return fleetError(stderr, "migrate plan", err)
	}
	f.CreatedBy = fmt.Sprintf("offsetagent %s (%s)", version, commit)
	c.f.fillPlan(f)
	f.Settings.AllowNoAgent = *c.mf.allowNoAgent
	if st := mo.Strimzi; st != nil {
		f.Strimzi = &plan.StrimziSettings{Cluster: st.Cluster, Namespace: st.Namespace, APIVersion: st.APIVersion, Manifests: st.Dir, Secret: st.Secret}
	}
	if err := f.Write(out); err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate plan: %s\n", errorText(err))
		return 2
	}
	_ = writeTable(stdout, rep)
	fmt.Fprintf(stdout, "plan %s written to %s: %d to move, %d refused, %d warnings; review it, then: offsetagent migrate apply %s\n",
		f.MigrationID, out, f.Summary.ToMove, f.Summary.Refused, f.Summary.Warnings, out)
	if f.Summary.Refused > 0 {
		return 1
	}
	return 0
}

// fillPlan writes the settings and the selection of the flags into the plan file; a --set of
// a secret key (by its name, or by the class of a planned connector) is written without its
// value, which apply is given again.
func (f *fleetFlags) fillPlan(p *plan.File) {
	p.Settings = plan.Settings{StopSource: f.stopSource, InitialState: strings.ToUpper(f.initialState), SinkOffsets: f.sinkMode(),
		SinkFollowsSource: f.sinkFollowsSource, AllowEmpty: f.allowEmpty, AllowUnreadable: f.allowUnreadable,
		MM2SourceAlias: f.mm2SourceAlias, MM2TargetAlias: f.mm2TargetAlias, ReplicationPolicy: f.replicationPolicy,
		ReplicationSeparator: f.replicationSeparator, Exact: f.exact, AllowReplay: f.allowReplay, CheckpointMaxAge: f.checkpointMaxAge,
		MM2ConfigTopic: slices.Clone([]string(f.mm2ConfigTopics))}
	secret := func(key string) bool {
		if events.IsSecretKey(key) {
			return true
		}
		for _, c := range p.Connectors {
			if slices.Contains(c.SecretKeys, key) {
				return true
			}
		}
		return false
	}
	sel := plan.SelectionFile{Include: nonNil(f.include), Exclude: nonNil(f.exclude), Rename: nonNil(f.rename), Unset: nonNil(f.unset),
		MapValue: nonNil(f.mapValue), KeepA: nonNil(f.keepA), Set: []plan.SetEdit{}}
	for _, kv := range f.set {
		k, v, _ := strings.Cut(kv, "=")
		if secret(k) {
			sel.Set = append(sel.Set, plan.SetEdit{Key: k, ValueAtApply: true})
			continue
		}
		sel.Set = append(sel.Set, plan.SetEdit{Key: k, Value: v})
	}
	p.Selection = sel
}

func nonNil(l listFlag) []string {
	if l == nil {
		return []string{}
	}
	return slices.Clone([]string(l))
}
