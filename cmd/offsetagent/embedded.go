package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kfake"
)

// embeddedBroker is an in-process Kafka broker (franz-go's kfake) on loopback, for trying
// offsetagent by hand and for the demo. It holds no data across runs.
type embeddedBroker struct {
	c *kfake.Cluster
}

// startEmbedded starts a single broker on addr ("127.0.0.1:PORT"; port 0 picks a free one).
func startEmbedded(addr string) (*embeddedBroker, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("embedded broker port %q: %w", portText, err)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		// A cluster id of its own, as a freshly formatted Kafka cluster has (kfake's default is
		// the same for every cluster, which would make two embedded brokers look like one).
		kfake.ClusterID(uuid.NewString()),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
		}),
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded broker on %s: %w", addr, err)
	}
	return &embeddedBroker{c: c}, nil
}

// Addr is the broker's bootstrap address.
func (b *embeddedBroker) Addr() string { return b.c.ListenAddrs()[0] }

// Close stops the broker.
func (b *embeddedBroker) Close() { b.c.Close() }
