package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request's way from publish to result, cut into phases from the broker's spans (tap.go):
//
//	publish             the driver's Produce of the request reaching the broker
//	to the fetch        the broker appending it until it answers the service's fetch with it
//	service             the service (agent or echo) from that answer until its result's
//	                    Produce reaches the broker, cut by its round trips on the way: each
//	                    round trip (overlapping ones together) and the service's own work
//	                    before it
//	to the driver       the broker appending the result until it answers the driver's fetch
//	receive             the driver reading that answer
//
// The phases follow each other, so they add up to the request's publish-to-result time. The
// client ids say whose a span is: the driver's ("bench-driver", "bench-watcher"), the echo's,
// the agent's ("offsetagent").

// Client ids of the bench's own franz-go clients (echo.go) and of the agent's.
const (
	clientDriver  = "bench-driver"
	clientWatcher = "bench-watcher"
	clientEcho    = "bench-echo"
	clientAgent   = "offsetagent"
)

// phaseService is the service's whole time; the phases named with servicePart first are its
// parts.
const (
	phaseService = "service: fetch answered to its result's Produce"
	servicePart  = "  of which "
)

// flight is one request of a latency measurement: its id, when the driver published it and
// when the driver read its result (Unix ns).
type flight struct {
	id     string
	t0, t1 int64
}

// spanView is a tapSpan with its API's name and the role of what it is about.
type spanView struct {
	tapSpan
	api, role string
}

// name is the span's API and role: "Produce intents".
func (s spanView) name() string {
	if s.role == "" {
		return s.api
	}
	return s.api + " " + s.role
}

// background reports whether a span of the service is off a request's path: its fetches,
// its consumer group's heartbeats and commits, metadata refreshes.
func (s spanView) background() bool {
	switch kmsg.Key(s.Key) {
	case kmsg.Fetch:
		return !s.NoWait
	case kmsg.Heartbeat, kmsg.Metadata, kmsg.ApiVersions, kmsg.JoinGroup, kmsg.SyncGroup:
		return true
	case kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.FindCoordinator:
		return s.role == "agent's group"
	}
	return false
}

// phases is what a measurement's spans say of its requests.
type phases struct {
	// byPhase holds each phase's duration per request, for the requests that took the most
	// common way (way); order lists the phases in path order.
	byPhase map[string][]time.Duration
	order   []string
	way     string
	// wayCount of requests took way, of requests in all.
	wayCount, requests int
	// perRequest counts the spans of each client, API and role over the measurement, per
	// request ("offsetagent Produce intents": 2.0).
	perRequest map[string]float64
}

// cutPhases cuts each flight into phases by spans; server is the service's client id, roles
// names the run's topics and groups.
func cutPhases(flights []flight, spans []tapSpan, server string, roles map[string]string) phases {
	views := make([]spanView, len(spans))
	for i, s := range spans {
		views[i] = spanView{tapSpan: s, api: kmsg.NameForKey(s.Key), role: roleOf(s.On, roles)}
		if s.NoWait {
			views[i].api += " (no wait)"
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].Recv < views[j].Recv })
	p := phases{byPhase: map[string][]time.Duration{}, perRequest: map[string]float64{}, requests: len(flights)}
	if len(flights) == 0 {
		return p
	}
	first, last := flights[0].t0, flights[len(flights)-1].t1
	for _, v := range views {
		if v.Recv >= first && v.Recv <= last {
			p.perRequest[v.Client+" "+v.name()] += 1 / float64(len(flights))
		}
	}
	type cut struct {
		way    string
		phases []string
		ds     []time.Duration
	}
	var cuts []cut
	ways := map[string]int{}
	for _, f := range flights {
		names, ds, ok := cutFlight(f, views, server)
		if !ok {
			continue
		}
		way := strings.Join(names, " | ")
		ways[way]++
		cuts = append(cuts, cut{way: way, phases: names, ds: ds})
	}
	for way, n := range ways {
		if n > p.wayCount || (n == p.wayCount && way < p.way) {
			p.way, p.wayCount = way, n
		}
	}
	for _, c := range cuts {
		if c.way != p.way {
			continue
		}
		if p.order == nil {
			p.order = c.phases
		}
		for i, name := range c.phases {
			p.byPhase[name] = append(p.byPhase[name], c.ds[i])
		}
	}
	return p
}

