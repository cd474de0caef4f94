//go:build faultinject

package main

import "os"

// faultFromEnv returns a fault hook for crash tests: OFFSETAGENT_FAULT_EXIT_AT names a point
// (e.g. "after:wipe_offsets") at which the process exits at once, as a SIGKILL would stop it.
// Only binaries built with -tags faultinject (the integration tests' build) have it.
func faultFromEnv() func(string) {
	at := os.Getenv("OFFSETAGENT_FAULT_EXIT_AT")
	if at == "" {
		return nil
	}
	return func(point string) {
		if point == at {
			os.Exit(137)
		}
	}
}
