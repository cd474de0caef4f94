// Command realkafka starts Apache Kafka and a Kafka Connect worker as local JVM processes (see
// package realkafka) for a demo or a benchmark against the system offsetagent writes for.
//
//	realkafka up                 start a broker and a worker, print their addresses, run until ^C
//	realkafka exec -- CMD ARG... start them, run CMD with OFFSETAGENT_BENCH_BROKERS,
//	                             OFFSETAGENT_BENCH_BROKER_PID (the broker JVM's process id),
//	                             OFFSETAGENT_TEST_BROKERS and REALKAFKA_CONNECT_URL set, stop them
//	realkafka demo               start them and the agent, publish KIP-995's seed example and show
//	                             the connector in Connect's own REST answers
//
// Flags: -no-worker (up and exec: the broker only), -keep (keep the data and logs folder),
// -kafka-jvm (the broker runs with Apache Kafka's own JVM options, for measurements).
// Environment: OFFSETAGENT_KAFKA_VERSION, OFFSETAGENT_KAFKA_CACHE (see package realkafka).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("realkafka", flag.ContinueOnError)
	fs.SetOutput(stderr)
	noWorker := fs.Bool("no-worker", false, "start the broker only")
	keep := fs.Bool("keep", false, "keep the data and logs folder")
	kafkaJVM := fs.Bool("kafka-jvm", false, "run the broker with Apache Kafka's own JVM options (G1, 1 GiB heap, full JIT) instead of small quick-starting ones: for measurements")
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: realkafka [-no-worker] [-keep] [-kafka-jvm] up|demo|exec -- CMD ARG...")
		return 2
	}
	sub := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "offsetagent-realkafka-")
	if err != nil {
		fmt.Fprintf(stderr, "realkafka: %v\n", err)
		return 1
	}
	code := 1
	defer func() {
		if *keep || code != 0 {
			fmt.Fprintf(stderr, "realkafka: data and logs kept in %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	withWorker := !*noWorker || sub == "demo"
	var jvmOpts []string
	if *kafkaJVM {
		jvmOpts = realkafka.KafkaJVMOptions
	}
	c, err := start(ctx, dir, withWorker, jvmOpts, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "realkafka: %v\n", err)
		return code
	}
	defer c.stop()
	switch sub {
	case "up":
		fmt.Fprintf(stdout, "broker:  %s\n", c.broker.Addr)
		if c.worker != nil {
			fmt.Fprintf(stdout, "connect: %s\n", c.worker.URL)
		}
		fmt.Fprintf(stdout, "logs:    %s\n(^C stops them)\n", dir)
		<-ctx.Done()
		code = 0
	case "exec":
		code = execute(ctx, c, fs.Args(), stdout, stderr)
	case "demo":
		if err := demo(ctx, c, dir, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "realkafka demo: %v\n", err)
			return code
		}
		code = 0
	default:
		fmt.Fprintf(stderr, "realkafka: unknown command %q\n", sub)
		code = 2
	}
	return code
}

// peers are the processes a command started.
type peers struct {
	broker *realkafka.Broker
	worker *realkafka.Worker
}

func (p *peers) stop() {
	if p.worker != nil {
		p.worker.Stop()
	}
	p.broker.Stop()
}

func start(ctx context.Context, dir string, withWorker bool, jvmOpts []string, log io.Writer) (*peers, error) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	began := time.Now()
	lib, err := realkafka.Jars(sctx, realkafka.JarsConfig{Version: os.Getenv("OFFSETAGENT_KAFKA_VERSION"),
		CacheDir: os.Getenv("OFFSETAGENT_KAFKA_CACHE"), Log: log})
	if err != nil {
		return nil, err
	}
	if d := time.Since(began); d > 5*time.Second {
		fmt.Fprintf(log, "realkafka: resolved the Kafka jars in %s\n", d.Round(time.Second))
	}
	bdir, wdir := filepath.Join(dir, "broker"), filepath.Join(dir, "worker")
	for _, d := range []string{bdir, wdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	began = time.Now()
	b, err := realkafka.StartBroker(sctx, realkafka.BrokerConfig{Lib: lib, Dir: bdir, JVMOptions: jvmOpts})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "realkafka: broker ready on %s in %s\n", b.Addr, time.Since(began).Round(100*time.Millisecond))
	p := &peers{broker: b}
	if !withWorker {
		return p, nil
	}
	began = time.Now()
	w, err := realkafka.StartWorker(sctx, realkafka.WorkerConfig{Lib: lib, Dir: wdir, Brokers: []string{b.Addr}})
	if err != nil {
		b.Stop()
		return nil, err
	}
	fmt.Fprintf(log, "realkafka: Connect worker ready on %s in %s\n", w.URL, time.Since(began).Round(100*time.Millisecond))
	p.worker = w
	return p, nil
}

// execute runs args with the peers' addresses in the environment and returns its exit code.
func execute(ctx context.Context, p *peers, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: realkafka exec -- CMD ARG...")
		return 2
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = append(os.Environ(), "OFFSETAGENT_BENCH_BROKERS="+p.broker.Addr, "OFFSETAGENT_TEST_BROKERS="+p.broker.Addr,
		"OFFSETAGENT_BENCH_BROKER_PID="+strconv.Itoa(p.broker.PID()))
	if p.worker != nil {
		cmd.Env = append(cmd.Env, "REALKAFKA_CONNECT_URL="+p.worker.URL)
	}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		fmt.Fprintf(stderr, "realkafka exec: %v\n", err)
		return 1
	}
}