// cutFlight cuts one request into its phases, named in order; ok is false when the spans do
// not show its whole way.
func cutFlight(f flight, views []spanView, server string) (names []string, ds []time.Duration, ok bool) {
	find := func(from int64, match func(spanView) bool, bySent bool) (spanView, bool) {
		var best spanView
		found := false
		for _, v := range views {
			at := v.Recv
			if bySent {
				at = v.Sent
			}
			if at < from || at > f.t1 || !match(v) {
				continue
			}
			if !found || at < pick(best, bySent) {
				best, found = v, true
			}
		}
		return best, found
	}
	pub, ok := find(f.t0, func(v spanView) bool {
		return v.Client == clientDriver && kmsg.Key(v.Key) == kmsg.Produce && v.role == "requests"
	}, false)
	if !ok {
		return nil, nil, false
	}
	fetch, ok := find(pub.Recv, func(v spanView) bool {
		return v.Client == server && kmsg.Key(v.Key) == kmsg.Fetch && v.role == "requests" && v.Records
	}, true)
	if !ok {
		return nil, nil, false
	}
	res, ok := find(fetch.Sent, func(v spanView) bool {
		return v.Client == server && kmsg.Key(v.Key) == kmsg.Produce && v.role == "results"
	}, false)
	if !ok {
		return nil, nil, false
	}
	got, ok := find(res.Recv, func(v spanView) bool {
		return v.Client == clientWatcher && kmsg.Key(v.Key) == kmsg.Fetch && v.role == "results" && v.Records
	}, true)
	if !ok {
		return nil, nil, false
	}
	add := func(name string, d int64) {
		names = append(names, name)
		ds = append(ds, time.Duration(d))
	}
	add("publish: driver to broker", pub.Recv-f.t0)
	add("broker: request appended, service's fetch answered", fetch.Sent-pub.Recv)
	// The service's round trips between its fetch and its result, overlapping ones merged;
	// its whole time first, which the parts after it add up to.
	add(phaseService, res.Recv-fetch.Sent)
	end, step := fetch.Sent, 0
	var group []spanView
	flush := func() {
		if len(group) == 0 {
			return
		}
		step++
		start, stop := group[0].Recv, group[0].Sent
		parts := make([]string, 0, len(group))
		for _, g := range group {
			stop = max(stop, g.Sent)
			parts = append(parts, g.name())
		}
		slices.Sort(parts)
		add(fmt.Sprintf("%sits work before round trip %d", servicePart, step), start-end)
		add(fmt.Sprintf("%sround trip %d: %s", servicePart, step, strings.Join(parts, " + ")), stop-start)
		end, group = stop, nil
	}
	for _, v := range views {
		if v.Client != server || v.background() || v.Recv < fetch.Sent || v.Recv >= res.Recv {
			continue
		}
		if len(group) > 0 {
			stop := group[0].Sent
			for _, g := range group {
				stop = max(stop, g.Sent)
			}
			if v.Recv > stop {
				flush()
			}
		}
		group = append(group, v)
	}
	flush()
	add(servicePart+"its work before its result's Produce", res.Recv-end)
	add("broker: result appended, driver's fetch answered", got.Sent-res.Recv)
	add("receive: driver reads the result", f.t1-got.Sent)
	return names, ds, true
}

func pick(v spanView, bySent bool) int64 {
	if bySent {
		return v.Sent
	}
	return v.Recv
}

// roleOf names what a span is about by the run's roles of its topics and groups (the first
// known one), else by its own text.
func roleOf(on string, roles map[string]string) string {
	if on == "" {
		return ""
	}
	var out []string
	for _, n := range strings.Split(on, ",") {
		r, ok := roles[n]
		if !ok {
			r = n
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return strings.Join(out, ",")
}

// countRows turns the spans per request of the agent and the echo into rows: every client,
// API and role of either, the agent's count beside the echo's.
func countRows(sc string, agent, echo map[string]float64) []row {
	keys := slices.Sorted(maps.Keys(agent))
	for k := range echo {
		if _, ok := agent[k]; !ok {
			keys = append(keys, k)
		}
	}
	var rows []row
	for _, k := range keys {
		if agent[k] < 0.005 && echo[k] < 0.005 {
			continue
		}
		r := ratioRow(sc, "round trips per request: "+k, agent[k], echo[k], "%.2f", "", 0)
		r.ratio = nanRatio()
		rows = append(rows, r)
	}
	return rows
}
