package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// cluster names a Kafka cluster the CLI talks to, for its messages: what it is ("A's Kafka
// cluster") and where its addresses come from ("--from-brokers").
type cluster struct {
	what, from string
	brokers    []string
	// tr carries the cluster's own SASL/TLS settings; nil means reach's.
	tr *kafka.Transport
	// principal is who tr authenticates as (clientconfig.Security.Principal).
	principal string
}

// reach waits at most timeout for a first answer (ApiVersions, with the SASL/TLS of tr) from
// any bootstrap address of each cluster, all at once. Unless one answers within quiet, it says
// at once on w what it waits for. The error, when none answers, names the cluster, every
// address and its cause.
func reach(ctx context.Context, w io.Writer, tr *kafka.Transport, timeout, quiet time.Duration, clusters ...cluster) error {
	if timeout <= 0 {
		return fmt.Errorf("--connect-timeout %s: must be positive", timeout)
	}
	clusters = slices.DeleteFunc(clusters, func(c cluster) bool { return len(c.brokers) == 0 })
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errs := make([]chan error, len(clusters))
	for i, c := range clusters {
		errs[i] = make(chan error, 1)
		ctr := tr
		if c.tr != nil {
			ctr = c.tr
		}
		go func() { errs[i] <- reachOne(ctx, ctr, timeout, c) }()
	}
	return reachReport(ctx, w, errs, clusters, timeout, quiet)
}

// reachReport collects the probes' answers, saying what is waited for as reach describes.
func reachReport(ctx context.Context, w io.Writer, errs []chan error, clusters []cluster, timeout, quiet time.Duration) error {
	waiting := func() {
		for _, c := range clusters {
			fmt.Fprintf(w, "connecting to %s at %s (%s; waiting up to %s, --connect-timeout)\n", c.what, strings.Join(c.brokers, ","), c.from, timeout)
		}
	}
	var early <-chan time.Time
	if quiet <= 0 {
		waiting()
	} else {
		t := time.NewTimer(quiet)
		defer t.Stop()
		early = t.C
	}
	var all []error
	for i := range clusters {
		for done := false; !done; {
			select {
			case err := <-errs[i]:
				if err != nil {
					all = append(all, err)
				}
				done = true
			case <-early:
				early = nil
				waiting()
			}
		}
	}
	return errors.Join(all...)
}

// reachOne probes every bootstrap address of c; nil when one answers.
func reachOne(ctx context.Context, tr *kafka.Transport, timeout time.Duration, c cluster) error {
	if len(c.brokers) == 0 {
		return nil
	}
	type answer struct {
		addr string
		err  error
	}
	answers := make(chan answer, len(c.brokers))
	for _, addr := range c.brokers {
		go func() {
			t := &kafka.Transport{DialTimeout: timeout, ClientID: "offsetagent", MetadataTTL: time.Second}
			if tr != nil {
				t.SASL, t.TLS = tr.SASL, tr.TLS
			}
			defer t.CloseIdleConnections()
			cl := kafkaio.NewClient(kafkaio.Options{Brokers: []string{addr}, Transport: t, Principal: c.principal})
			cl.Timeout = timeout
			resp, err := cl.ApiVersions(ctx, &kafka.ApiVersionsRequest{Addr: kafka.TCP(addr)})
			if err == nil && resp.Error != nil {
				err = resp.Error
			}
			answers <- answer{addr, err}
		}()
	}
	var causes []string
	for range c.brokers {
		a := <-answers
		if a.err == nil {
			return nil
		}
		causes = append(causes, fmt.Sprintf("%s: %s", a.addr, reachCause(a.err, timeout)))
	}
	return fmt.Errorf("%s (%s) is unreachable: %s", c.what, c.from, strings.Join(causes, "; "))
}

// reachCause says why an address did not answer, in a user's words.
func reachCause(err error, timeout time.Duration) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kafka.RequestTimedOut) || isTimeout(err):
		return fmt.Sprintf("no answer within %s (--connect-timeout): nothing listens there, or something that is not a Kafka broker, or a firewall drops the packets", timeout)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("unknown host (%v)", err)
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// reach waits for the Kafka clusters the flags name: A's (--from-brokers) and, when withB,
// B's (--to-brokers).
func (f *fleetFlags) reach(ctx context.Context, w io.Writer, cl clusters, timeout time.Duration, withB bool) error {
	list := []cluster{{"A's Kafka cluster", "--from-brokers", splitList(f.fromBrokers), cl.from.Transport, cl.fromPrincipal}}
	if withB {
		list = append(list, cluster{"B's Kafka cluster", "--to-brokers", splitList(f.toBrokers), cl.to.Transport, cl.toPrincipal})
	}
	return reach(ctx, w, cl.from.Transport, timeout, 0, list...)
}

// fleetError prints the error of an export or a migration and returns the exit status: 1 for
// a selection that matches no connector or has a flag that matches nothing, else 2 (nothing
// was stopped or published).
func fleetError(stderr io.Writer, command string, err error) int {
	fmt.Fprintf(stderr, "offsetagent %s: %s\n", command, errorText(err))
	var none *source.NoneSelectedError
	var unmatched *source.UnmatchedError
	if errors.As(err, &none) || errors.As(err, &unmatched) {
		return 1
	}
	return 2
}
