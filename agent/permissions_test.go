package agent

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// A refusal stays until a round finds the permission granted: a round whose probe got no
// answer (a broker down, the agent stopping) keeps it, and readiness names every refusal on
// one line, before "starting".
func TestNotePermissionsKeepsUnansweredRefusals(t *testing.T) {
	a := &Agent{health: newHealth(time.Second, 0, func() time.Duration { return 0 }), log: slog.New(slog.DiscardHandler)}
	write := &kafkaio.AuthzError{Principal: "User:a", Operation: kafkaio.OpWrite, ResourceType: kafkaio.ResourceTopic,
		Resource: "results", Code: kafka.TopicAuthorizationFailed}
	read := &kafkaio.AuthzError{Principal: "User:a", Operation: kafkaio.OpRead, ResourceType: kafkaio.ResourceGroup,
		Resource: "offsetagent", Code: kafka.GroupAuthorizationFailed}

	a.notePermissions(kafkaio.Denied{write, read}, nil)
	err := a.readiness()
	require.ErrorContains(t, err, `missing permission: principal User:a is not allowed to Write Topic "results"`)
	require.ErrorContains(t, err, `; principal User:a is not allowed to Read Group "offsetagent"`)
	require.NotContains(t, err.Error(), "\n")

	a.notePermissions(nil, []string{"Write Topic results"}) // no answer about the write; the read granted
	err = a.readiness()
	require.ErrorContains(t, err, `Write Topic "results"`)
	require.False(t, strings.Contains(err.Error(), "offsetagent"), err.Error())

	a.notePermissions(nil, nil)
	require.EqualError(t, a.readiness(), "starting: loading views and joining the consumer group")
}
