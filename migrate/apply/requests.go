package apply

import (
	"strconv"
	"strings"

	"github.com/offsetagent/offsetagent/events"
)

// requestSeries is the common prefix of the ids of every attempt of the request creating
// target, what the request creates (Body.Create) included: "<migration id>/<target>/" for a
// connector, "<migration id>/<target>/offsets-only-" for its offsets alone. An offsets-only
// request's success creates no connector, so it never stands for a creation's, nor the
// other way round: a run that creates connectors after a --to-strimzi-cluster run of the
// same migration publishes them.
func requestSeries(migrationID, target, create string) string {
	if create == events.CreateOffsetsOnly {
		return migrationID + "/" + target + "/" + events.CreateOffsetsOnly + "-"
	}
	return migrationID + "/" + target + "/"
}

// requestID is the id of attempt n (from 1) of the request creating target.
func requestID(migrationID, target, create string, attempt int) string {
	return requestSeries(migrationID, target, create) + strconv.Itoa(attempt)
}

// parseRequestID splits a request id made by requestID into its series and attempt number
// (0 if it is not one).
func parseRequestID(id string) (series string, attempt int) {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return "", 0
	}
	last := strings.TrimPrefix(id[i+1:], events.CreateOffsetsOnly+"-")
	n, err := strconv.Atoi(last)
	if err != nil || n <= 0 || strconv.Itoa(n) != last {
		return "", 0
	}
	return id[:len(id)-len(last)], n
}

// attemptOf parses the attempt number of a request id made by requestID (0 if it is not one).
func attemptOf(id string) int {
	_, n := parseRequestID(id)
	return n
}
