package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/offsetagent/offsetagent/agent"
)

// The markers in docs/operations.md before the overlay of "Deploy", step 2, and the commands
// of step 3.
const (
	overlayMarker  = "<!-- deploy_test: overlay kustomization.yaml -->"
	commandsMarker = "<!-- deploy_test: overlay commands -->"
	// docsRepo is how the docs name the repository in a remote base.
	docsRepo = "github.com/offsetagent/offsetagent/"
)

// docBlock returns the fenced code block that follows marker in a Markdown text, without its
// fences and without the indentation of its opening fence (a block inside a list item).
func docBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, marker+"\n")
	require.True(t, ok, "%s lacks %q", operationsPath, marker)
	lines := strings.Split(rest, "\n")
	open := lines[0]
	indent := open[:len(open)-len(strings.TrimLeft(open, " "))]
	require.True(t, strings.HasPrefix(strings.TrimSpace(open), "```"), "no code block after %q", marker)
	var b strings.Builder
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "```" {
			return b.String()
		}
		b.WriteString(strings.TrimPrefix(l, indent) + "\n")
	}
	require.Failf(t, "unterminated code block", "after %q", marker)
	return ""
}

// TestDocumentedOverlay follows docs/operations.md, "Deploy", on a fresh clone of the
// repository's HEAD: the overlay of step 2 verbatim, with its remote ?ref= bases pointing at
// the clone instead of GitHub (kustomize fetches them with git, as it would from GitHub), the
// commands of step 3 run in the overlay's directory, then `kustomize build` (what `kubectl
// apply -k` applies). Nothing is added to the clone: what is uncommitted or git-ignored in
// the worktree (a secret.env) plays no part.
func TestDocumentedOverlay(t *testing.T) {
	t.Parallel() // git and kustomize's fetches wait on processes, not on this one
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clone := filepath.Join(t.TempDir(), "offsetagent")
	git := exec.CommandContext(ctx, "git", "clone", "--quiet", "--depth=1", "file://"+absPath(t, ".."), clone)
	out, err := git.CombinedOutput()
	require.NoError(t, err, "git clone: %s", out)

	doc := string(readFile(t, filepath.Join(clone, "docs", "operations.md")))
	overlay := docBlock(t, doc, overlayMarker)
	require.Contains(t, overlay, docsRepo+"deploy/kubernetes?ref=", "the overlay's base is the remote one")
	// kustomize's remote syntax: the repository, "//", the path in it; HEAD is the clone's.
	remote := strings.NewReplacer(docsRepo, "file://"+clone+"//", "?ref=v1.2.3", "?ref=HEAD").Replace(overlay)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(remote), 0o644))
	sh := exec.CommandContext(ctx, "sh", "-eu")
	sh.Dir = dir
	sh.Stdin = strings.NewReader(docBlock(t, doc, commandsMarker))
	out, err = sh.CombinedOutput()
	require.NoError(t, err, "the commands of step 3: %s", out)

	opts := krusty.MakeDefaultOptions()
	resMap, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build of the documented overlay")
	m := decodeManifests(t, resMap)

	require.Equal(t, []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "PrometheusRule", "Secret", "Service", "ServiceMonitor"}, m.kinds)
	require.Equal(t, "kafka", m.deployment.Namespace)
	require.Equal(t, "registry.example.com/offsetagent:v1.2.3", m.agentContainer(t).Image)
	require.Equal(t, "my-cluster-kafka-bootstrap:9093", m.configMap.Data[envPrefix+"BROKERS"])
	require.NotEmpty(t, m.configMap.Data[envPrefix+"ALLOWED_SOURCES"])

	// The Secret is the overlay's, and the Deployment follows its hashed name.
	var keys []string
	for k := range m.secret.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	require.Equal(t, []string{envPrefix + "SASL_MECHANISM", envPrefix + "SASL_PASSWORD", envPrefix + "SASL_USERNAME", envPrefix + "TLS_ENABLED"}, keys)
	require.Equal(t, "change-me", string(m.secret.Data[envPrefix+"SASL_PASSWORD"]))
	var refs []string
	for _, ef := range m.agentContainer(t).EnvFrom {
		if ef.SecretRef != nil {
			refs = append(refs, ef.SecretRef.Name)
		}
	}
	require.Equal(t, []string{m.secret.Name}, refs)

	// Egress to the brokers and to Connect only within the blocks the overlay gave.
	for _, i := range []int{1, 2} {
		rule := m.networkPolicy.Spec.Egress[i]
		require.Len(t, rule.To, 1)
		require.NotNil(t, rule.To[0].IPBlock)
		require.Equal(t, "10.244.0.0/16", rule.To[0].IPBlock.CIDR)
	}
}

// TestConfigMapHasEverySetting compares the base's ConfigMap with agent.Config: every
// non-secret variable of the configuration is set there, at its default unless the
// manifest means otherwise, and nothing else is.
func TestConfigMapHasEverySetting(t *testing.T) {
	m := kustomizeBuild(t, false)
	var want []string
	for n := range configEnvNames(t) {
		if !isCredential(n) {
			want = append(want, n)
		}
	}
	var got []string
	for k := range m.configMap.Data {
		got = append(got, k)
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got, "the ConfigMap must carry every non-secret setting of agent.Config")

	// Values that differ from the agent's defaults on purpose.
	defaults := configDefaults(t)
	deliberate := map[string]bool{envPrefix + "BROKERS": true}
	for k, v := range m.configMap.Data {
		d, ok := defaults[k]
		if !ok || deliberate[k] {
			continue
		}
		require.Equal(t, d, v, "%s differs from the agent's default; say why in configmap.yaml and list it here", k)
	}
	require.NotEmpty(t, m.configMap.Data[envPrefix+"ALLOWED_SOURCES"], "production manifests must not accept any request source")
}

// configDefaults returns the default= value of every agent.Config field that has one.
func configDefaults(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	typ := reflect.TypeFor[agent.Config]()
	for i := range typ.NumField() {
		tag := typ.Field(i).Tag.Get("env")
		name, opts, _ := strings.Cut(tag, ",")
		for _, o := range strings.Split(opts, ",") {
			if d, ok := strings.CutPrefix(strings.TrimSpace(o), "default="); ok {
				out[strings.TrimSpace(name)] = d
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// absPath returns the absolute path of a path relative to deploy/.
func absPath(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}
