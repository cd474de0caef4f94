package deploy_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var update = flag.Bool("update", false, "rewrite generated files (the PrometheusRule) instead of comparing them")

const (
	operatorComponent  = kubernetesDir + "/components/prometheus-operator"
	prometheusRulePath = operatorComponent + "/prometheusrule.yaml"
)

// manifests is the decoded output of `kustomize build`: every object strictly decoded into
// its Kubernetes API type (unknown or misspelt fields are errors).
type manifests struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	configMap      *corev1.ConfigMap
	secret         *corev1.Secret
	pdb            *policyv1.PodDisruptionBudget
	networkPolicy  *networkingv1.NetworkPolicy
	serviceMonitor *monitoringv1.ServiceMonitor
	prometheusRule *monitoringv1.PrometheusRule
	kinds          []string
}

// kustomizeBuild runs `kustomize build` in-process on the base, as an overlay would use it
// (with the component when withOperator is set), on an in-memory copy of deploy/kubernetes
// without any git-ignored file (a secret.env left in a checkout is not copied).
func kustomizeBuild(t *testing.T, withOperator bool) manifests {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	root := "/repo/deploy/kubernetes"
	err := filepath.WalkDir(kubernetesDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "secret.env" {
			return err
		}
		rel, err := filepath.Rel(kubernetesDir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join(root, filepath.ToSlash(rel)), b)
	})
	require.NoError(t, err)

	overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: offsetagent-test\nresources:\n  - ../deploy/kubernetes\n"
	if withOperator {
		overlay += "components:\n  - ../deploy/kubernetes/components/prometheus-operator\n"
	}
	require.NoError(t, mem.WriteFile("/repo/overlay/kustomization.yaml", []byte(overlay)))

	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/repo/overlay")
	require.NoError(t, err, "kustomize build")
	return decodeManifests(t, resMap)
}

// decodeManifests decodes the output of a kustomize build strictly into the Kubernetes API
// types.
func decodeManifests(t *testing.T, resMap resmap.ResMap) manifests {
	t.Helper()
	var m manifests
	// Each kind decodes into its API type; the decoder allocates the object.
	types := map[string]any{
		"Deployment": &m.deployment, "Service": &m.service, "ConfigMap": &m.configMap, "Secret": &m.secret,
		"PodDisruptionBudget": &m.pdb, "NetworkPolicy": &m.networkPolicy,
		"ServiceMonitor": &m.serviceMonitor, "PrometheusRule": &m.prometheusRule,
	}
	for _, r := range resMap.Resources() {
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		kind := r.GetKind()
		m.kinds = append(m.kinds, kind)
		into, ok := types[kind]
		require.True(t, ok, "kustomize build yields a %s", kind)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(into), "strict decoding of %s %s", kind, r.GetName())
	}
	slices.Sort(m.kinds)
	return m
}

// agentContainer returns the Deployment's offsetagent container.
func (m manifests) agentContainer(t *testing.T) corev1.Container {
	t.Helper()
	require.NotNil(t, m.deployment)
	cs := m.deployment.Spec.Template.Spec.Containers
	require.Len(t, cs, 1)
	return cs[0]
}

// requireSubset checks that every label of sub is in super, as a selector must be.
func requireSubset(t *testing.T, super, sub map[string]string, what string) {
	t.Helper()
	require.NotEmpty(t, sub, "%s: empty selector", what)
	for k, v := range sub {
		require.Equal(t, v, super[k], "%s: label %s", what, k)
	}
}

func TestKustomizeBuild(t *testing.T) {
	tests := []struct {
		name         string
		withOperator bool
		kinds        []string
	}{
		{name: "base", kinds: []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Secret", "Service"}},
		{name: "with the Prometheus Operator component", withOperator: true,
			kinds: []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "PrometheusRule", "Secret", "Service", "ServiceMonitor"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := kustomizeBuild(t, tt.withOperator)
			require.Equal(t, tt.kinds, m.kinds)
			// The generated Secret's name carries a content hash; the Deployment must follow it.
			require.True(t, strings.HasPrefix(m.secret.Name, "offsetagent-"), m.secret.Name)
			var refs []string
			for _, ef := range m.agentContainer(t).EnvFrom {
				if ef.SecretRef != nil {
					refs = append(refs, ef.SecretRef.Name)
				}
			}
			require.Equal(t, []string{m.secret.Name}, refs)
		})
	}
}

