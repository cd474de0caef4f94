package mm2

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/javaregex"
)

func TestRemoteTopic(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		topic  string
		want   string
	}{
		{name: "default", policy: Policy{SourceAlias: "A"}, topic: "orders", want: "A.orders"},
		{name: "default explicit", policy: Policy{Kind: PolicyDefault, SourceAlias: "A"}, topic: "orders", want: "A.orders"},
		{name: "default with separator", policy: Policy{SourceAlias: "A", Separator: "_"}, topic: "orders", want: "A_orders"},
		{name: "default dotted topic", policy: Policy{SourceAlias: "A"}, topic: "shop.orders", want: "A.shop.orders"},
		{name: "default dotted alias", policy: Policy{SourceAlias: "us.east"}, topic: "orders", want: "us.east.orders"},
		{name: "default topic from the target goes home", policy: Policy{SourceAlias: "A", TargetAlias: "B"}, topic: "B.orders", want: "orders"},
		{name: "default topic from the target twice removed", policy: Policy{SourceAlias: "A", TargetAlias: "B"}, topic: "B.C.orders", want: "orders"},
		{name: "default topic of a third cluster", policy: Policy{SourceAlias: "A", TargetAlias: "B"}, topic: "C.orders", want: "A.C.orders"},
		{name: "default without target alias", policy: Policy{SourceAlias: "A"}, topic: "B.orders", want: "A.B.orders"},
		{name: "identity", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A"}, topic: "orders", want: "orders"},
		{name: "identity dotted", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A", TargetAlias: "B"}, topic: "B.orders", want: "B.orders"},
		{name: "identity heartbeats", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A"}, topic: "heartbeats", want: "A.heartbeats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.policy.Validate())
			require.Equal(t, tt.want, tt.policy.RemoteTopic(tt.topic))
		})
	}
}

func TestInternalTopics(t *testing.T) {
	tests := []struct {
		name        string
		policy      Policy
		checkpoints string
		syncs       string
	}{
		{name: "default", policy: Policy{SourceAlias: "A"}, checkpoints: "A.checkpoints.internal", syncs: "mm2-offset-syncs.B.internal"},
		{name: "identity", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A"}, checkpoints: "A.checkpoints.internal", syncs: "mm2-offset-syncs.B.internal"},
		{name: "separator", policy: Policy{SourceAlias: "A", Separator: "_"}, checkpoints: "A_checkpoints_internal", syncs: "mm2-offset-syncs_B_internal"},
		{name: "internal separator disabled", policy: Policy{SourceAlias: "A", Separator: "_", InternalSeparatorDisabled: true},
			checkpoints: "A.checkpoints.internal", syncs: "mm2-offset-syncs.B.internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.checkpoints, tt.policy.CheckpointsTopic())
			require.Equal(t, tt.syncs, tt.policy.OffsetSyncsTopic("B"))
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		errs   []string
	}{
		{name: "no alias", policy: Policy{}, errs: []string{"no source cluster alias"}},
		{name: "unknown kind", policy: Policy{Kind: "prefix", SourceAlias: "A"}, errs: []string{`unknown replication policy "prefix"`}},
		{name: "both", policy: Policy{Kind: "x"}, errs: []string{"unknown replication policy", "no source cluster alias"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Validate()
			require.Error(t, err)
			for _, e := range tt.errs {
				require.ErrorContains(t, err, e)
			}
		})
	}
}

func TestRewriteConfig(t *testing.T) {
	const dlq = "errors.deadletterqueue.topic.name"
	tests := []struct {
		name       string
		policy     Policy
		cfg        map[string]string
		want       map[string]string
		topics     map[string]string
		regexTo    string
		regexNote  bool
		matches    []string // topics the rewritten regex must match (whole name)
		mismatches []string
	}{
		{name: "default topics name by name, DLQ untouched", policy: Policy{SourceAlias: "A"},
			cfg:    map[string]string{"topics": " orders , payments,shop.refunds ", dlq: "dlq-orders", "tasks.max": "2"},
			want:   map[string]string{"topics": "A.orders,A.payments,A.shop.refunds", dlq: "dlq-orders", "tasks.max": "2"},
			topics: map[string]string{"orders": "A.orders", "payments": "A.payments", "shop.refunds": "A.shop.refunds"}},
		{name: "identity topics kept", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A"},
			cfg:    map[string]string{"topics": "orders,payments", dlq: "dlq"},
			want:   map[string]string{"topics": "orders,payments", dlq: "dlq"},
			topics: map[string]string{"orders": "orders", "payments": "payments"}},
		{name: "default separator", policy: Policy{SourceAlias: "east", Separator: "__"},
			cfg:    map[string]string{"topics": "orders"},
			want:   map[string]string{"topics": "east__orders"},
			topics: map[string]string{"orders": "east__orders"}},
		{name: "default regex", policy: Policy{SourceAlias: "A"},
			cfg:     map[string]string{"topics.regex": "orders-.*|payments", dlq: "orders-dlq"},
			want:    map[string]string{"topics.regex": `A\.(?:orders-.*|payments)`, dlq: "orders-dlq"},
			regexTo: `A\.(?:orders-.*|payments)`, regexNote: true,
			matches:    []string{"A.orders-eu", "A.payments"},
			mismatches: []string{"orders-eu", "A.paymentsX", "B.orders-eu", "AXorders-eu"}},
		{name: "identity regex kept", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A"},
			cfg:       map[string]string{"topics.regex": "orders-.*"},
			want:      map[string]string{"topics.regex": "orders-.*"},
			regexNote: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rw, err := tt.policy.RewriteConfig(tt.cfg)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.topics, rw.Topics)
			require.Equal(t, tt.regexTo, rw.RegexTo)
			require.Equal(t, tt.regexNote, rw.RegexNote != "")
			if tt.regexTo != "" {
				re := javaregex.MustCompile(tt.regexTo) // Connect reads it as Java does
				for _, m := range tt.matches {
					ok, err := re.Matches(m)
					require.NoError(t, err)
					require.True(t, ok, m)
				}
				for _, m := range tt.mismatches {
					ok, err := re.Matches(m)
					require.NoError(t, err)
					require.False(t, ok, m)
				}
			}
		})
	}
}

