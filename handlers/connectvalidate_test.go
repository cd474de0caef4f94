package handlers

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/connecttest"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// connectValidator is the agent's ConfigValidator of the Connect REST API at url.
func connectValidator(t *testing.T, url string, hc *http.Client) *ConnectValidator {
	t.Helper()
	c, err := connectrest.New(url, hc)
	require.NoError(t, err)
	return NewConnectValidator(c)
}

// Exists answers as the client does; Connect's own error answer is a permanent *Failure.
func TestConnectValidatorExists(t *testing.T) {
	tests := []struct {
		name, connector, wantURI string
		answer                   connecttest.Recorded
		want                     bool
		wantFailure              *Failure
		wantTransient            bool
	}{
		{name: "existing connector", connector: "file-sink-1", wantURI: "/connectors/file-sink-1",
			answer: connecttest.Recorded{Status: 200, File: "connector-exists.json"}, want: true},
		{name: "unknown connector", connector: "file-sink-1", wantURI: "/connectors/file-sink-1",
			answer: connecttest.Recorded{Status: 404, File: "connector-not-found.json"}, want: false},
		{name: "name escaped", connector: "my sink/1?x#y", wantURI: "/connectors/my%20sink%2F1%3Fx%23y",
			answer: connecttest.Recorded{Status: 404, File: "connector-not-found.json"}, want: false},
		{name: "connect error body", connector: "c", wantURI: "/connectors/c",
			answer:      connecttest.Recorded{Status: 500, File: "plugin-not-found.json"},
			wantFailure: &Failure{Code: 500, Reason: kafkaio.ReasonPermanent}},
		{name: "rebalance 409 is transient", connector: "c", wantURI: "/connectors/c",
			answer:        connecttest.Recorded{Status: 409, Body: `{"error_code":409,"message":"Cannot complete request momentarily due to no known leader URL, likely because a rebalance was underway."}`},
			wantTransient: true},
		{name: "rebalance expected is transient", connector: "c", wantURI: "/connectors/c",
			answer:        connecttest.Recorded{Status: 500, Body: `{"error_code":500,"message":"Request cannot be completed because a rebalance is expected"}`},
			wantTransient: true},
		{name: "gateway 503 is transient", connector: "c", wantURI: "/connectors/c",
			answer: connecttest.Recorded{Status: 503, Body: "<html>503 Service Unavailable</html>"}, wantTransient: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := connecttest.StartRecording(t, map[string]connecttest.Recorded{"GET " + tc.wantURI: tc.answer})
			c := connectValidator(t, srv.URL, srv.Client())
			got, err := c.Exists(t.Context(), tc.connector)
			require.Len(t, f.Requests(), 1)
			require.Equal(t, tc.wantURI, f.Requests()[0].URI)
			switch {
			case tc.wantFailure != nil:
				var fl *Failure
				require.ErrorAs(t, err, &fl)
				require.Equal(t, tc.wantFailure.Code, fl.Code)
				require.Equal(t, tc.wantFailure.Reason, fl.Reason)
				require.Contains(t, fl.Message, "Failed to find any class that implements Connector")
			case tc.wantTransient:
				_, transient := kafkaio.Classify(err)
				require.True(t, transient, "%v", err)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
		})
	}
}

const msgTwoErrors = "Connector configuration is invalid and contains the following 2 error(s):\n" +
	"Invalid value soon for configuration errors.retry.timeout: Not a number of type LONG\n" +
	"Invalid value some for configuration errors.tolerance: String must be one of: none, all\n" +
	"You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"

