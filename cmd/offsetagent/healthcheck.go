package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// cmdHealthcheck asks the agent running in the same container whether it is ready (GET
// /readyz on OFFSETAGENT_HTTP_ADDR's port): the image has no shell or curl, so a compose
// healthcheck runs this. Exit code 0 when ready, 1 when not.
func cmdHealthcheck(stderr io.Writer) int {
	addr := os.Getenv("OFFSETAGENT_HTTP_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: OFFSETAGENT_HTTP_ADDR %q: %v\n", addr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort("127.0.0.1", port) + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: not ready: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "offsetagent: not ready: %s answers %s\n", url, resp.Status)
		return 1
	}
	return 0
}
