package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	alertTestsGlob = "prometheus/tests/*.yml"
	// requirePromtoolEnv set to 1 (CI's .ci/run sets it) makes a missing promtool a failure
	// instead of a skip.
	requirePromtoolEnv = "OFFSETAGENT_REQUIRE_PROMTOOL"
)

// promtool returns the path of promtool: $PROMTOOL, else promtool on the PATH (Debian's
// prometheus package ships one: apt-get install prometheus; .ci/run installs it when
// missing). Without it the test skips, or fails with OFFSETAGENT_REQUIRE_PROMTOOL=1.
func promtool(t *testing.T) string {
	t.Helper()
	name := os.Getenv("PROMTOOL")
	if name == "" {
		name = "promtool"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("promtool not found (%v): install Debian's prometheus package (apt-get install prometheus) or set PROMTOOL", err)
		if os.Getenv(requirePromtoolEnv) == "1" {
			t.Fatalf("%s; %s=1 makes that a failure", msg, requirePromtoolEnv)
		}
		t.Skip(msg)
	}
	return path
}

// alertRuleTests is one promtool rule-test file, as far as this test reads it.
type alertRuleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name           string `yaml:"name"`
		AlertRuleTests []struct {
			AlertName string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestAlertRuleUnitTests runs promtool on the alerts: `check rules`, then the unit tests in
// prometheus/tests, and checks that these cover every alert with a case where it fires and one
// where it must not.
func TestAlertRuleUnitTests(t *testing.T) {
	bin := promtool(t)
	alerts, err := filepath.Abs(alertsPath)
	require.NoError(t, err)
	out, err := exec.Command(bin, "check", "rules", alerts).CombinedOutput()
	require.NoError(t, err, "promtool check rules:\n%s", out)

	files, err := filepath.Glob(alertTestsGlob)
	require.NoError(t, err)
	require.NotEmpty(t, files)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		var rt alertRuleTests
		decodeYAML(t, f, &rt, false)
		require.Equal(t, []string{"../alerts.yaml"}, rt.RuleFiles, "%s tests the shipped rules", f)
		for _, tc := range rt.Tests {
			for _, a := range tc.AlertRuleTests {
				if len(a.ExpAlerts) > 0 {
					fires[a.AlertName] = true
				} else {
					quiet[a.AlertName] = true
				}
			}
		}
	}
	var plain ruleFile
	decodeYAML(t, alertsPath, &plain, true)
	for _, g := range plain.Groups {
		for _, r := range g.Rules {
			require.True(t, fires[r.Alert], "no rule test in which %s fires", r.Alert)
			require.True(t, quiet[r.Alert], "no rule test in which %s must stay quiet", r.Alert)
		}
	}

	args := append([]string{"test", "rules"}, files...)
	cmd := exec.Command(bin, args...)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
	require.Contains(t, string(out), "SUCCESS")
}
