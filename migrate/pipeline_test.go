package migrate

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/mm2"
)

// pipelineConnect is A with two pipelines (a Debezium source and the sink of its table's
// topic; a FileStream source and the sink of its topic), a topics.regex sink over Debezium's
// topics, a source whose records an SMT reroutes, and an unrelated sink.
func pipelineConnect(t *testing.T) *fakeConnect {
	sink := func(name string, kv ...string) *fakeConnector {
		cfg := map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": "out", "name": name}
		for i := 0; i+1 < len(kv); i += 2 {
			cfg[kv[i]] = kv[i+1]
		}
		return &fakeConnector{typ: "sink", state: fleet.StateRunning, stopAt: -1, config: cfg}
	}
	return &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"dbz-src": {typ: "source", state: fleet.StateRunning, stopAt: -1, topics: []string{"shop.public.items"},
			config: map[string]string{"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "shop",
				"database.password": "pw-secret-1", "name": "dbz-src"}},
		"items-sink": sink("items-sink", "topics", "shop.public.items"),
		"file-src": {typ: "source", state: fleet.StateRunning, stopAt: -1, // nothing written yet: not tracked
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "in", "topic": "lines", "name": "file-src"}},
		"lines-sink": sink("lines-sink", "topics", "lines"),
		"regex-sink": sink("regex-sink", "topics.regex", `shop\.public\..*`),
		"java-regex": sink("java-regex", "topics.regex", `shop\..*+`), // possessive: Java only
		// Java intersects the classes; Go reads "&&[^x" as class members and wants a "]" after.
		"meet-sink": sink("meet-sink", "topics.regex", `[a-z&&[^x]]+\.public\..*`),
		// \b is Java's, and javaregex does not evaluate it (its meaning changed in Java 19).
		"undecided-sink": sink("undecided-sink", "topics.regex", `\bshop\.public\..*`),
		// A RegexRouter sends its records to "cooked": only the topic tracking knows it.
		"routed-src": {typ: "source", state: fleet.StateRunning, stopAt: -1, topics: []string{"cooked"},
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "r", "topic": "raw",
				"transforms": "route", "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
				"transforms.route.regex": ".*", "transforms.route.replacement": "cooked", "name": "routed-src"}},
		"cooked-sink": sink("cooked-sink", "topics", "cooked"),
		"other-sink":  sink("other-sink", "topics", "elsewhere"),
	}}
}

