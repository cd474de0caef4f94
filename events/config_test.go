package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigJSON(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		json string
	}{
		{name: "nil", cfg: nil, json: `null`},
		{name: "empty", cfg: Config{}, json: `{}`},
		{
			name: "order, null and escapes kept",
			cfg:  Config{{Key: "z", Value: "1"}, {Key: "a", Null: true}, {Key: "re", Value: `<a&b>"\`}, {Key: "ü", Value: "\n"}},
			json: `{"z":"1","a":null,"re":"\u003ca\u0026b\u003e\"\\","ü":"\n"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.cfg)
			require.NoError(t, err)
			require.Equal(t, tt.json, string(got))

			var back Config
			require.NoError(t, json.Unmarshal(got, &back))
			require.Equal(t, tt.cfg, back)
		})
	}
}

func TestConfigUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		message string
	}{
		{name: "array", json: `[]`, message: "config must be an object of strings, got array"},
		{name: "nested", json: `{"a":{}}`, message: `config value for "a" must be a string, got object`},
		{name: "trailing", json: `{} {}`, message: "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			err := json.Unmarshal([]byte(tt.json), &c)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.message)
		})
	}
}

func TestConfigGetAndMap(t *testing.T) {
	cfg := Config{{Key: "a", Value: "1"}, {Key: "n", Null: true}}
	tests := []struct {
		name    string
		key     string
		want    string
		present bool
	}{
		{name: "present", key: "a", want: "1", present: true},
		{name: "null is present and empty", key: "n", want: "", present: true},
		{name: "absent", key: "b", want: "", present: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := cfg.Get(tt.key)
			require.Equal(t, tt.want, v)
			require.Equal(t, tt.present, ok)
		})
	}
	require.Equal(t, map[string]string{"a": "1", "n": ""}, cfg.Map())
}

func TestConfigRedacted(t *testing.T) {
	tests := []struct {
		name   string
		key    string
		secret bool
	}{
		{name: "password", key: "connection.password", secret: true},
		{name: "ssl key password", key: "ssl.key.password", secret: true},
		{name: "case-insensitive", key: "DB_PASSWORD", secret: true},
		{name: "secret", key: "aws.secretAccessKey", secret: true},
		{name: "token", key: "github.access.token", secret: true},
		{name: "credentials", key: "gcs.credentials.json", secret: true},
		{name: "dot key suffix", key: "ssl.key", secret: true},
		{name: "jaas", key: "sasl.jaas.config", secret: true},
		{name: "prefixed jaas", key: "source.cluster.sasl.jaas.config", secret: true},
		{name: "schema registry user info", key: "value.converter.basic.auth.user.info", secret: true},
		{name: "connector class", key: "connector.class", secret: false},
		{name: "key converter", key: "key.converter", secret: false},
		{name: "keystore location", key: "ssl.keystore.location", secret: false},
		{name: "tasks", key: "tasks.max", secret: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{{Key: tt.key, Value: "v"}, {Key: tt.key + ".x", Null: true}}
			got := cfg.Redacted()
			want := "v"
			if tt.secret {
				want = HiddenValue
			}
			require.Equal(t, want, got[0].Value)
			require.True(t, got[1].Null, "null entries stay null")
			require.Equal(t, "v", cfg[0].Value, "the original is untouched")
		})
	}
	require.Nil(t, Config(nil).Redacted())
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	cfg := Config{{Key: "connection.password", Value: "hunter2"}, {Key: "a", Value: "b"}}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "config", cfg)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "config", cfg)
	buf.WriteString(fmt.Sprintf("%v %+v %s", cfg, cfg, cfg))
	require.NotContains(t, buf.String(), "hunter2")
	require.Contains(t, buf.String(), "connection.password=[hidden], a=b")
}
