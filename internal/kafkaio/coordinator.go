package kafkaio

import (
	"context"
	"fmt"
	"sync"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A consumer group's requests go to its coordinator. kafka-go's transport finds it with a
// FindCoordinator request before every group request (protocol.GroupMessage), so a sink
// request, which describes, probes, fetches, deletes and commits its group, paid six extra
// round trips, and a migration of thousands of sinks as many thousands. A client built by
// NewClient remembers each group's coordinator instead, as Kafka's own clients do, and asks
// again only when the coordinator it remembered is no longer the one: the broker answered
// NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, or the round trip to it failed.

// maxFindCoordinatorVersion is the last FindCoordinator version without tagged fields.
const maxFindCoordinatorVersion = 2

// maxCoordinators bounds the groups a client remembers the coordinator of: an agent works on
// a new group with every sink request, for as long as it runs. Past the bound, a group is
// forgotten to make room (asked for again if it is used again).
const maxCoordinators = 4096

// coordinators are the coordinators of consumer groups one client has found, by group.
type coordinators struct {
	mu  sync.Mutex
	ids map[string]int32
}

func newCoordinators() *coordinators { return &coordinators{ids: map[string]int32{}} }

func (c *coordinators) get(group string) (int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.ids[group]
	return id, ok
}

func (c *coordinators) put(group string, id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ids[group]; !ok && len(c.ids) >= maxCoordinators {
		for g := range c.ids { // any one
			delete(c.ids, g)
			break
		}
	}
	c.ids[group] = id
}

// forget drops group's coordinator if it is still id (a concurrent request may have found
// the new one already).
func (c *coordinators) forget(group string, id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.ids[group]; ok && got == id {
		delete(c.ids, group)
	}
}

// coordinatorsOf returns the coordinator cache of cl, nil for a client NewClient did not
// build (its group requests find the coordinator each time, as kafka-go does).
func coordinatorsOf(cl *kafka.Client) *coordinators {
	if ct, ok := cl.Transport.(*clientTransport); ok {
		return ct.coordinators
	}
	return nil
}

// brokerExchange is a kmsg request sent to one broker by its id (a group's coordinator).
type brokerExchange struct {
	kmsgExchange
	id int32
}

// Broker implements protocol.BrokerMessage: the transport sends the request to broker id,
// and fails it when the cluster's metadata does not know that broker.
func (e *brokerExchange) Broker(cluster protocol.Cluster) (protocol.Broker, error) {
	b, ok := cluster.Brokers[e.id]
	if !ok {
		return protocol.Broker{}, fmt.Errorf("coordinator %d: %w", e.id, kafka.BrokerNotAvailable)
	}
	return b, nil
}

var (
	_ protocol.BrokerMessage = (*brokerExchange)(nil)
	_ protocol.RawExchanger  = (*brokerExchange)(nil)
)

// findCoordinator asks any broker for group's coordinator. ok is false when the broker
// answered with an error (the group refused for an ACL, the coordinator not available yet).
func findCoordinator(ctx context.Context, cl *kafka.Client, group string) (id int32, ok bool, err error) {
	req := kmsg.NewPtrFindCoordinatorRequest() // CoordinatorType 0: a group
	req.CoordinatorKey = group
	kres, err := exchangeAny(ctx, cl, req, maxFindCoordinatorVersion)
	if err != nil {
		return 0, false, fmt.Errorf("find coordinator of group %q: %w", group, err)
	}
	res, isFind := kres.(*kmsg.FindCoordinatorResponse)
	if !isFind {
		return 0, false, fmt.Errorf("find coordinator of group %q: unexpected response %T", group, kres)
	}
	if res.ErrorCode != 0 || res.NodeID < 0 {
		return 0, false, nil
	}
	return res.NodeID, true, nil
}

// exchangeCoordinated sends req to group's coordinator, remembered in cache or found first,
// and returns its response. A remembered coordinator that answers that it no longer is one is
// forgotten and the request sent once more to the one found then; one that answers that it is
// not available, or whose round trip fails, is forgotten, and the caller's retry finds it
// again. When the broker answers FindCoordinator with an error, the request goes to
// any broker, as kafka-go sends it then, and its answer carries the error (a refused ACL is
// the request's own refusal).
func exchangeCoordinated(ctx context.Context, cl *kafka.Client, cache *coordinators, group string, req kmsg.Request, maxVersion int16) (kmsg.Response, error) {
	for attempt := 0; ; attempt++ {
		id, cached := cache.get(group)
		if !cached {
			var found bool
			var err error
			if id, found, err = findCoordinator(ctx, cl, group); err != nil {
				return nil, err
			}
			if !found {
				return exchangeAny(ctx, cl, req, maxVersion)
			}
			cache.put(group, id)
		}
		res, err := roundTrip(ctx, cl, &brokerExchange{kmsgExchange: newKmsgExchange(cl, req, maxVersion), id: id})
		if err != nil {
			cache.forget(group, id)
			return nil, err
		}
		switch coordinatorError(res) {
		case kerr.NotCoordinator.Code:
			cache.forget(group, id)
			if cached && attempt == 0 {
				// The coordinator moved since it was remembered: a client that finds the
				// coordinator before each request would not have asked this one.
				continue
			}
		case kerr.CoordinatorNotAvailable.Code:
			cache.forget(group, id) // the caller retries, as before, after its backoff
		}
		return res, nil
	}
}

// coordinatorError returns NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE when a group
// request's response carries it (the first one found), 0 otherwise: the broker it went to is
// not the group's coordinator, or the coordinator is not available.
func coordinatorError(res kmsg.Response) int16 {
	var codes []int16
	switch r := res.(type) {
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	case *kmsg.OffsetFetchResponse:
		codes = append(codes, r.ErrorCode)
		for _, g := range r.Groups {
			codes = append(codes, g.ErrorCode)
		}
	case *kmsg.OffsetDeleteResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.DescribeGroupsResponse:
		for _, g := range r.Groups {
			codes = append(codes, g.ErrorCode)
		}
	case *kmsg.DeleteGroupsResponse:
		for _, g := range r.Groups {
			codes = append(codes, g.ErrorCode)
		}
	}
	for _, c := range codes {
		if c == kerr.NotCoordinator.Code || c == kerr.CoordinatorNotAvailable.Code {
			return c
		}
	}
	return 0
}
