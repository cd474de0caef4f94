package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// publish compresses requests with OFFSETAGENT_REQUEST_COMPRESSION (snappy when unset): a
// request published with each codec is answered succeeded, and its record on the request topic
// is in a batch of that codec. An unknown codec is a configuration error naming the variable.
func TestPublishCompressesRequests(t *testing.T) {
	addr := startEmbeddedAgent(t)

	// kgo's compression type of a record's batch: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
	tests := []struct {
		name    string
		setting string
		codec   uint8
		offsets int // FileStream offsets that make the request large (about 60 bytes each)
	}{
		{name: "unset is snappy", setting: "", codec: 2},
		{name: "none", setting: "none", codec: 0},
		{name: "gzip", setting: "gzip", codec: 1},
		{name: "snappy", setting: "snappy", codec: 2},
		{name: "lz4", setting: "lz4", codec: 3},
		{name: "zstd", setting: "zstd", codec: 4},
		{name: "snappy, above kafka-go's default 1 MiB", setting: "snappy", codec: 2, offsets: 30_000},
	}
	want := map[string]uint8{}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OFFSETAGENT_REQUEST_COMPRESSION", tt.setting)
			name := fmt.Sprintf("file-src-codec-%d", i)
			body := strings.Replace(demoRequest, `"file-src-1"`, fmt.Sprintf("%q", name), 1)
			if tt.offsets > 0 {
				var offs strings.Builder
				for k := range tt.offsets {
					fmt.Fprintf(&offs, `,{"partition":{"filename":"file-%06d.txt"},"offset":{"position":%d}}`, k, k)
				}
				i := strings.LastIndex(body, "]")
				body = body[:i] + offs.String() + body[i:]
			}
			var out, errOut bytes.Buffer
			code := 1
			// The agent creates the request topic when it starts; retry until it exists.
			for attempt := 0; code == 1 && out.Len() == 0 && attempt < 50; attempt++ {
				if attempt > 0 {
					time.Sleep(200 * time.Millisecond)
				}
				out.Reset()
				errOut.Reset()
				code = run([]string{"publish", "--wait", "--timeout", "30s", "-"}, strings.NewReader(body), &out, &errOut)
			}
			require.Equal(t, 0, code, "%s\n%.2000s", errOut.String(), out.String())
			require.Contains(t, out.String(), `"type": "offsetagent.connector.create.succeeded"`)
			want[name] = tt.codec
		})
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("connect-offset-requests"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	got := map[string]uint8{}
	fctx, fcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer fcancel()
	for len(got) < len(want) && fctx.Err() == nil {
		cl.PollFetches(fctx).EachRecord(func(r *kgo.Record) { got[string(r.Key)] = r.Attrs.CompressionType() })
	}
	require.Equal(t, want, got)

	t.Setenv("OFFSETAGENT_REQUEST_COMPRESSION", "brotli")
	var errOut bytes.Buffer
	require.Equal(t, 2, run([]string{"publish", "-"}, strings.NewReader(demoRequest), &bytes.Buffer{}, &errOut))
	require.Contains(t, errOut.String(), `OFFSETAGENT_REQUEST_COMPRESSION: compression "brotli": must be none, gzip, snappy, lz4 or zstd`)
}