func TestConnectValidatorValidate(t *testing.T) {
	plugins := connecttest.Recorded{Status: 200, File: "connector-plugins.json"}
	const pluginsURI = "/connector-plugins?connectorsOnly=true"
	tests := []struct {
		name, class, validateURI string
		answer                   connecttest.Recorded
		noPlugins                bool
		wantType                 string
		wantFailure              *Failure
		wantReason               kafkaio.Reason // for errors that are not Failures
	}{
		{name: "valid, type from the plugin list", class: "com.example.MySinkConnector",
			validateURI: "/connector-plugins/com.example.MySinkConnector/config/validate",
			answer:      connecttest.Recorded{Status: 200, File: "validate-ok.json"}, wantType: "sink"},
		{name: "alias without Connector", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      connecttest.Recorded{Status: 200, File: "validate-ok.json"}, wantType: "source"},
		{name: "simple name", class: "MirrorSourceConnector",
			validateURI: "/connector-plugins/MirrorSourceConnector/config/validate",
			answer:      connecttest.Recorded{Status: 200, File: "validate-ok.json"}, wantType: "source"},
		{name: "class not listed", class: "com.example.Other",
			validateURI: "/connector-plugins/com.example.Other/config/validate",
			answer:      connecttest.Recorded{Status: 200, File: "validate-ok.json"}, wantType: "unknown"},
		{name: "two errors aggregated as POST /connectors would", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      connecttest.Recorded{Status: 200, File: "validate-errors.json"}, noPlugins: true,
			wantFailure: &Failure{Code: 400, Message: msgTwoErrors, Reason: kafkaio.ReasonPermanent}},
		{name: "plugin not found, unwrapped", class: "com.example.Missing",
			validateURI: "/connector-plugins/com.example.Missing/config/validate",
			answer:      connecttest.Recorded{Status: 500, File: "plugin-not-found.json"}, noPlugins: true,
			wantFailure: &Failure{Code: 500, Reason: kafkaio.ReasonPermanent}},
		// Apache Kafka 4.3.1: the validate endpoint answers the validation's exception as the
		// ExecutionException wrapping it (500, "<class>: <message>"), POST /connectors the
		// exception itself (here a BadRequestException: 400).
		{name: "plugin not found, as POST answers it", class: "com.example.Missing",
			validateURI: "/connector-plugins/com.example.Missing/config/validate",
			answer:      connecttest.Recorded{Status: 500, File: "validate-unknown-class.json"}, noPlugins: true,
			wantFailure: &Failure{Code: 400, Reason: kafkaio.ReasonPermanent,
				Message: "org.apache.kafka.connect.errors.ConnectException: Failed to find any class that implements Connector and which name matches com.example.Missing, available connectors are: PluginDesc{klass=class org.apache.kafka.connect.file.FileStreamSinkConnector, name='org.apache.kafka.connect.file.FileStreamSinkConnector', version='4.3.1', encodedVersion=4.3.1, type=sink, typeName='sink', location='classpath'}"}},
		{name: "bad request of the validation, as POST answers it", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      connecttest.Recorded{Status: 500, Body: `{"error_code":500,"message":"org.apache.kafka.connect.runtime.rest.errors.BadRequestException: Unbounded range: [1.0"}`}, noPlugins: true,
			wantFailure: &Failure{Code: 400, Message: "Unbounded range: [1.0", Reason: kafkaio.ReasonPermanent}},
		{name: "other exception of the validation, as POST answers it", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      connecttest.Recorded{Status: 500, File: "validate-npe.json"}, noPlugins: true,
			wantFailure: &Failure{Code: 500, Reason: kafkaio.ReasonPermanent,
				Message: `Cannot invoke "java.util.List.stream()" because the return value of "org.apache.kafka.connect.runtime.isolation.VersionedPluginLoadingException.availableVersions()" is null`}},
		{name: "not found of the validation, as POST answers it", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      connecttest.Recorded{Status: 500, Body: `{"error_code":500,"message":"org.apache.kafka.connect.errors.NotFoundException: gone"}`}, noPlugins: true,
			wantFailure: &Failure{Code: 404, Message: "gone", Reason: kafkaio.ReasonPermanent}},
		{name: "a 500 whose text only looks like a class", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      connecttest.Recorded{Status: 500, Body: `{"error_code":500,"message":"Failed to start: disk full"}`}, noPlugins: true,
			wantFailure: &Failure{Code: 500, Message: "Failed to start: disk full", Reason: kafkaio.ReasonPermanent}},
		{name: "a 400 keeps its text", class: "FileStreamSource",
			validateURI: "/connector-plugins/FileStreamSource/config/validate",
			answer:      connecttest.Recorded{Status: 400, Body: `{"error_code":400,"message":"org.apache.kafka.Some Exception: x"}`}, noPlugins: true,
			wantFailure: &Failure{Code: 400, Message: "org.apache.kafka.Some Exception: x", Reason: kafkaio.ReasonPermanent}},
		{name: "class escaped", class: "a/b c",
			validateURI: "/connector-plugins/a%2Fb%20c/config/validate",
			answer:      connecttest.Recorded{Status: 200, File: "validate-ok.json"}, wantType: "unknown"},
		{name: "connect request timeout is transient", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      connecttest.Recorded{Status: 500, File: "request-timed-out.json"}, noPlugins: true, wantReason: kafkaio.ReasonTimeout},
		{name: "bad gateway is transient", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      connecttest.Recorded{Status: 502, Body: "Bad Gateway"}, noPlugins: true, wantReason: kafkaio.ReasonTimeout},
		{name: "unauthorized proxy is permanent", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      connecttest.Recorded{Status: 401, Body: "Unauthorized"}, noPlugins: true, wantReason: kafkaio.ReasonPermanent},
		{name: "client timeout is transient", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      connecttest.Recorded{Status: 200, File: "validate-ok.json", Delay: 2 * time.Second}, noPlugins: true, wantReason: kafkaio.ReasonTimeout},
		{name: "undecodable answer is permanent", class: "FileStreamSink",
			validateURI: "/connector-plugins/FileStreamSink/config/validate",
			answer:      connecttest.Recorded{Status: 200, Body: "{"}, noPlugins: true, wantReason: kafkaio.ReasonPermanent},
	}
	config := map[string]string{"connector.class": "x", "name": "n", "tasks.max": "1"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := connecttest.StartRecording(t, map[string]connecttest.Recorded{"PUT " + tc.validateURI: tc.answer, "GET " + pluginsURI: plugins})
			hc := srv.Client()
			hc.Timeout = 500 * time.Millisecond
			c := connectValidator(t, srv.URL, hc)
			typ, err := c.Validate(t.Context(), tc.class, config)

			seen := f.Requests()
			require.NotEmpty(t, seen)
			require.Equal(t, connecttest.Seen{Method: "PUT", URI: tc.validateURI, Body: `{"connector.class":"x","name":"n","tasks.max":"1"}`, ContentType: "application/json"}, seen[0])
			if tc.noPlugins {
				require.Len(t, seen, 1, "no plugin lookup after a failed validation")
			}
			switch {
			case tc.wantFailure != nil:
				var fl *Failure
				require.ErrorAs(t, err, &fl)
				require.Equal(t, tc.wantFailure.Code, fl.Code)
				require.Equal(t, tc.wantFailure.Reason, fl.Reason)
				if tc.wantFailure.Message != "" {
					require.Equal(t, tc.wantFailure.Message, fl.Message)
				}
			case tc.wantReason != "":
				require.Error(t, err)
				require.NotErrorAs(t, err, new(*Failure))
				reason, _ := kafkaio.Classify(err)
				require.Equal(t, tc.wantReason, reason, "%v", err)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.wantType, typ)
				require.Len(t, seen, 2)
				require.Equal(t, "GET "+pluginsURI, seen[1].Method+" "+seen[1].URI)
			}
		})
	}
}

