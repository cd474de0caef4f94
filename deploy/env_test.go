package deploy_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/stretchr/testify/require"
)

// configEnvNames returns the environment variables agent.Config reads, found by reflecting over
// its go-envconfig tags (nested structs included, with their prefix= option), so the manifests
// are checked against the code rather than a copy of its variable list.
func configEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	collectEnvNames(reflect.TypeFor[agent.Config](), "", names)
	require.NotEmpty(t, names, "agent.Config has no env tags")
	return names
}

func collectEnvNames(typ reflect.Type, prefix string, names map[string]bool) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("env"), ",")
		name = strings.TrimSpace(name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if name != "" {
			// The command loads the config with the OFFSETAGENT_ prefix; a tag may spell it out.
			full := prefix + name
			if !strings.HasPrefix(full, envPrefix) {
				full = envPrefix + full
			}
			names[full] = true
			continue
		}
		if ft.Kind() == reflect.Struct {
			nested := prefix
			for _, opt := range strings.Split(opts, ",") {
				if p, ok := strings.CutPrefix(strings.TrimSpace(opt), "prefix="); ok {
					nested += p
				}
			}
			collectEnvNames(ft, nested, names)
		}
	}
}

func TestEnvNamesKnownToTheAgent(t *testing.T) {
	known := configEnvNames(t)
	tests := []struct {
		name  string
		names func(t *testing.T) []string
	}{
		{name: "kubernetes", names: kubernetesEnvNames},
		{name: "compose", names: composeEnvNames},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range tt.names(t) {
				require.True(t, known[n], "%s is not read by agent.Config", n)
			}
		})
	}
}
