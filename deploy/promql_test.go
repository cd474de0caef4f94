package deploy_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// prometheusSeries are series Prometheus itself writes (for every target, and for the alerts
// of its rules), with the labels they carry beyond the target's; the agent cannot export them,
// yet alerts and panels may use them.
var prometheusSeries = map[string]map[string]bool{
	"up":     {},
	"ALERTS": {"alertname": true, "alertstate": true, "severity": true},
}

// kubernetesSeries are the series of the pods' containers that the dashboard shows beside the
// agent's own, with their labels: kube-state-metrics' and the kubelet's cAdvisor's, as
// kube-prometheus-stack scrapes them (docs/metrics.md, "Series from Kubernetes").
var kubernetesSeries = map[string]map[string]bool{
	"kube_pod_container_status_restarts_total":  {"namespace": true, "pod": true, "container": true},
	"kube_pod_container_resource_limits":        {"namespace": true, "pod": true, "container": true, "resource": true, "unit": true},
	"container_memory_working_set_bytes":        {"namespace": true, "pod": true, "container": true},
	"container_cpu_cfs_throttled_periods_total": {"namespace": true, "pod": true, "container": true},
	"container_cpu_cfs_periods_total":           {"namespace": true, "pod": true, "container": true},
}

// externalLabel reports whether a series of Prometheus or of Kubernetes that node selects has
// label.
func externalLabel(node parser.Node, label string) bool {
	found := false
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := selectedName(vs)
			if prometheusSeries[name][label] || kubernetesSeries[name][label] {
				found = true
			}
		}
		return nil
	})
	return found
}

// targetLabels are attached by Prometheus at scrape time, so the agent's own series lack them
// (namespace by the Prometheus Operator's ServiceMonitor scrapes).
var targetLabels = map[string]bool{"job": true, "instance": true, "namespace": true}

var (
	// Grafana's interval variables stand where PromQL needs a duration.
	grafanaIntervalVar = regexp.MustCompile(`\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}`)
	// Other dashboard variables only appear inside label matcher strings.
	grafanaVar = regexp.MustCompile(`\$\{[^}]+\}|\$\w+`)
	// label_values(selector, label) is Grafana's variable query syntax, not PromQL.
	labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\s*\)$`)
)

// promQLOf turns a Grafana query into plain PromQL by substituting its variables.
func promQLOf(expr string) string {
	expr = grafanaIntervalVar.ReplaceAllString(expr, "5m")
	return grafanaVar.ReplaceAllString(expr, "x")
}

// checkPromQL parses expr with Prometheus's own parser and checks it against the agent's
// registry: every series it selects is exported; every label it matches on exists on that
// series (with that value, for an equality matcher); every label it aggregates by or matches
// vectors on exists on a series the expression selects. It returns the values of the job
// matchers, for checks against the scrape configuration.
func checkPromQL(t *testing.T, names exported, expr string) (jobs []string) {
	t.Helper()
	parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	require.NoError(t, err, "parse %q", expr)
	selectors := 0
	// hasLabel reports whether a series selected somewhere under node carries label.
	hasLabel := func(node parser.Node, label string) bool {
		if targetLabels[label] || externalLabel(node, label) {
			return true
		}
		found := false
		parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && names.hasLabel(selectedName(vs), label) {
				found = true
			}
			return nil
		})
		return found
	}
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.AggregateExpr:
			for _, l := range n.Grouping {
				require.True(t, hasLabel(n.Expr, l), "%q aggregates by %s, which no series it selects has", expr, l)
			}
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				for _, l := range n.VectorMatching.MatchingLabels {
					require.True(t, hasLabel(n.LHS, l) && hasLabel(n.RHS, l), "%q matches on %s, which a side lacks", expr, l)
				}
			}
		case *parser.VectorSelector:
			selectors++
			name := selectedName(n)
			if own, ok := prometheusSeries[name]; ok {
				for _, m := range n.LabelMatchers {
					require.True(t, m.Name == labels.MetricName || targetLabels[m.Name] || own[m.Name], "%q: %s has no label %s", expr, name, m.Name)
				}
				return nil
			}
			if own, ok := kubernetesSeries[name]; ok {
				for _, m := range n.LabelMatchers {
					require.True(t, m.Name == labels.MetricName || own[m.Name], "%q: %s has no label %s", expr, name, m.Name)
				}
				return nil
			}
			require.Contains(t, names, name, "%q selects a series the agent does not export", expr)
			for _, m := range n.LabelMatchers {
				switch {
				case m.Name == "job" && m.Type == labels.MatchEqual:
					jobs = append(jobs, m.Value)
				case m.Name == labels.MetricName || targetLabels[m.Name]:
				case m.Type == labels.MatchEqual:
					require.True(t, names[name][m.Name+"="+m.Value],
						"%q matches %s=%q, which no exported %s series has", expr, m.Name, m.Value, name)
				default:
					require.True(t, names.hasLabel(name, m.Name), "%q matches on %s, which %s lacks", expr, m.Name, name)
				}
			}
		}
		return nil
	})
	require.Positive(t, selectors, "%q selects no series", expr)
	return jobs
}

// selectedName is the metric name a vector selector selects.
func selectedName(vs *parser.VectorSelector) string {
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return vs.Name
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboardPanel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  *datasourceRef `json:"datasource"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // of collapsed rows
}