func TestPipelineAcrossRenamingPolicyRefused(t *testing.T) {
	brokers := startKfake(t)
	tests := []struct {
		name     string
		policy   mm2.PolicyKind
		tracking bool
		include  string
		stop     bool
		// skipped maps each refused connector to what its message must contain.
		skipped map[string][]string
	}{
		{name: "default policy, topic tracking", policy: mm2.PolicyDefault, tracking: true,
			skipped: map[string][]string{
				"items-sink": {`pipeline with source "dbz-src"`, `the moved sink "items-sink" would read A.shop.public.items on B`,
					`the moved source "dbz-src" writes shop.public.items on B`, "(read from A's topic tracking, GET /connectors/dbz-src/topics)",
					"ReplicationPolicy identity", "SinkFollowsSource"},
				"dbz-src":    {`pipeline with sink "items-sink", skipped with it`},
				"lines-sink": {`the moved sink "lines-sink" would read A.lines on B`, `the moved source "file-src" writes lines on B (read from its config's topic)`},
				"file-src":   {`pipeline with sink "lines-sink"`},
				// Through the tracked name and through Debezium's prefix.
				"regex-sink":  {`would read A.shop.public.items, A.shop.* on B`, `source "dbz-src" writes shop.public.items, shop.* on B (read from A's topic tracking, GET /connectors/dbz-src/topics and its config's topic.prefix)`},
				"cooked-sink": {`would read A.cooked on B`, `source "routed-src" writes cooked on B (read from A's topic tracking`},
				"routed-src":  {`pipeline with sink "cooked-sink"`},
				// A possessive quantifier, Java's: evaluated as Java does.
				"java-regex": {`the moved sink "java-regex" would read A.shop.public.items, A.shop.* on B`},
				"meet-sink":  {`the moved sink "meet-sink" would read A.shop.public.items, A.shop.* on B`},
				// Not decided: refused, with the pattern and why.
				"undecided-sink": {`pipeline with source "dbz-src"`, `whether the moved sink "undecided-sink" reads what the moved source "dbz-src" writes (shop.public.items, shop.*, read from`,
					`cannot be decided: its topics.regex is not evaluated as Java would: the word boundaries \b and \B`, `/\bshop\.public\..*/`,
					"ReplicationPolicy identity", "leave one of the two out of this run (Exclude)"},
			}},
		{name: "topic tracking disabled: the config alone", policy: mm2.PolicyDefault,
			skipped: map[string][]string{
				"items-sink": {`would read A.shop.public.items on B`, "(read from its config's topic.prefix)"},
				"dbz-src":    {`pipeline with sink "items-sink"`},
				"lines-sink": {`would read A.lines on B`}, "file-src": {`pipeline with sink "lines-sink"`},
				"regex-sink": {`would read A.shop.* on B`},
				"java-regex": {`would read A.shop.* on B`}, "meet-sink": {`would read A.shop.* on B`},
				// The rerouted topic is not in the config: not seen.
				"undecided-sink": {`whether the moved sink "undecided-sink" reads what the moved source "dbz-src" writes (shop.*, read from its config's topic.prefix) cannot be decided`},
				// Nothing else refuses it: whether the undecided sink reads "raw" is not known either.
				"routed-src": {`pipeline with sink "undecided-sink", skipped with it`, `writes (raw, read from its config's topic) cannot be decided`},
			}},
		{name: "identity policy keeps the pipelines", policy: mm2.PolicyIdentity, tracking: true, skipped: map[string][]string{}},
		{name: "refused before anything is stopped", policy: mm2.PolicyDefault, tracking: true, include: "dbz-src|items-sink", stop: true,
			skipped: map[string][]string{"items-sink": {`pipeline with source "dbz-src"`}, "dbz-src": {`pipeline with sink "items-sink"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fc := pipelineConnect(t)
			fc.trackingOff = !tt.tracking
			policy := mm2.Policy{Kind: tt.policy, SourceAlias: "A"}
			tr, err := mm2.NewTranslator(mm2.Config{Target: kafkaio.Options{Brokers: brokers}, Policy: policy})
			require.NoError(t, err)
			var logs bytes.Buffer
			sel, err := source.NewSelection(source.SelectionFlags{Include: []string{tt.include}})
			if tt.include == "" {
				sel, err = source.NewSelection(source.SelectionFlags{})
			}
			require.NoError(t, err)
			opts := Options{ConnectURL: fc.serve(t), Selection: sel, SinkOffsets: fleet.SinkOffsetsTranslate,
				MM2:    &fleet.MM2{Translator: tr, Policy: policy, AllowReplay: true},
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			if tt.stop {
				opts.StopSource, opts.States = true, &source.StateStore{Brokers: brokers}
			}
			rep, err := Export(ctx, opts)
			require.NoError(t, err)
			got := map[string]string{}
			for _, e := range rep.Connectors {
				if e.Outcome == apply.OutcomeSkipped {
					got[e.Name] = e.Message.String()
					require.Nil(t, e.Body)
				}
				require.NotContains(t, e.Message.String(), "pw-secret-1")
			}
			require.Len(t, got, len(tt.skipped), "skipped: %v", got)
			for name, parts := range tt.skipped {
				for _, p := range parts {
					require.Contains(t, got[name], p, name)
				}
			}
			fc.mu.Lock()
			defer fc.mu.Unlock()
			require.Empty(t, fc.stops, "a refused pair is not stopped")
		})
	}
}
