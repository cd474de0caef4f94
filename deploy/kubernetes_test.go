package deploy_test

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type kustomization struct {
	Kind      string   `yaml:"kind"`
	Resources []string `yaml:"resources"`
	Images    []struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
	} `yaml:"images"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"` // a number or a port name; yaml decodes either as a string
	} `yaml:"httpGet"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			ResourceFieldRef struct {
				Resource string `yaml:"resource"`
			} `yaml:"resourceFieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type deploymentManifest struct {
	Kind     string     `yaml:"kind"`
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Replicas int           `yaml:"replicas"`
		Selector labelSelector `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
				SecurityContext               struct {
					RunAsNonRoot *bool `yaml:"runAsNonRoot"`
					RunAsUser    *int  `yaml:"runAsUser"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type serviceManifest struct {
	Kind     string     `yaml:"kind"`
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type serviceMonitorManifest struct {
	Kind     string     `yaml:"kind"`
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		JobLabel  string        `yaml:"jobLabel"`
		Selector  labelSelector `yaml:"selector"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type pdbManifest struct {
	Kind     string     `yaml:"kind"`
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		MinAvailable int           `yaml:"minAvailable"`
		Selector     labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

// envSource is a ConfigMap or Secret whose keys become the container's environment.
type envSource struct {
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
}

// keys returns the variable names a ConfigMap or Secret provides.
func (s envSource) keys() []string {
	var keys []string
	for k := range s.Data {
		keys = append(keys, k)
	}
	for k := range s.StringData {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// manifests is the decoded Kubernetes base.
type manifests struct {
	kustomization  kustomization
	deployment     deploymentManifest
	service        serviceManifest
	serviceMonitor serviceMonitorManifest
	pdb            pdbManifest
	configMap      envSource
	secret         envSource
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	var m manifests
	dir := kubernetesDir + "/"
	decodeYAML(t, dir+"kustomization.yaml", &m.kustomization, false)
	decodeYAML(t, dir+"deployment.yaml", &m.deployment, false)
	decodeYAML(t, dir+"service.yaml", &m.service, false)
	decodeYAML(t, dir+"servicemonitor.yaml", &m.serviceMonitor, false)
	decodeYAML(t, dir+"pdb.yaml", &m.pdb, false)
	decodeYAML(t, dir+"configmap.yaml", &m.configMap, false)
	decodeYAML(t, dir+"secret.yaml", &m.secret, false)
	return m
}

// agentContainer returns the Deployment's offsetagent container.
func (m manifests) agentContainer(t *testing.T) container {
	t.Helper()
	cs := m.deployment.Spec.Template.Spec.Containers
	require.Len(t, cs, 1)
	return cs[0]
}

// containerPort resolves a probe or Service port (a number or a port name) to a number.
func containerPort(t *testing.T, c container, port string) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == port || strconv.Itoa(p.ContainerPort) == port {
			return p.ContainerPort
		}
	}
	require.Failf(t, "unknown port", "container %s has no port %q", c.Name, port)
	return 0
}

// requireSubset checks that every label of sub is in super, as a selector must be.
func requireSubset(t *testing.T, super, sub map[string]string, what string) {
	t.Helper()
	require.NotEmpty(t, sub, "%s: empty selector", what)
	for k, v := range sub {
		require.Equal(t, v, super[k], "%s: label %s", what, k)
	}
}

func TestKubernetesKustomization(t *testing.T) {
	m := loadManifests(t)
	require.Equal(t, "Kustomization", m.kustomization.Kind)
	entries, err := os.ReadDir(kubernetesDir)
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".yaml" && e.Name() != "kustomization.yaml" {
			files = append(files, e.Name())
		}
	}
	resources := append([]string(nil), m.kustomization.Resources...)
	sort.Strings(resources)
	require.Equal(t, files, resources, "kustomization.yaml must list every manifest in the directory")

	c := m.agentContainer(t)
	var images []string
	for _, img := range m.kustomization.Images {
		images = append(images, img.Name)
	}
	require.Contains(t, images, c.Image, "kustomization images must set the agent's image")
}

func TestKubernetesDeployment(t *testing.T) {
	m := loadManifests(t)
	d := m.deployment
	pod := d.Spec.Template.Spec
	c := m.agentContainer(t)
	httpPort := portOf(t, m.configMap.Data[httpAddrEnvName])

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"two replicas", func(t *testing.T) { require.Equal(t, 2, d.Spec.Replicas) }},
		{"selector matches pods", func(t *testing.T) {
			requireSubset(t, d.Spec.Template.Metadata.Labels, d.Spec.Selector.MatchLabels, "deployment")
		}},
		{"runs offsetagent run", func(t *testing.T) { require.Equal(t, []string{"run"}, c.Args) }},
		{"liveness on /healthz", func(t *testing.T) {
			require.NotNil(t, c.LivenessProbe)
			require.NotNil(t, c.LivenessProbe.HTTPGet)
			require.Equal(t, healthzPath, c.LivenessProbe.HTTPGet.Path)
			require.Equal(t, httpPort, strconv.Itoa(containerPort(t, c, c.LivenessProbe.HTTPGet.Port)))
		}},
		{"readiness on /readyz", func(t *testing.T) {
			require.NotNil(t, c.ReadinessProbe)
			require.NotNil(t, c.ReadinessProbe.HTTPGet)
			require.Equal(t, readyzPath, c.ReadinessProbe.HTTPGet.Path)
			require.Equal(t, httpPort, strconv.Itoa(containerPort(t, c, c.ReadinessProbe.HTTPGet.Port)))
		}},
		{"resources", func(t *testing.T) {
			require.NotEmpty(t, c.Resources.Requests["cpu"])
			require.NotEmpty(t, c.Resources.Requests["memory"])
			require.NotEmpty(t, c.Resources.Limits["memory"])
		}},
		{"non-root", func(t *testing.T) {
			require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
			require.True(t, *pod.SecurityContext.RunAsNonRoot)
			require.NotNil(t, pod.SecurityContext.RunAsUser)
			require.NotZero(t, *pod.SecurityContext.RunAsUser)
			if c.SecurityContext.RunAsNonRoot != nil {
				require.True(t, *c.SecurityContext.RunAsNonRoot)
			}
		}},
		{"read-only root filesystem", func(t *testing.T) {
			require.NotNil(t, c.SecurityContext.ReadOnlyRootFilesystem)
			require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
		}},
		{"no privilege escalation", func(t *testing.T) {
			require.NotNil(t, c.SecurityContext.AllowPrivilegeEscalation)
			require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
			require.Equal(t, []string{"ALL"}, c.SecurityContext.Capabilities.Drop)
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
			require.Equal(t, []string{m.configMap.Metadata.Name}, configMaps)
			require.Equal(t, []string{m.secret.Metadata.Name}, secrets)
			require.Equal(t, "ConfigMap", m.configMap.Kind)
			require.Equal(t, "Secret", m.secret.Kind)
			for _, k := range m.configMap.keys() {
				require.False(t, isCredential(k), "%s is a credential: move it to the Secret", k)
			}
			for _, k := range m.secret.keys() {
				require.True(t, isCredential(k), "%s is not a credential: move it to the ConfigMap", k)
			}
			for _, e := range c.Env {
				require.False(t, isCredential(e.Name), "%s is a credential: set it in the Secret", e.Name)
			}
		}},
		{"the Go heap's soft limit is the container's memory limit", func(t *testing.T) {
			var found bool
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					found = true
					require.Equal(t, "limits.memory", e.ValueFrom.ResourceFieldRef.Resource)
				}
			}
			require.True(t, found, "GOMEMLIMIT is not set")
		}},
		{"grace period outlasts the shutdown timeout", func(t *testing.T) {
			timeout, err := time.ParseDuration(m.configMap.Data[envPrefix+"SHUTDOWN_TIMEOUT"])
			require.NoError(t, err)
			grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
			require.Greater(t, grace, timeout+5*time.Second)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestKubernetesServiceAndMonitoring(t *testing.T) {
	m := loadManifests(t)
	c := m.agentContainer(t)
	podLabels := m.deployment.Spec.Template.Metadata.Labels
	httpPort, err := strconv.Atoi(portOf(t, m.configMap.Data[httpAddrEnvName]))
	require.NoError(t, err)

	require.Equal(t, "Service", m.service.Kind)
	requireSubset(t, podLabels, m.service.Spec.Selector, "service")
	servicePorts := map[string]bool{}
	for _, p := range m.service.Spec.Ports {
		servicePorts[p.Name] = true
		require.Equal(t, httpPort, containerPort(t, c, p.TargetPort), "service port %s", p.Name)
	}

	sm := m.serviceMonitor
	require.Equal(t, "ServiceMonitor", sm.Kind)
	requireSubset(t, m.service.Metadata.Labels, sm.Spec.Selector.MatchLabels, "servicemonitor")
	require.NotEmpty(t, sm.Spec.Endpoints)
	for _, e := range sm.Spec.Endpoints {
		require.True(t, servicePorts[e.Port], "servicemonitor scrapes unknown service port %q", e.Port)
		require.Equal(t, metricsPath, e.Path)
	}
	// Without jobLabel the Prometheus Operator sets job to the Service's name, and the alerts
	// select job="offsetagent".
	require.Empty(t, sm.Spec.JobLabel)
	require.Equal(t, scrapeJob, m.service.Metadata.Name)

	require.Equal(t, "PodDisruptionBudget", m.pdb.Kind)
	requireSubset(t, podLabels, m.pdb.Spec.Selector.MatchLabels, "pdb")
	require.Positive(t, m.pdb.Spec.MinAvailable)
	require.Less(t, m.pdb.Spec.MinAvailable, m.deployment.Spec.Replicas, "the PDB must allow a node drain")
}

// goRuntimeEnv are the variables the manifests may set for the Go runtime itself.
var goRuntimeEnv = map[string]bool{"GOMEMLIMIT": true}

// kubernetesEnvNames returns every environment variable name the Kubernetes base sets for the
// agent (those for the Go runtime aside).
func kubernetesEnvNames(t *testing.T) []string {
	t.Helper()
	m := loadManifests(t)
	names := append(m.configMap.keys(), m.secret.keys()...)
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