type dashboardVar struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
}

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []dashboardVar `json:"list"`
	} `json:"templating"`
	Panels []dashboardPanel `json:"panels"`
}

// variableQuery returns the query of a query variable, stored either as a string or, by
// newer Grafana versions, as {"query": "..."}.
func variableQuery(t *testing.T, v dashboardVar) string {
	t.Helper()
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var obj struct {
		Query string `json:"query"`
	}
	require.NoError(t, json.Unmarshal(v.Query, &obj), "query of variable %s", v.Name)
	return obj.Query
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	require.NoError(t, json.Unmarshal(readFile(t, dashboardPath), &d))
	return d
}

func TestDashboard(t *testing.T) {
	names := exportedMetricNames(t)
	d := loadDashboard(t)
	require.NotEmpty(t, d.UID)

	vars := map[string]dashboardVar{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	require.Contains(t, vars, "datasource")
	require.Equal(t, "datasource", vars["datasource"].Type)
	require.JSONEq(t, `"prometheus"`, string(vars["datasource"].Query))
	for _, name := range []string{"namespace", "job", "instance"} {
		require.Contains(t, vars, name)
	}

	t.Run("variables", func(t *testing.T) {
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			t.Run(v.Name, func(t *testing.T) {
				require.NotNil(t, v.Datasource)
				require.Equal(t, "${datasource}", v.Datasource.UID)
				q := variableQuery(t, v)
				m := labelValuesQuery.FindStringSubmatch(q)
				require.NotNil(t, m, "variable %s: want label_values(selector, label), got %q", v.Name, q)
				checkPromQL(t, names, promQLOf(m[1]))
				metric := strings.TrimSpace(strings.SplitN(m[1], "{", 2)[0])
				require.True(t, targetLabels[m[2]] || names.hasLabel(metric, m[2]),
					"variable %s: %s has no label %s", v.Name, metric, m[2])
			})
		}
	})

	var panels []dashboardPanel
	for _, p := range d.Panels {
		panels = append(panels, p)
		panels = append(panels, p.Panels...)
	}
	ids := map[int]bool{}
	want := map[string]bool{}
	for _, p := range panels {
		require.False(t, ids[p.ID], "panel id %d used twice", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		t.Run(p.Title, func(t *testing.T) {
			require.NotEmpty(t, p.Description, "panel needs a description")
			require.NotEmpty(t, p.FieldConfig.Defaults.Unit, "panel needs a unit")
			require.NotNil(t, p.Datasource)
			require.Equal(t, "${datasource}", p.Datasource.UID)
			require.NotEmpty(t, p.Targets)
			for _, target := range p.Targets {
				if target.Datasource != nil {
					require.Equal(t, "${datasource}", target.Datasource.UID)
				}
				limits := []string{"namespace", "job", "instance"}
				if kubernetesQuery(target.Expr) {
					// Kubernetes' series are the containers': by namespace and container.
					limits = []string{"namespace"}
					require.Contains(t, target.Expr, `container="offsetagent"`)
				} else if strings.Contains(target.Expr, "ALERTS{") {
					limits = []string{"namespace", "job"} // alerts aggregate by deployment
				}
				for _, v := range limits {
					require.Contains(t, target.Expr, v+`=~"$`+v+`"`, "every query is limited to the selected %ss", v)
				}
				if p.Type == "heatmap" {
					// Windows as long as the step count each observation once; $__rate_interval
					// (4 scrapes) counted each about 4 times.
					require.Contains(t, target.Expr, "increase(")
					require.Contains(t, target.Expr, "[$__interval]")
					require.Contains(t, target.Expr, "sum by (le)")
				}
				if p.Title == "Results not published" || p.Title == "Container restarts" {
					// Events: windows as long as the step count each one once.
					require.Contains(t, target.Expr, "[$__interval]")
				}
				checkPromQL(t, names, promQLOf(target.Expr))
				for _, metric := range panelMetrics {
					if strings.Contains(target.Expr, metric) {
						want[metric] = true
					}
				}
			}
		})
	}
	// Every series of panelMetrics has a panel of its own on the dashboard.
	for _, metric := range panelMetrics {
		require.True(t, want[metric], "no panel shows %s", metric)
	}
}

// panelMetrics are the agent's own series the dashboard must show.
var panelMetrics = []string{
	"offsetagent_requests_total", "offsetagent_stage_failures_total",
	"offsetagent_stage_duration_seconds_bucket", "offsetagent_request_duration_seconds_bucket",
	"offsetagent_offsets_written_total", "offsetagent_offsets_wiped_total",
	"offsetagent_requests_in_flight", "offsetagent_request_lag", "offsetagent_build_info",
	"offsetagent_retries_total", "offsetagent_requests_in_flight_bytes", "offsetagent_max_inflight_bytes",
	"offsetagent_results_unpublished_total", "offsetagent_results_pending", "offsetagent_dedupe_entries", "offsetagent_ready",
	"offsetagent_oldest_request_age_seconds", "process_cpu_seconds_total", "process_resident_memory_bytes",
}

// ruleFile is a Prometheus rules file; it models the whole schema so that strict decoding
// rejects misspelt keys.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	Alert         string            `yaml:"alert,omitempty"`
	Record        string            `yaml:"record,omitempty"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for,omitempty"`
	KeepFiringFor string            `yaml:"keep_firing_for,omitempty"`
	Labels        map[string]string `yaml:"labels,omitempty"`
	Annotations   map[string]string `yaml:"annotations,omitempty"`
}

