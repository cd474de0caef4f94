package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
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

// Config.MarshalJSON, called by itself (as a request body is built) or through
// encoding/json (a result), writes every string byte for byte as encoding/json does.
func TestConfigMarshalJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `<a&b>"\`, "\x00\x01\x1f\x7f \b\f\n\r\t", "ü é 日本 😀", "\u2028\u2029",
		"bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", "trailing \xe2\x82"} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(jsonvalue.AppendStringHTML(nil, s)), "%q", s)

		cfg := Config{{Key: s, Value: s}, {Key: "n", Null: true}}
		wantCfg := fmt.Sprintf(`{%s:%s,"n":null}`, want, want)
		got, err := cfg.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, wantCfg, string(got))
		got, err = json.Marshal(cfg)
		require.NoError(t, err)
		require.Equal(t, wantCfg, string(got))
	}
}

func FuzzConfigMarshalJSON(f *testing.F) {
	f.Add("key", "value")
	f.Add("<&>", "\u2028\xff\n")
	f.Fuzz(func(t *testing.T, k, v string) {
		wantK, err := json.Marshal(k)
		require.NoError(t, err)
		wantV, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := Config{{Key: k, Value: v}}.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, "{"+string(wantK)+":"+string(wantV)+"}", string(got))
	})
}

// A config of ten settings is written in one allocation: every result carries one.
func TestConfigMarshalJSONAllocations(t *testing.T) {
	var cfg Config
	for i := range 10 {
		cfg = append(cfg, ConfigEntry{Key: fmt.Sprintf("setting.%d", i), Value: fmt.Sprintf("value.%d", i)})
	}
	allocs := alloctest.Least(100, func() {
		if _, err := cfg.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	})
	require.LessOrEqual(t, allocs, 1.0)
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
