package main

import (
	"context"
	"encoding/json"
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
// With tapped, its connections are tapped (tap.go) and "tap" on stdin answers the spans.
func serveBroker(stdin io.Reader, stdout, stderr io.Writer, tapped bool) int {
	var t *tap
	if tapped {
		t = newTap()
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			l, err := net.Listen(network, "127.0.0.1:0")
			if err != nil || t == nil {
				return l, err
			}
			return t.listener(l), nil
		}),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(maxMessageBytes)}))
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench: start embedded broker: %v\n", err)
		return 1
	}
	defer c.Close()
	// OFFSETAGENT_BENCH_BROKER_PROFILE names a CPU profile of the broker process's whole life,
	// to see where the broker's share of the machine goes; each broker of a run writes its own,
	// the name followed by the broker's process id.
	if path := os.Getenv("OFFSETAGENT_BENCH_BROKER_PROFILE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
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
	if t == nil {
		_, _ = io.Copy(io.Discard, stdin)
		return 0
	}
	serveTapCommands(t, stdin, stdout)
	return 0
}

// brokerProc is the embedded broker running in a child process of this binary.
type brokerProc struct {
	*child
	addr string
}

// startBroker runs this binary with -broker and reads the broker's address.
func startBroker(ctx context.Context) (*brokerProc, error) { return startBrokerTapped(ctx, false) }

// startBrokerTapped is startBroker, with the broker's connections tapped when tapped.
func startBrokerTapped(ctx context.Context, tapped bool) (*brokerProc, error) {
	args := []string{"-broker"}
	if tapped {
		args = append(args, "-tap")
	}
	c, err := startChild("broker", args...)
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

// spans returns the round trips the tapped broker answered since the last call.
func (b *brokerProc) spans(ctx context.Context) ([]tapSpan, error) {
	if _, err := io.WriteString(b.stdin, "tap\n"); err != nil {
		return nil, fmt.Errorf("broker process: %w", err)
	}
	type answer struct {
		spans []tapSpan
		err   error
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		for {
			line, err := b.out.ReadString('\n')
			if err != nil {
				a.err = fmt.Errorf("broker process: %w", err)
				break
			}
			if line = strings.TrimSpace(line); line == "end" {
				break
			}
			var s tapSpan
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				a.err = fmt.Errorf("broker process: %q: %w", line, err)
				break
			}
			a.spans = append(a.spans, s)
		}
		got <- a
	}()
	select {
	case a := <-got:
		return a.spans, a.err
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("broker process: no spans in 1m")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// close ends the broker by closing its stdin and waits for it.
func (b *brokerProc) close() { b.stop(10 * time.Second) }