// A topics.regex that cannot be moved behind the default policy's prefix with certainty is
// refused, saying why (internal/javaregex's TestAfterPrefixOracle has Java decide every
// case); the identity policy keeps it.
func TestRewriteTopicsRegexRefusals(t *testing.T) {
	tests := []struct {
		name, sep, pattern string
		why                string
	}{
		{name: "anchor inside", pattern: "a|^orders", why: "^ anchors at the start of the input, and may be at the start of the name"},
		{name: "anchor with a quantifier", pattern: "^*orders", why: "^ anchors"},
		{name: "lookbehind", pattern: `(?<!\.)orders`, why: "a lookbehind would see the prefix"},
		{name: `\G after an alternative`, pattern: `x|\Gorders`, why: `\G anchors`},
		{name: "multiline anchor", pattern: `(?m)^orders`, why: "^ under MULTILINE"},
		{name: `\b after a word character`, sep: "_", pattern: `\borders`, why: "the prefix's last character, '_', a word character"},
		{name: "comments flag", pattern: "(?ix)orders # c", why: "COMMENTS flag"},
		{name: "comments flag on a group", pattern: "(?x:orders)", why: "COMMENTS flag"},
		{name: "unterminated quote", pattern: `\Qorders`, why: `\Q quotes to the end`},
		{name: "trailing backslash", pattern: `orders\`, why: "not a valid Java regex"},
		{name: "unclosed class", pattern: `[a-z`, why: "Unclosed character class"},
		{name: "unclosed property", pattern: `\p{Lower`, why: "Unclosed character family"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Policy{SourceAlias: "A", Separator: tt.sep}.RewriteTopicsRegex(tt.pattern)
			require.ErrorContains(t, err, tt.why)
			require.ErrorContains(t, err, "rewrite topics.regex for the default policy")
			_, _, err = Policy{Kind: PolicyIdentity, SourceAlias: "A"}.RewriteTopicsRegex(tt.pattern)
			require.NoError(t, err, "the identity policy keeps the pattern")
		})
	}
	// Inside a class, an escape or a quote, the same characters are safe; so are a leading
	// anchor (dropped), a boundary that cannot be at the start of the name, and constructs
	// whose meaning javaregex does not evaluate but whose reading is certain.
	for pattern, want := range map[string]string{
		`[^^]x`: `A\.(?:[^^]x)`, `\^x`: `A\.(?:\^x)`, `\Q^\E`: `A\.(?:\Q^\E)`, `[\Q^\E]`: `A\.(?:[\Q^\E])`, `[]^]`: `A\.(?:[]^])`,
		`\cAx`: `A\.(?:\cAx)`, `(?<name>x)\k<name>`: `A\.(?:(?<name>x)\k<name>)`, `\Aorders`: `A\.(?:orders)`, `(?i)^orders`: `A\.(?:(?i)orders)`,
		`\p{L}+`: `A\.(?:\p{L}+)`, `orders\b`: `A\.(?:orders\b)`,
	} {
		got, _, err := Policy{SourceAlias: "A"}.RewriteTopicsRegex(pattern)
		require.NoError(t, err, pattern)
		require.Equal(t, want, got, pattern)
	}
}

func TestUpstreamTopic(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		topic  string
		want   string // "" for none
	}{
		{name: "default", policy: Policy{SourceAlias: "A"}, topic: "A.orders", want: "orders"},
		{name: "default dotted topic", policy: Policy{SourceAlias: "A"}, topic: "A.shop.orders", want: "shop.orders"},
		{name: "default dotted alias", policy: Policy{SourceAlias: "us.east"}, topic: "us.east.orders", want: "orders"},
		{name: "default separator", policy: Policy{SourceAlias: "A", Separator: "_"}, topic: "A_orders", want: "orders"},
		{name: "default topic of the target", policy: Policy{SourceAlias: "A", TargetAlias: "B"}, topic: "orders"},
		{name: "default topic the target copied home is no copy", policy: Policy{SourceAlias: "A", TargetAlias: "B"}, topic: "B.orders"},
		{name: "default topic of a third cluster", policy: Policy{SourceAlias: "A"}, topic: "C.orders"},
		{name: "default alias alone", policy: Policy{SourceAlias: "A"}, topic: "A."},
		{name: "identity", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A"}, topic: "orders", want: "orders"},
		{name: "identity heartbeats", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A"}, topic: "A.heartbeats", want: "heartbeats"},
		{name: "identity heartbeats of the target", policy: Policy{Kind: PolicyIdentity, SourceAlias: "A"}, topic: "heartbeats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.policy.UpstreamTopic(tt.topic)
			require.Equal(t, tt.want != "", ok, got)
			require.Equal(t, tt.want, got)
		})
	}
}

// UpstreamTopic undoes RemoteTopic for every topic of MM2's own goldens that names a topic
// (not made of separators only), under both policies and separators: a copy's original is the
// topic it was copied from.
func TestUpstreamTopicInvertsRemoteTopic(t *testing.T) {
	b, err := os.ReadFile("testdata/replication-policy-goldens.json")
	require.NoError(t, err)
	var g policyGoldens
	require.NoError(t, json.Unmarshal(b, &g))
	n := 0
	for _, c := range g.Cases {
		if strings.Trim(c.Topic, c.Separator) == "" {
			continue
		}
		for _, p := range []Policy{{SourceAlias: "A", Separator: c.Separator}, {SourceAlias: "us.east", Separator: c.Separator},
			{Kind: PolicyIdentity, SourceAlias: "A", Separator: c.Separator}} {
			kind := p.kind()
			remote := p.RemoteTopic(c.Topic)
			up, ok := p.UpstreamTopic(remote)
			require.True(t, ok, "%s policy: %q (on B %q)", kind, c.Topic, remote)
			require.Equal(t, c.Topic, up, "%s policy: %q (on B %q)", kind, c.Topic, remote)
			n++
		}
	}
	require.Greater(t, n, 10)
}

func TestReverse(t *testing.T) {
	_, err := Policy{SourceAlias: "A"}.Reverse()
	require.ErrorContains(t, err, "needs the target cluster's alias")
	r, err := Policy{SourceAlias: "A", TargetAlias: "B", Separator: "_"}.Reverse()
	require.NoError(t, err)
	require.Equal(t, Policy{SourceAlias: "B", TargetAlias: "A", Separator: "_"}, r)
	require.Equal(t, "B_checkpoints_internal", r.CheckpointsTopic())
	require.Equal(t, "B_events", r.RemoteTopic("events"))
	require.Equal(t, "orders", r.RemoteTopic("A_orders"), "a copy of A's goes home")
}
