package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// The demo's test.txt starts with two lines of 15 bytes: the seed example's initial position 30
// is their end. The lines appended later are what the connector produces.
var (
	seedBefore = "skipped line 1\nskipped line 2\n"
	seedAfter  = []string{"produced line 3", "produced line 4"}
)

// demo builds the agent, runs it against the broker and the worker's topics, publishes the seed
// example (integration/testdata/file-src-1.json), and prints Connect's own answers about it.
func demo(ctx context.Context, p *peers, dir string, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	// The worker resolves the seed's relative "file": "test.txt" against its working folder.
	testFile := filepath.Join(dir, "worker", "test.txt")
	if err := os.WriteFile(testFile, []byte(seedBefore), 0o644); err != nil {
		return err
	}
	bin, env, stop, err := startDemoAgent(ctx, p, dir, stdout)
	if err != nil {
		return err
	}
	defer stop()

	seed, err := seedFile()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n== offsetagent publish --wait %s\n", seed)
	pub := exec.CommandContext(ctx, bin, "publish", "--wait", seed)
	pub.Env, pub.Stdout, pub.Stderr = env, stdout, stderr
	if err := pub.Run(); err != nil {
		return fmt.Errorf("publish the seed example: %w", err)
	}
	if err := showSeedConnector(ctx, p, stdout); err != nil {
		return err
	}
	if err := appendLines(testFile, seedAfter); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n== test.txt: %q, then appended %q\n", seedBefore, seedAfter)
	fmt.Fprintf(stdout, "== records the connector produced to test-topic (from position 30: no skipped line)\n")
	return printRecords(ctx, p.broker.Addr, "test-topic", len(seedAfter), stdout)
}

// startDemoAgent builds the agent into dir and runs it against the peers until stop, logging
// to dir/agent.log; it returns once the agent is ready, with the binary and its environment.
func startDemoAgent(ctx context.Context, p *peers, dir string, stdout io.Writer) (bin string, env []string, stop func(), err error) {
	bin = filepath.Join(dir, "offsetagent")
	fmt.Fprintln(stdout, "== building the agent")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/offsetagent/offsetagent/cmd/offsetagent").CombinedOutput(); err != nil {
		return "", nil, nil, fmt.Errorf("build the agent: %w\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	httpAddr := ln.Addr().String()
	ln.Close()
	env = append(os.Environ(),
		"OFFSETAGENT_BROKERS="+p.broker.Addr,
		"OFFSETAGENT_CONNECT_URL="+p.worker.URL,
		"OFFSETAGENT_HTTP_ADDR="+httpAddr,
		"OFFSETAGENT_LOG_FORMAT=text")
	logf, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		return "", nil, nil, err
	}
	agent := exec.Command(bin, "run")
	agent.Env, agent.Stdout, agent.Stderr = env, logf, logf
	if err := agent.Start(); err != nil {
		logf.Close()
		return "", nil, nil, err
	}
	stop = func() { _ = agent.Process.Signal(os.Interrupt); _ = agent.Wait(); logf.Close() }
	if err := waitHTTP(ctx, "http://"+httpAddr+"/readyz"); err != nil {
		stop()
		return "", nil, nil, fmt.Errorf("agent not ready (log: %s): %w", logf.Name(), err)
	}
	fmt.Fprintf(stdout, "== agent running against Apache Kafka %s, Connect REST %s\n", p.broker.Addr, p.worker.URL)
	return bin, env, stop, nil
}

// showSeedConnector waits until the seed's connector has a running task, and prints Connect's
// status and offsets of it.
func showSeedConnector(ctx context.Context, p *peers, stdout io.Writer) error {
	var status string
	var err error
	for ctx.Err() == nil {
		var st struct {
			Tasks []struct {
				State string `json:"state"`
			} `json:"tasks"`
		}
		status, err = get(ctx, p.worker.URL+"/connectors/file-src-1/status")
		if err == nil && json.Unmarshal([]byte(status), &st) == nil && len(st.Tasks) > 0 && st.Tasks[0].State == "RUNNING" {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	fmt.Fprintf(stdout, "\n== Connect: GET %s/connectors/file-src-1/status\n%s\n", p.worker.URL, status)
	offsets, err := get(ctx, p.worker.URL+"/connectors/file-src-1/offsets")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n== Connect: GET %s/connectors/file-src-1/offsets\n%s\n", p.worker.URL, offsets)
	return nil
}

// appendLines appends lines to the file at path.
func appendLines(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// seedFile finds integration/testdata/file-src-1.json from the module root.
func seedFile() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	return filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "integration", "testdata", "file-src-1.json"), nil
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, b, "", "  ") == nil {
		return pretty.String(), nil
	}
	return string(b), nil
}

func waitHTTP(ctx context.Context, url string) error {
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printRecords prints the first n records of partition 0 of topic.
func printRecords(ctx context.Context, broker, topic string, n int, w io.Writer) error {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: 0, MaxWait: 200 * time.Millisecond,
		IsolationLevel: kafka.ReadCommitted})
	defer r.Close()
	for i := 0; i < n; i++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("read %s: %w", topic, err)
		}
		fmt.Fprintf(w, "offset %d  value %s\n", m.Offset, m.Value)
	}
	return nil
}