type prometheusRule struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec ruleFile `yaml:"spec"`
}

// runbookURLPrefix is where alert runbooks live: sections of docs/operations.md.
const runbookURLPrefix = "https://github.com/offsetagent/offsetagent/blob/main/docs/operations.md#"

// markdownAnchors returns the anchors GitHub gives the headings of a Markdown file.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(readFile(t, path)), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range heading {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

func TestAlertRules(t *testing.T) {
	names := exportedMetricNames(t)
	anchors := markdownAnchors(t, operationsPath)

	var plain ruleFile
	decodeYAML(t, alertsPath, &plain, true)

	alerts := map[string]bool{}
	for _, g := range plain.Groups {
		for _, r := range g.Rules {
			t.Run(r.Alert, func(t *testing.T) {
				require.NotEmpty(t, r.Alert, "only alerting rules belong in alerts.yaml")
				require.False(t, alerts[r.Alert], "alert %s defined twice", r.Alert)
				alerts[r.Alert] = true
				for _, job := range checkPromQL(t, names, r.Expr) {
					require.Equal(t, scrapeJob, job)
				}
				require.Contains(t, []string{"warning", "critical"}, r.Labels["severity"])
				require.NotEmpty(t, r.Annotations["summary"])
				require.NotEmpty(t, r.Annotations["description"])
				url := r.Annotations["runbook_url"]
				require.True(t, strings.HasPrefix(url, runbookURLPrefix), "runbook_url %q", url)
				anchor := strings.TrimPrefix(url, runbookURLPrefix)
				require.Equal(t, strings.ToLower(r.Alert), anchor, "runbook section is named after the alert")
				require.True(t, anchors[anchor], "docs/operations.md has no section #%s", anchor)
			})
		}
	}
	for _, want := range []string{"OffsetagentHighFailureRatio", "OffsetagentStageSlow", "OffsetagentRequestLagGrowing",
		"OffsetagentDown", "OffsetagentPartiallyDown", "OffsetagentNotReady", "OffsetagentLaneStuck", "OffsetagentResultsUnpublished", "OffsetagentResultsPending"} {
		require.True(t, alerts[want], "missing alert %s", want)
	}
}

