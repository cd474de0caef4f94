package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The tap makes a span of a request frame and its response frame: the request's API, client,
// topics, and the times both passed; a Fetch response with records says so.
func TestTapSpans(t *testing.T) {
	tp := newTap()
	format := kmsg.NewRequestFormatter(kmsg.FormatterClientID("offsetagent"))
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.MaxWaitMillis = 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "connect-configs-1"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	req.Topics = append(req.Topics, ft)
	frame := format.AppendRequest(nil, req, 7)
	tp.frame(1, false, frame[4:], 100)

	res := kmsg.NewPtrFetchResponse()
	res.SetVersion(11)
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "connect-configs-1"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = []byte{1, 2, 3}
	rt.Partitions = append(rt.Partitions, rp)
	res.Topics = append(res.Topics, rt)
	out := res.AppendTo([]byte{0, 0, 0, 7}) // the correlation id, then the body
	tp.frame(1, true, out, 250)

	spans := tp.take()
	require.Len(t, spans, 1)
	s := spans[0]
	require.Equal(t, tapSpan{Conn: 1, Client: "offsetagent", Key: int16(kmsg.Fetch), On: "connect-configs-1",
		Recv: 100, Sent: 250, Records: true, NoWait: true, corr: 7}, s)
	require.Empty(t, tp.take(), "taken once")
}

// A request's phases follow each other from its publish to its result, so they add up to
// its latency; the service's round trips are cut out of its time, overlapping ones together,
// and its fetches and commits are left out as background.
func TestCutPhases(t *testing.T) {
	roles := map[string]string{"req": "requests", "res": "results", "in": "intents", "cfg": "configs", "grp": "agent's group"}
	span := func(client string, key kmsg.Key, on string, recv, sent int64, records bool) tapSpan {
		return tapSpan{Client: client, Key: int16(key), On: on, Recv: recv, Sent: sent, Records: records}
	}
	spans := []tapSpan{
		span(clientAgent, kmsg.Fetch, "req", 0, 120, true),                // the long poll answered with the request
		span(clientDriver, kmsg.Produce, "req", 100, 110, false),          // the publish
		span(clientAgent, kmsg.Produce, "in", 200, 240, false),            // round trip 1
		span(clientAgent, kmsg.Fetch, "in", 150, 245, true),               // background
		span(clientAgent, kmsg.Produce, "cfg", 300, 330, false),           // round trip 2, with
		span(clientAgent, kmsg.Fetch, "cfg", 310, 350, false),             // background
		span(clientAgent, kmsg.OffsetCommit, "grp", 320, 325, false),      // background
		span(clientAgent, kmsg.ListOffsets, "cfg", 320, 360, false),       // overlapping: round trip 2
		span(clientAgent, kmsg.Produce, "res", 400, 420, false),           // the result
		span(clientWatcher, kmsg.Fetch, "res", 50, 430, true),             // the driver's poll
		span(clientAgent, kmsg.Produce, "req", 500, 510, false),           // after the result: not counted
		span(clientWatcher, kmsg.Fetch, "res", 431, 900, false),           // the next poll
		span(clientDriver, kmsg.Produce, "req", 1000, 1010, false),        // the next request
		span(clientAgent, kmsg.Fetch, "req", 121, 1020, true),             // its fetch
		span(clientAgent, kmsg.Produce, "res", 1100, 1120, false),         // its result
		span(clientWatcher, kmsg.Fetch, "res", 901, 1130, true),           // read
		span(clientAgent, kmsg.FindCoordinator, "grp", 1050, 1060, false), // background
	}
	flights := []flight{{id: "a", t0: 90, t1: 450}, {id: "b", t0: 990, t1: 1140}}
	p := cutPhases(flights, spans, clientAgent, roles)
	require.Equal(t, 2, p.requests)
	require.Equal(t, 1, p.wayCount, "the two requests took different ways")
	first := []string{
		"publish: driver to broker",
		"broker: request appended, service's fetch answered",
		phaseService,
		servicePart + "its work before round trip 1",
		servicePart + "round trip 1: Produce intents",
		servicePart + "its work before round trip 2",
		servicePart + "round trip 2: ListOffsets configs + Produce configs",
		servicePart + "its work before its result's Produce",
		"broker: result appended, driver's fetch answered",
		"receive: driver reads the result",
	}
	second := []string{first[0], first[1], first[2], first[7], first[8], first[9]}
	want := first
	if p.way != joinWay(first) {
		want = second
	}
	require.Equal(t, want, p.order)
	var total, service time.Duration
	for _, name := range p.order {
		d := p.byPhase[name][0]
		switch {
		case name == phaseService:
		case len(name) > len(servicePart) && name[:len(servicePart)] == servicePart:
			service += d
		default:
			total += d
		}
	}
	require.Equal(t, p.byPhase[phaseService][0], service, "the service's parts add up to its time")
	if want[0] == first[0] && p.way == joinWay(first) {
		require.Equal(t, time.Duration(450-90), total+service)
	} else {
		require.Equal(t, time.Duration(1140-990), total+service)
	}
	require.InDelta(t, 1.0, p.perRequest[clientAgent+" OffsetCommit agent's group"]*2, 0.001)
}

func joinWay(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += " | "
		}
		out += n
	}
	return out
}
