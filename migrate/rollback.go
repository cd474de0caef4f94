package migrate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/rollback"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/mm2"
)

// RollbackOptions configure Rollback: the cutover report of the migration to roll back, and how
// A and B are reached. Whatever is not given is taken from the report.
type RollbackOptions struct {
	// Cutover is the migration's cutover report (cutover.Read).
	Cutover *cutover.Cutover
	// FromConnectURL and ToConnectURL are A's and B's Connect REST APIs ("": the report's),
	// called with FromHTTPClient and ToHTTPClient (nil: a client with a 30 s timeout), which
	// carry the credentials.
	FromConnectURL, ToConnectURL string
	FromHTTPClient, ToHTTPClient *http.Client
	// From is A's Kafka cluster, optional: the log starts of a sink's partitions (a skip is
	// otherwise "not checked") and MirrorMaker 2's offset syncs of the A->B flow.
	From kafkaio.Options
	// To is B: its brokers ("" : the report's), Connect topics and result topic, transport.
	To target.Target
	// StateTopic is the migration's state topic on B ("": the report's).
	StateTopic string
	// Include and Exclude narrow the report's connectors by Go regexps matching a whole name
	// on A. An Include that matches none of the report's names is asked for as a name, and so
	// refused as not moved by this report.
	Include, Exclude []string
	// Execute rolls back; without it nothing changes (the plan of the rollback).
	Execute bool
	// Timeout bounds each connector's stop barrier on B and its resume on A (0: 2 minutes).
	Timeout time.Duration
	// StablePause and StopPoll are the stop barrier's (0: 1 s and 250 ms).
	StablePause, StopPoll time.Duration
	// Registry knows connector classes (nil: the built-in ones); Logger receives progress (nil
	// discards it).
	Registry *connectors.Registry
	Logger   *slog.Logger
}

