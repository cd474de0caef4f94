//go:build faultinject

package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// faultFromEnv returns a fault hook for crash tests: OFFSETAGENT_FAULT_EXIT_AT names a point
// (e.g. "after:wipe_offsets") at which the process exits at once, as a SIGKILL would stop it.
// "point@connector" stops only the requests for that connector.
//
// With OFFSETAGENT_FAULT_ONCE_DIR set, the process stops at the point once per connector
// across restarts: it leaves a file named after the connector in that directory before it
// exits and passes the point for connectors that have one, so one sequence of restarts with
// the same setting stops every request once where it would otherwise stop it again and again
// (its redelivery reaches the point too).
//
// Only binaries built with -tags faultinject (the integration tests' build) have it.
func faultFromEnv() func(point, connector string) {
	at := os.Getenv("OFFSETAGENT_FAULT_EXIT_AT")
	if at == "" {
		return nil
	}
	at, only, filtered := strings.Cut(at, "@")
	onceDir := os.Getenv("OFFSETAGENT_FAULT_ONCE_DIR")
	var stopping sync.Mutex // held for good by the request that stops the process
	return func(point, connector string) {
		if point != at || (filtered && connector != only) {
			return
		}
		stopping.Lock()
		if onceDir != "" {
			marker := filepath.Join(onceDir, strings.ReplaceAll(connector, string(filepath.Separator), "_"))
			f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				stopping.Unlock()
				return // stopped here once already (or the marker cannot be made: go on)
			}
			_ = f.Close()
		}
		os.Exit(137)
	}
}

// faultVariables are the variables faultFromEnv reads (for unknownVariables).
func faultVariables() []string {
	return []string{"OFFSETAGENT_FAULT_EXIT_AT", "OFFSETAGENT_FAULT_ONCE_DIR"}
}
