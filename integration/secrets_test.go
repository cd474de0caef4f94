package integration

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// Secrets are hidden wherever the agent shows a config: by the family's PASSWORD keys where the
// registry knows the class (a Debezium MongoDB connection string is hidden whole), by the name
// rule otherwise, and passwords inside URIs are masked. Result events, dry-run plans, failure
// messages (here Connect's validation quoting a value) and logs alike; Connect's config topic
// gets the values verbatim.
func TestSecretsWhereverTheyHide(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	// A Connect cluster whose validation refuses a value by quoting it, as a plugin's own
	// validator may.
	connect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/connector-plugins":
			_, _ = w.Write([]byte(`[]`))
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":404,"message":"Connector not found"}`))
		case strings.HasSuffix(r.URL.Path, "/config/validate"):
			var props map[string]string
			_ = json.NewDecoder(r.Body).Decode(&props)
			errs := []string{}
			count := 0
			if v, ok := props["vendor.signing.token"]; ok {
				errs, count = []string{"Invalid value " + v + " for configuration vendor.signing.token: expired"}, 1
			}
			b, _ := json.Marshal(map[string]any{"name": props["connector.class"], "error_count": count, "groups": []string{},
				"configs": []any{map[string]any{"definition": map[string]any{"name": "vendor.signing.token", "type": "STRING"},
					"value": map[string]any{"name": "vendor.signing.token", "value": nil, "errors": errs}}}})
			_, _ = w.Write(b)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(connect.Close)
	cfg.ConnectURL = connect.URL
	logs := &lockedBuffer{}
	startAgent(t, cfg, agent.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	cl := newClient(t, cfg)

	// A known family, dry run: its connection string is a PASSWORD-type key, hidden whole; a
	// client certificate chain behind a prefix too; the name rule still hides the rest.
	mongo := `{"name":"mongo-src","config":{"connector.class":"io.debezium.connector.mongodb.MongoDbConnector","topic.prefix":"m",
	  "mongodb.connection.string":"mongodb://dbz:pw-Zq8-mongo@m1:27017,m2:27017/?replicaSet=rs0",
	  "producer.override.ssl.keystore.certificate.chain":"pw-Zq8-chain",
	  "snowflake.private.key.passphrase":"pw-Zq8-pass"}}`
	res := cl.waitResult(cl.publish(mongo, events.RequestOptions{DryRun: true}), resultWait)
	require.Equal(t, events.TypeCreatePlanned, res.Type, res.Data.Message)
	shown := res.Data.Config.Map()
	require.Equal(t, events.HiddenValue, shown["mongodb.connection.string"])
	require.Equal(t, events.HiddenValue, shown["producer.override.ssl.keystore.certificate.chain"])
	require.Equal(t, events.HiddenValue, shown["snowflake.private.key.passphrase"])
	plan := decodePlan(t, res)
	require.Len(t, plan.ConfigRecords, 2)
	require.Contains(t, *plan.ConfigRecords[1].Value, `"mongodb.connection.string":"[hidden]"`)
	require.NotContains(t, string(res.Msg.Value), "Zq8", "the planned result leaks")

	// An unknown class: the name rule, and the password inside a URI masked.
	uri := `{"name":"uri-src","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"a.txt","topic":"t",
	  "connection.uri":"mongodb+srv://app:pw-Zq8-uri@cluster0.example.net/shop?retryWrites=true",
	  "connection.url":"jdbc:sqlserver://db:1433;databaseName=shop;user=app;password=pw-Zq8-jdbc"}}`
	res = cl.waitResult(cl.publish(uri, events.RequestOptions{}), resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	shown = res.Data.Config.Map()
	require.Equal(t, "mongodb+srv://app:[hidden]@cluster0.example.net/shop?retryWrites=true", shown["connection.uri"])
	require.Equal(t, "jdbc:sqlserver://db:1433;databaseName=shop;user=app;password=[hidden]", shown["connection.url"])
	require.NotContains(t, string(res.Msg.Value), "Zq8", "the succeeded result leaks")
	live := cl.live(cfg.ConfigTopic)
	require.Contains(t, live["connector-uri-src"].Value, "pw-Zq8-uri", "Connect gets the real value")
	require.Contains(t, live["connector-uri-src"].Value, "pw-Zq8-jdbc", "Connect gets the real value")

	// Connect's validation quotes the value it refused: the failure message hides it.
	bad := `{"name":"vendor-src","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"a.txt","topic":"t",
	  "vendor.signing.token":"pw-Zq8-token"}}`
	res = cl.waitResult(cl.publish(bad, events.RequestOptions{}), resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type)
	require.Equal(t, "validate_config", res.Data.FailedStep)
	require.Contains(t, res.Data.Message, "Invalid value [hidden] for configuration vendor.signing.token: expired")
	require.NotContains(t, string(res.Msg.Value), "Zq8", "the failed result leaks")

	require.Contains(t, logs.String(), "vendor-src", "the agent logged the requests (the check below is not vacuous)")
	require.NotContains(t, logs.String(), "Zq8", "the logs leak")
}