func TestConnectValidatorAmbiguousAlias(t *testing.T) {
	_, srv := connecttest.StartRecording(t, map[string]connecttest.Recorded{
		"PUT /connector-plugins/Dup/config/validate": {Status: 200, File: "validate-ok.json"},
		"GET /connector-plugins?connectorsOnly=true": {Status: 200, Body: `[{"class":"a.DupConnector","type":"sink","version":"1"},{"class":"b.DupConnector","type":"source","version":"1"}]`},
	})
	c := connectValidator(t, srv.URL, srv.Client())
	typ, err := c.Validate(t.Context(), "Dup", map[string]string{})
	require.NoError(t, err)
	require.Equal(t, "unknown", typ, "an alias two plugins share resolves to neither")
}

func TestConnectValidatorUnreachable(t *testing.T) {
	c := connectValidator(t, connecttest.ClosedURL(t), &http.Client{Timeout: time.Second})
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{name: "exists", call: func(ctx context.Context) error { _, err := c.Exists(ctx, "c"); return err }},
		{name: "validate", call: func(ctx context.Context) error { _, err := c.Validate(ctx, "c", nil); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(t.Context())
			reason, transient := kafkaio.Classify(err)
			require.True(t, transient, "%v", err)
			require.Equal(t, kafkaio.ReasonNetwork, reason)

			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			err = tc.call(ctx)
			require.True(t, errors.Is(err, context.Canceled), "%v", err)
			_, transient = kafkaio.Classify(err)
			require.False(t, transient, "a canceled call is not retried")
		})
	}
}
