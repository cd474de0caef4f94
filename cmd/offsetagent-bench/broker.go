package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxMessageBytes is the broker's message.max.bytes: above the agent's 16 MiB request limit
// (kfake's default, like Kafka's, is about 1 MiB), as a cluster serving MM2-sized requests
// must be configured.
const maxMessageBytes = 20 << 20

// serveBroker is the child process: it starts kfake on a free loopback port, prints the
// address on stdout and serves until stdin closes (the parent exited or closed the pipe).
func serveBroker(stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(maxMessageBytes)}))
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench: start embedded broker: %v\n", err)
		return 1
	}
	defer c.Close()
	// OFFSETAGENT_BENCH_BROKER_PROFILE names a CPU profile of the broker process's whole life,
	// to see where the broker's share of the machine goes.
	if path := os.Getenv("OFFSETAGENT_BENCH_BROKER_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(stderr, "offsetagent-bench: broker profile: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "offsetagent-bench: broker profile: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
		// And the number of requests of each kind the broker handled.
		var mu sync.Mutex
		counts := map[string]int{}
		c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
			name := kmsg.NameForKey(req.Key())
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				if len(r.Topics) > 0 {
					name += ":" + r.Topics[0].Topic
				}
			case *kmsg.FetchRequest:
				if len(r.Topics) > 0 {
					name += ":" + r.Topics[0].Topic
				}
			}
			mu.Lock()
			counts[name]++
			mu.Unlock()
			return nil, nil, false
		})
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "offsetagent-bench: broker requests: %v\n", counts)
		}()
	}
	fmt.Fprintln(stdout, c.ListenAddrs()[0])
	_, _ = io.Copy(io.Discard, stdin)
	return 0
}

// brokerProc is the embedded broker running in a child process of this binary.
type brokerProc struct {
	*child
	addr string
}

// startBroker runs this binary with -broker and reads the broker's address.
func startBroker(ctx context.Context) (*brokerProc, error) {
	c, err := startChild("broker", "-broker")
	if err != nil {
		return nil, err
	}
	b := &brokerProc{child: c}
	line := make(chan string, 1)
	go func() {
		s, _ := c.out.ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case b.addr = <-line:
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	if b.addr == "" {
		b.close()
		return nil, fmt.Errorf("broker process printed no address")
	}
	return b, nil
}

// close ends the broker by closing its stdin and waits for it.
func (b *brokerProc) close() { b.stop(10 * time.Second) }