func TestKubernetesBaseFiles(t *testing.T) {
	entries, err := os.ReadDir(kubernetesDir)
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".yaml" && e.Name() != "kustomization.yaml" {
			files = append(files, e.Name())
		}
	}
	var k struct {
		Resources []string `yaml:"resources"`
	}
	decodeYAML(t, kubernetesDir+"/kustomization.yaml", &k, false)
	resources := slices.Clone(k.Resources)
	slices.Sort(resources)
	require.Equal(t, files, resources, "kustomization.yaml must list every manifest in the directory")

	gitignore := string(readFile(t, "../.gitignore"))
	require.Contains(t, strings.Split(gitignore, "\n"), "deploy/kubernetes/secret.env", "the real secret.env must never be committed")
}

func TestKubernetesDeployment(t *testing.T) {
	m := kustomizeBuild(t, false)
	d := m.deployment
	pod := d.Spec.Template.Spec
	c := m.agentContainer(t)
	httpPort := portOf(t, m.configMap.Data[httpAddrEnvName])
	portNumber := func(p intstr.IntOrString) string {
		if p.Type == intstr.Int {
			return p.String()
		}
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return strconv.Itoa(int(cp.ContainerPort))
			}
		}
		require.Failf(t, "unknown port", "container %s has no port %q", c.Name, p.StrVal)
		return ""
	}

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"two replicas", func(t *testing.T) { require.Equal(t, int32(2), *d.Spec.Replicas) }},
		{"selector matches pods", func(t *testing.T) {
			requireSubset(t, d.Spec.Template.Labels, d.Spec.Selector.MatchLabels, "deployment")
		}},
		{"runs offsetagent run", func(t *testing.T) { require.Equal(t, []string{"run"}, c.Args) }},
		{"image by version, default pull policy", func(t *testing.T) {
			name, tag, ok := strings.Cut(c.Image[strings.LastIndex(c.Image, "/")+1:], ":")
			require.True(t, ok, "image %q has no tag", c.Image)
			require.Equal(t, "offsetagent", name)
			require.Regexp(t, `^v\d+\.\d+\.\d+$`, tag, "a released version, not latest")
			require.Empty(t, c.ImagePullPolicy, "left to Kubernetes' default")
		}},
		{"liveness on /healthz", func(t *testing.T) {
			require.NotNil(t, c.LivenessProbe)
			require.NotNil(t, c.LivenessProbe.HTTPGet)
			require.Equal(t, healthzPath, c.LivenessProbe.HTTPGet.Path)
			require.Equal(t, httpPort, portNumber(c.LivenessProbe.HTTPGet.Port))
		}},
		{"readiness on /readyz", func(t *testing.T) {
			require.NotNil(t, c.ReadinessProbe)
			require.NotNil(t, c.ReadinessProbe.HTTPGet)
			require.Equal(t, readyzPath, c.ReadinessProbe.HTTPGet.Path)
			require.Equal(t, httpPort, portNumber(c.ReadinessProbe.HTTPGet.Port))
		}},
		{"resources", func(t *testing.T) {
			require.False(t, c.Resources.Requests.Cpu().IsZero())
			require.False(t, c.Resources.Requests.Memory().IsZero())
			require.False(t, c.Resources.Limits.Memory().IsZero())
			// Memory request equal to the limit: the scheduler reserves what the agent may use.
			// No CPU limit (docs/operations.md, "Memory and CPU of the Deployment": throttling only
			// slows requests), so the pod is Burstable, not Guaranteed.
			require.Zero(t, c.Resources.Requests.Memory().Cmp(*c.Resources.Limits.Memory()), "memory request = limit")
			require.True(t, c.Resources.Limits.Cpu().IsZero(), "no CPU limit")
		}},
		{"no GOMEMLIMIT: the agent derives its soft limit from the memory limit", func(t *testing.T) {
			// The agent keeps its heap within the live heap plus twice the in-flight bound, at
			// most 90% of the container's limit (cmd/offsetagent/memlimit.go); a GOMEMLIMIT
			// here would replace that with a fixed limit.
			for _, e := range c.Env {
				require.NotEqual(t, "GOMEMLIMIT", e.Name, "GOMEMLIMIT overrides the agent's own limit")
			}
			require.False(t, c.Resources.Limits.Memory().IsZero(), "the memory limit the agent reads")
		}},
		{"pod security", func(t *testing.T) {
			sc := pod.SecurityContext
			require.NotNil(t, sc)
			require.True(t, *sc.RunAsNonRoot)
			require.NotZero(t, *sc.RunAsUser)
			require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
			require.False(t, *pod.AutomountServiceAccountToken)
		}},
		{"container security", func(t *testing.T) {
			sc := c.SecurityContext
			require.NotNil(t, sc)
			require.True(t, *sc.RunAsNonRoot)
			require.True(t, *sc.ReadOnlyRootFilesystem)
			require.False(t, *sc.AllowPrivilegeEscalation)
			require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
			require.Empty(t, sc.Capabilities.Add)
			require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
		}},
		{"spread across zones and nodes", func(t *testing.T) {
			var keys []string
			for _, tsc := range pod.TopologySpreadConstraints {
				keys = append(keys, tsc.TopologyKey)
				requireSubset(t, d.Spec.Template.Labels, tsc.LabelSelector.MatchLabels, "topology spread")
			}
			require.Equal(t, []string{"topology.kubernetes.io/zone", "kubernetes.io/hostname"}, keys)
		}},
		{"config from the ConfigMap, credentials from the Secret", func(t *testing.T) {
			var configMaps, secrets []string
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					configMaps = append(configMaps, ef.ConfigMapRef.Name)
				}
				if ef.SecretRef != nil {
					secrets = append(secrets, ef.SecretRef.Name)
				}
			}
			require.Equal(t, []string{m.configMap.Name}, configMaps)
			require.Equal(t, []string{m.secret.Name}, secrets)
			for k := range m.configMap.Data {
				require.False(t, isCredential(k), "%s is a credential: move it to the Secret", k)
			}
			require.NotEmpty(t, m.secret.Data)
			for k := range m.secret.Data {
				require.True(t, isCredential(k), "%s is not a credential: move it to the ConfigMap", k)
			}
			for _, e := range c.Env {
				require.False(t, isCredential(e.Name), "%s is a credential: set it in the Secret", e.Name)
			}
		}},
		{"grace period outlasts the shutdown timeout", func(t *testing.T) {
			timeout, err := time.ParseDuration(m.configMap.Data[envPrefix+"SHUTDOWN_TIMEOUT"])
			require.NoError(t, err)
			grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
			require.Greater(t, grace, timeout+5*time.Second)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestKubernetesServiceAndPolicies(t *testing.T) {
	m := kustomizeBuild(t, true)
	c := m.agentContainer(t)
	podLabels := m.deployment.Spec.Template.Labels
	httpPort := portOf(t, m.configMap.Data[httpAddrEnvName])
	var httpName string
	for _, p := range c.Ports {
		if strconv.Itoa(int(p.ContainerPort)) == httpPort {
			httpName = p.Name
		}
	}
	require.NotEmpty(t, httpName, "the container does not expose %s", httpAddrEnvName)

	requireSubset(t, podLabels, m.service.Spec.Selector, "service")
	servicePorts := map[string]bool{}
	for _, p := range m.service.Spec.Ports {
		servicePorts[p.Name] = true
		require.Equal(t, httpName, p.TargetPort.String(), "service port %s", p.Name)
	}

	t.Run("servicemonitor", func(t *testing.T) {
		sm := m.serviceMonitor
		requireSubset(t, m.service.Labels, sm.Spec.Selector.MatchLabels, "servicemonitor")
		require.NotEmpty(t, sm.Spec.Endpoints)
		for _, e := range sm.Spec.Endpoints {
			require.True(t, servicePorts[e.Port], "servicemonitor scrapes unknown service port %q", e.Port)
			require.Equal(t, metricsPath, e.Path)
		}
		// Without jobLabel the Prometheus Operator sets job to the Service's name, and the
		// alerts select job="offsetagent".
		require.Empty(t, sm.Spec.JobLabel)
		require.Equal(t, scrapeJob, m.service.Name)
	})

	t.Run("prometheusrule carries alerts.yaml", func(t *testing.T) {
		var plain ruleFile
		decodeYAML(t, alertsPath, &plain, true)
		var alerts []string
		for _, g := range plain.Groups {
			for _, r := range g.Rules {
				alerts = append(alerts, r.Alert)
			}
		}
		var got []string
		for _, g := range m.prometheusRule.Spec.Groups {
			for _, r := range g.Rules {
				got = append(got, r.Alert)
			}
		}
		require.Equal(t, alerts, got)
	})

	t.Run("pdb", func(t *testing.T) {
		requireSubset(t, podLabels, m.pdb.Spec.Selector.MatchLabels, "pdb")
		require.Nil(t, m.pdb.Spec.MinAvailable)
		require.Equal(t, intstr.FromInt32(1), *m.pdb.Spec.MaxUnavailable)
	})

	t.Run("networkpolicy", func(t *testing.T) {
		np := m.networkPolicy
		requireSubset(t, podLabels, np.Spec.PodSelector.MatchLabels, "networkpolicy")
		require.ElementsMatch(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes)
		require.Len(t, np.Spec.Ingress, 1)
		var in []string
		for _, p := range np.Spec.Ingress[0].Ports {
			in = append(in, p.Port.String())
		}
		require.Equal(t, []string{httpName}, in, "ingress only to the metrics port")
		out := map[string]bool{}
		for _, rule := range np.Spec.Egress {
			for _, p := range rule.Ports {
				out[string(*p.Protocol)+"/"+p.Port.String()] = true
			}
		}
		_, brokerPort, ok := strings.Cut(m.configMap.Data[envPrefix+"BROKERS"], ":")
		require.True(t, ok)
		for _, want := range []string{"UDP/53", "TCP/53", "TCP/" + brokerPort, "TCP/8083"} {
			require.True(t, out[want], "egress lacks %s", want)
		}
		// Only DNS goes to any address; the brokers and Connect each to an address block the
		// overlay sets (TestDocumentedOverlay).
		for _, rule := range np.Spec.Egress {
			dns := len(rule.Ports) > 0 && rule.Ports[0].Port.String() == "53"
			if dns {
				continue
			}
			require.Len(t, rule.To, 1, "egress to %v is limited to an address block", rule.Ports)
			require.NotNil(t, rule.To[0].IPBlock)
			require.NotEqual(t, "0.0.0.0/0", rule.To[0].IPBlock.CIDR)
		}
	})
}

// TestPrometheusRuleFromAlerts checks that the component's PrometheusRule is generated from
// alerts.yaml; -update rewrites it.
func TestPrometheusRuleFromAlerts(t *testing.T) {
	var b strings.Builder
	b.WriteString(`# GENERATED from deploy/prometheus/alerts.yaml: do not edit; regenerate with
# go test ./deploy/ -run TestPrometheusRuleFromAlerts -update
# The release label is the one kube-prometheus-stack's default ruleSelector matches; change it
# in your overlay to what your Prometheus selects.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: offsetagent
  labels:
    app.kubernetes.io/name: offsetagent
    app.kubernetes.io/component: agent
    release: kube-prometheus-stack
spec:
`)
	for _, line := range strings.SplitAfter(string(readFile(t, alertsPath)), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case line == "\n" || line == "":
			b.WriteString(line)
		default:
			b.WriteString("  " + line)
		}
	}
	want := strings.TrimLeft(b.String(), "\n")
	if *update {
		require.NoError(t, os.WriteFile(prometheusRulePath, []byte(want), 0o644))
	}
	require.Equal(t, want, string(readFile(t, prometheusRulePath)),
		"%s is stale: go test ./deploy/ -run TestPrometheusRuleFromAlerts -update", prometheusRulePath)

	var plain ruleFile
	decodeYAML(t, alertsPath, &plain, true)
	var operator prometheusRule
	decodeYAML(t, prometheusRulePath, &operator, true)
	require.Equal(t, plain, operator.Spec)
}

// goRuntimeEnv are the variables the manifests may set for the Go runtime itself.
var goRuntimeEnv = map[string]bool{"GOMEMLIMIT": true}

// kubernetesEnvNames returns every environment variable name the Kubernetes base sets for the
// agent (those for the Go runtime aside).
func kubernetesEnvNames(t *testing.T) []string {
	t.Helper()
	m := kustomizeBuild(t, false)
	var names []string
	for k := range m.configMap.Data {
		names = append(names, k)
	}
	for k := range m.secret.Data {
		names = append(names, k)
	}
	for _, e := range m.agentContainer(t).Env {
		if goRuntimeEnv[e.Name] {
			continue // read by the Go runtime, not by agent.Config
		}
		names = append(names, e.Name)
	}
	for _, n := range names {
		require.True(t, strings.HasPrefix(n, envPrefix), "%s lacks the %s prefix", n, envPrefix)
	}
	return names
}
