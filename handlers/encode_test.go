package handlers

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// EncodeOffsets splits large requests into ranges encoded in parallel: the records must be those
// of encoding each entry on its own, in request order, without the null offsets.
func TestEncodeOffsetsParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	entries := testEntries(3*8192 + 11) // several ranges of encoding
	var want []offsetstore.Record
	for _, e := range entries {
		if e.Offset == nil {
			continue
		}
		want = append(want, offsetstore.Record{
			Key:       offsetstore.AppendKey(nil, "conn", offsetstore.JavaHashMapOrder(e.Partition)),
			Value:     offsetstore.AppendJSON(nil, offsetstore.JavaHashMapOrder(e.Offset)),
			Partition: -1,
		})
	}
	got := offsetstore.EncodeOffsets("conn", offsetEntries(entries), nil)
	require.Equal(t, make([]events.OffsetEntry, len(entries)), entries, "entries are released as they are encoded")
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, string(want[i].Key), string(got[i].Key), "record %d", i)
		require.Equal(t, string(want[i].Value), string(got[i].Value), "record %d", i)
		require.Equal(t, -1, got[i].Partition)
	}
	// A connector's own partition order is used as it is.
	reverse := func(m jsonvalue.Map) jsonvalue.Map {
		out := make(jsonvalue.Map, 0, len(m))
		for i := len(m) - 1; i >= 0; i-- {
			out = append(out, m[i])
		}
		return out
	}
	got = offsetstore.EncodeOffsets("conn", offsetEntries(testEntries(3)), reverse)
	require.Equal(t, `["conn",{"cluster":"src","partition":1,"topic":"t1"}]`, string(got[0].Key))
}

// testEntries are n MM2-like offsets, every fifth with a null offset.
func testEntries(n int) []events.OffsetEntry {
	entries := make([]events.OffsetEntry, n)
	for i := range entries {
		entries[i].Partition = jsonvalue.Map{
			{Key: "topic", Value: "t" + strconv.Itoa(i%37)},
			{Key: "partition", Value: jsonvalue.Number(strconv.Itoa(i))},
			{Key: "cluster", Value: "src"},
		}
		if i%5 != 0 {
			entries[i].Offset = jsonvalue.Map{{Key: "offset", Value: jsonvalue.Number(strconv.Itoa(7 * i))}, {Key: "a", Value: true}}
		}
	}
	return entries
}

// validate_offsets asks for a garbage collection before validating a large request (the request
// record is garbage by then: its values were copied out) and after encoding it (the decoded
// offsets are), and for none on a small request.
func TestValidateOffsetsCollectsAroundLargeRequests(t *testing.T) {
	var j *job
	var encoded []bool // at each collection: were the records encoded yet?
	c := &Creator{gc: &collector{collect: func() { encoded = append(encoded, j.records != nil) }}}
	for _, tc := range []struct {
		n    int
		want []bool
	}{{10, nil}, {collectAfterOffsets - 1, nil}, {collectAfterOffsets, []bool{false, true}}} {
		encoded = nil
		j = &job{req: &events.Request{Data: events.CreateRequest{InitialOffsets: testEntries(tc.n)}}, name: "conn", typ: connectors.Source}
		require.NoError(t, c.validateOffsets(context.Background(), j))
		require.Equal(t, tc.want, encoded, "%d offsets", tc.n)
		require.Nil(t, j.req.Data.InitialOffsets)
	}
}

// Large requests at once share a collection instead of queueing one each.
func TestCollectionsAreShared(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	var calls atomic.Int32
	g := &collector{collect: func() {
		calls.Add(1)
		<-release
	}}
	var wg sync.WaitGroup
	wg.Go(g.collectUnlessRunning)
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	for range 10 {
		done := make(chan struct{})
		go func() {
			g.collectUnlessRunning()
			close(done)
		}()
		select {
		case <-done: // at once: one is running
		case <-time.After(5 * time.Second):
			t.Fatal("a collection waited for the running one")
		}
	}
	free()
	wg.Wait()
	require.Equal(t, int32(1), calls.Load())
	g.collect = func() { calls.Add(1) }
	g.collectUnlessRunning() // none running now
	require.Equal(t, int32(2), calls.Load())
}