// Rollback rolls back the connectors of a migration's cutover report (or, without Execute,
// says what it would do): the report is mapped onto rollback's input (RollbackConnectors), B's
// stop barrier is apply's, a request's pending state is B's result topic's, and sinks moved
// across MirrorMaker 2 go back through its policy and offset syncs. An error wrapping
// ErrPrecheck means nothing was read or changed: a report without B's brokers or REST APIs, or
// A or B unreachable.
func Rollback(ctx context.Context, o RollbackOptions) (*rollback.Report, error) {
	cut := o.Cutover
	if cut == nil {
		return nil, fleet.Precheckf("no cutover report to roll back")
	}
	if o.Registry == nil {
		o.Registry = connectors.Builtin()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.StablePause <= 0 {
		o.StablePause = time.Second
	}
	if o.StopPoll <= 0 {
		o.StopPoll = 250 * time.Millisecond
	}
	if len(o.To.Brokers) == 0 {
		o.To.Brokers = splitBrokers(cut.To)
	}
	if o.FromConnectURL == "" {
		o.FromConnectURL = cut.FromConnectURL
	}
	if o.ToConnectURL == "" {
		o.ToConnectURL = cut.ToConnectURL
	}
	if o.StateTopic == "" {
		o.StateTopic = cut.StateTopic
	}
	if o.To.OffsetsTopic == "" {
		o.To.OffsetsTopic = cut.OffsetsTopic
	}
	if o.To.Transport == nil {
		o.To.Transport = &kafka.Transport{MetadataTTL: time.Second}
	}
	var missing []string
	if len(o.To.Brokers) == 0 {
		missing = append(missing, "B's brokers (the report names none)")
	}
	if o.FromConnectURL == "" {
		missing = append(missing, "A's Connect REST API (the report names none)")
	}
	if o.ToConnectURL == "" {
		missing = append(missing, "B's Connect REST API (the report names none)")
	}
	if o.To.ConfigTopic == "" || o.To.ResultTopic == "" {
		missing = append(missing, "B's Connect config topic and result topic")
	}
	if len(missing) > 0 {
		return nil, fleet.Precheckf("rollback needs %s", strings.Join(missing, ", "))
	}
	names, err := rollbackNames(cut, o.Include, o.Exclude)
	if err != nil {
		return nil, fleet.Precheckf("%v", err)
	}
	restA, err := connectrest.New(o.FromConnectURL, o.FromHTTPClient)
	if err != nil {
		return nil, fleet.Precheckf("A's Connect REST API: %v", err)
	}
	restB, err := connectrest.New(o.ToConnectURL, o.ToHTTPClient)
	if err != nil {
		return nil, fleet.Precheckf("B's Connect REST API: %v", err)
	}
	bKafka := kafkaio.Options{Brokers: o.To.Brokers, Transport: o.To.Transport, Principal: o.To.Principal, Logger: o.Logger}
	input := RollbackConnectors(cut)

	ro := rollback.Options{A: restA, B: restB, StateTopic: o.StateTopic, AKafka: o.From, Names: names, Execute: o.Execute,
		ResumeTimeout: o.Timeout, MigrationID: cut.MigrationID, Logger: o.Logger}
	ro.BTopics.Brokers, ro.BTopics.Transport, ro.BTopics.Principal = o.To.Brokers, o.To.Transport, o.To.Principal
	ro.BTopics.ConfigTopic, ro.BTopics.OffsetsTopic = o.To.ConfigTopic, o.To.OffsetsTopic
	if ro.MM2, err = rollbackMM2(cut, input, o.From, bKafka, o.Logger); err != nil {
		return nil, fleet.Precheckf("MirrorMaker 2: %v", err)
	}

	// B read as migrate reads A: its REST API to stop, its topics and groups for the barrier.
	onB, err := source.Open(ctx, source.Options{ConnectURL: o.ToConnectURL, HTTPClient: o.ToHTTPClient, Registry: o.Registry, Logger: o.Logger,
		Topics: &source.TopicsSource{Brokers: o.To.Brokers, ConfigTopic: o.To.ConfigTopic, OffsetsTopic: o.To.OffsetsTopic,
			Transport: o.To.Transport, Dialer: o.To.Dialer, Principal: o.To.Principal}})
	if err != nil {
		return nil, err
	}
	defer onB.Close()
	offsetsTopics := map[string]string{}
	for _, cc := range cut.Connectors {
		offsetsTopics[cc.TargetName] = cc.OffsetsTopic
	}
	stop := apply.Options{StopTimeout: o.Timeout, StablePause: o.StablePause, StopPoll: o.StopPoll, Registry: o.Registry, Logger: o.Logger}
	ro.StopOnB = func(ctx context.Context, c rollback.Connector) ([]events.ConnectorOffset, error) {
		fc := fleet.Connector{Name: c.TargetName, Type: connectors.Type(c.Type), Group: c.Group}
		if t := offsetsTopics[c.TargetName]; t != "" && t != o.To.OffsetsTopic {
			fc.Config = events.Config{{Key: "offsets.storage.topic", Value: t}}
		}
		return apply.StopBarrier(ctx, stop, onB, fc)
	}

	results, err := apply.OpenResults(ctx, o.To, fleet.RequestSourcePrefix+cut.MigrationID, o.Logger)
	if err != nil {
		return nil, fleet.Precheckf("read B's result topic %q: %v", o.To.ResultTopic, err)
	}
	defer results.Close()
	ro.Pending = func(_ context.Context, c rollback.Connector) (bool, error) {
		if c.RequestID == "" {
			return false, errors.New("no request id known")
		}
		return !results.Answered(c.RequestID), nil
	}
	rep, err := rollback.Run(ctx, ro, input)
	if err != nil {
		return nil, fleet.Precheckf("%v", err)
	}
	return rep, nil
}

// RollbackConnectors maps a cutover report onto rollback's input (the table of the rollback
// package's doc). What a report cannot tell refuses the connector, naming why, rather than
// guess:
//   - a connector the migration stopped on A without A's REST API (no live worker of A held
//     it): its target state on A was never changed, so A's workers would resume it on their
//     own; that is done by hand;
//   - in a report written before request ids were kept (no request_id), a Debezium source:
//     whether its logical name, and so its partitions, changed on the way to B is not known.
//
// A connector without state_on_a is not refused here: the migration's state record on B may
// still give its state before the move, and rollback refuses it when neither does.
func RollbackConnectors(cut *cutover.Cutover) []rollback.Connector {
	out := make([]rollback.Connector, 0, len(cut.Connectors))
	for _, cc := range cut.Connectors {
		c := rollback.Connector{Name: cc.Name, TargetName: cc.TargetName, Type: cc.Type, Group: cc.Group,
			// A sink stopped on A has stopped_on_a_by without stopped_on_a (which says whether
			// A's records are evidence for the verification, a source's matter).
			StoppedOnA: cc.StoppedOnA || cc.StoppedOnABy != "",
			StateOnA:   cc.StateOnA, MigrationID: cut.MigrationID, RequestSource: fleet.RequestSourcePrefix + cut.MigrationID,
			RequestID: cc.RequestID, OperatorManaged: cut.OperatorManaged, Partitions: []rollback.Partition{}}
		if cc.Rekey != nil {
			c.Rekey = &rollback.Rekey{Key: cc.Rekey.Key, From: cc.Rekey.From, To: cc.Rekey.To}
		}
		for _, p := range cc.Partitions {
			tr := rollback.Translation(p.Translation)
			if len(cc.FollowsSources) > 0 {
				tr = rollback.FollowedSources
			}
			c.Partitions = append(c.Partitions, rollback.Partition{Partition: p.Partition, OnA: p.OnA, Placed: p.Placed, Translation: tr})
		}
		switch {
		case cc.StoppedOnABy != "" && cc.StoppedOnABy != apply.StoppedByREST:
			c.Refuse = fmt.Sprintf("the migration stopped it on A without A's REST API (%s): its target state on A is unchanged, "+
				"so A's workers resume it by themselves as they come back; roll it back by hand (docs/migration.md, \"By hand, when rollback refuses\")",
				cc.StoppedOnABy)
		case cc.RequestID == "" && cc.Type == string(connectors.Source) && strings.HasPrefix(cc.Class, "io.debezium."):
			c.Refuse = "the cutover report was written before it kept each connector's re-key: whether this Debezium source's logical name, " +
				"and so its partitions, changed on the way to B is not known; roll it back by hand (docs/migration.md, \"By hand, when rollback refuses\")"
		}
		out = append(out, c)
	}
	return out
}

// rollbackNames are the names on A asked for: none (all of the report) without include and
// exclude; else the report's names the patterns select, and each include that matches none of
// them as a name of its own (rollback refuses it: not moved by this report).
func rollbackNames(cut *cutover.Cutover, include, exclude []string) ([]string, error) {
	if len(include) == 0 && len(exclude) == 0 {
		return nil, nil
	}
	compile := func(exprs []string) ([]*regexp.Regexp, error) {
		var out []*regexp.Regexp
		for _, e := range exprs {
			re, err := regexp.Compile("^(?:" + e + ")$")
			if err != nil {
				return nil, fmt.Errorf("pattern %q: %w", e, err)
			}
			out = append(out, re)
		}
		return out, nil
	}
	in, err := compile(include)
	if err != nil {
		return nil, err
	}
	ex, err := compile(exclude)
	if err != nil {
		return nil, err
	}
	var reportNames []string
	for _, cc := range cut.Connectors {
		reportNames = append(reportNames, cc.Name)
	}
	names := []string{}
	for _, n := range reportNames {
		if (len(in) == 0 || slices.ContainsFunc(in, func(re *regexp.Regexp) bool { return re.MatchString(n) })) &&
			!slices.ContainsFunc(ex, func(re *regexp.Regexp) bool { return re.MatchString(n) }) {
			names = append(names, n)
		}
	}
	for i, re := range in {
		if !slices.ContainsFunc(reportNames, re.MatchString) {
			names = append(names, include[i])
		}
	}
	return names, nil
}

// rollbackMM2 is what carries the report's sinks back across MirrorMaker 2: nil when no sink
// partition crossed it. The report's policy names A's topics; the offset syncs of the A->B
// flow are read on A when A's brokers are given and the report names B's alias.
func rollbackMM2(cut *cutover.Cutover, input []rollback.Connector, from, to kafkaio.Options, logger *slog.Logger) (*rollback.MM2, error) {
	crossed := false
	for _, c := range input {
		for _, p := range c.Partitions {
			switch p.Translation {
			case rollback.Exact, rollback.Replay, rollback.Missing:
				crossed = true
			}
		}
	}
	if !crossed || cut.MM2 == nil {
		return nil, nil // a sink across it without the report's policy: not carried, said per partition
	}
	policy := mm2.Policy{Kind: mm2.PolicyKind(cut.MM2.Policy), SourceAlias: cut.MM2.SourceAlias, TargetAlias: cut.MM2.TargetAlias,
		Separator: cut.MM2.Separator}
	cfg := mm2.Config{Target: to, Source: from, Policy: policy, Logger: logger}
	if len(from.Brokers) > 0 && policy.TargetAlias != "" {
		// MM2's default offset-syncs.topic.location=source: on A, named after B's alias.
		cfg.OffsetSyncs = &mm2.OffsetSyncsLocation{Cluster: from, Topic: policy.OffsetSyncsTopic(policy.TargetAlias)}
	}
	tr, err := mm2.NewTranslator(cfg)
	if err != nil {
		return nil, err
	}
	return &rollback.MM2{Translator: tr, Policy: policy}, nil
}

// splitBrokers is a comma-separated list of brokers, as the report's To holds them.
func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}