// TestMetricsDoc checks that docs/metrics.md documents every series family the agent exports
// under its own prefix.
func TestMetricsDoc(t *testing.T) {
	doc := string(readFile(t, metricsDocPath))
	for name := range exportedMetricNames(t) {
		if !strings.HasPrefix(name, "offsetagent_") {
			continue
		}
		family := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			family = strings.TrimSuffix(family, suffix)
		}
		require.Contains(t, doc, fmt.Sprintf("`%s`", family), "docs/metrics.md does not document %s", family)
	}
}

// kubernetesQuery reports whether a dashboard query selects the containers' series.
func kubernetesQuery(expr string) bool {
	for name := range kubernetesSeries {
		if strings.Contains(expr, name+"{") {
			return true
		}
	}
	return false
}

// The panels on-call engineers asked for: restarts, firing alerts with runbook links, memory
// against the limit and GOMEMLIMIT, CPU throttling, readiness with value mappings.
func TestDashboardOperationsPanels(t *testing.T) {
	var d struct {
		Panels []struct {
			Title       string `json:"title"`
			FieldConfig struct {
				Defaults struct {
					Mappings []struct {
						Options map[string]struct {
							Text string `json:"text"`
						} `json:"options"`
					} `json:"mappings"`
				} `json:"defaults"`
				Overrides []struct {
					Properties []struct {
						ID    string          `json:"id"`
						Value json.RawMessage `json:"value"`
					} `json:"properties"`
				} `json:"overrides"`
			} `json:"fieldConfig"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(readFile(t, dashboardPath), &d))
	exprs := map[string]string{}
	for _, p := range d.Panels {
		var all []string
		for _, tg := range p.Targets {
			all = append(all, tg.Expr)
		}
		exprs[p.Title] = strings.Join(all, "\n")
		switch p.Title {
		case "Readiness per instance":
			require.NotEmpty(t, p.FieldConfig.Defaults.Mappings)
			m := p.FieldConfig.Defaults.Mappings[0].Options
			require.Equal(t, "ready", m["1"].Text)
			require.Equal(t, "not ready", m["0"].Text)
		case "Firing alerts":
			var links string
			for _, o := range p.FieldConfig.Overrides {
				for _, pr := range o.Properties {
					if pr.ID == "links" {
						links += string(pr.Value)
					}
				}
			}
			require.Contains(t, links, "${__value.raw}", "the runbook column links to the runbook")
		}
	}
	for title, want := range map[string][]string{
		"Container restarts":                      {"kube_pod_container_status_restarts_total"},
		"Firing alerts":                           {"ALERTS{", `alertstate="firing"`, "operations.md#$1"},
		"Memory against the limit and GOMEMLIMIT": {"container_memory_working_set_bytes", `resource="memory"`, "go_gc_gomemlimit_bytes"},
		"CPU throttling":                          {"container_cpu_cfs_throttled_periods_total"},
		"Failures by stage and error code":        {"error_code"},
	} {
		require.Contains(t, exprs, title)
		for _, w := range want {
			require.Contains(t, exprs[title], w, title)
		}
	}

	// The runbook links name the alert as it is spelt: operations.md has an anchor of that
	// exact name before each runbook.
	ops := string(readFile(t, operationsPath))
	var plain ruleFile
	decodeYAML(t, alertsPath, &plain, true)
	for _, g := range plain.Groups {
		for _, r := range g.Rules {
			require.Contains(t, ops, `<a id="`+r.Alert+`"></a>`, "no anchor for the dashboard's link to %s", r.Alert)
		}
	}
}
