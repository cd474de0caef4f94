package kafkaio

import (
	"errors"
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

func TestAuthzWording(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		op   string
		typ  string
		res  string
		want string
	}{
		{"topic read", fmt.Errorf("fetch: %w", kafka.TopicAuthorizationFailed), OpRead, ResourceTopic, "orders",
			`principal User:alice is not allowed to Read Topic "orders" (TOPIC_AUTHORIZATION_FAILED): grant it, e.g. kafka-acls.sh --bootstrap-server BROKER --add --allow-principal User:alice --operation Read --topic orders`},
		{"group read", errors.Join(errors.New("x"), kafka.GroupAuthorizationFailed), OpRead, ResourceGroup, "connect-s",
			`principal User:alice is not allowed to Read Group "connect-s" (GROUP_AUTHORIZATION_FAILED): grant it, e.g. kafka-acls.sh --bootstrap-server BROKER --add --allow-principal User:alice --operation Read --group connect-s`},
		{"cluster", kafka.ClusterAuthorizationFailed, OpCreate, ResourceTopic, "t",
			`principal User:alice is not allowed to Create Cluster (CLUSTER_AUTHORIZATION_FAILED): grant it, e.g. kafka-acls.sh --bootstrap-server BROKER --add --allow-principal User:alice --operation Create --cluster`},
		{"write errors", kafka.WriteErrors{nil, kafka.TopicAuthorizationFailed}, OpWrite, ResourceTopic, "r",
			`principal User:alice is not allowed to Write Topic "r" (TOPIC_AUTHORIZATION_FAILED): grant it, e.g. kafka-acls.sh --bootstrap-server BROKER --add --allow-principal User:alice --operation Write --topic r`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Authz(tc.err, "User:alice", tc.op, tc.typ, tc.res)
			var az *AuthzError
			require.ErrorAs(t, err, &az)
			require.Equal(t, tc.want, err.Error())
			_, transient := Classify(err)
			require.False(t, transient)
		})
	}
	other := errors.New("other")
	require.Same(t, other, Authz(other, "User:alice", OpRead, ResourceTopic, "t"))
	require.NoError(t, Authz(nil, "User:alice", OpRead, ResourceTopic, "t"))
	require.ErrorContains(t, GroupAuthz(kafka.GroupAuthorizationFailed, "User:a", "g", OpRead, "t"), `Read Group "g"`)
	require.ErrorContains(t, GroupAuthz(kafka.TopicAuthorizationFailed, "User:a", "g", OpRead, "t"), `Read Topic "t"`)
}

// Several refusals are one error of one line, each worded as AuthzError words it, each seen
// by errors.Is and errors.As.
func TestDenied(t *testing.T) {
	write := &AuthzError{Principal: "User:a", Operation: OpWrite, ResourceType: ResourceTopic, Resource: "results", Code: kafka.TopicAuthorizationFailed}
	read := &AuthzError{Principal: "User:a", Operation: OpRead, ResourceType: ResourceGroup, Resource: "g", Code: kafka.GroupAuthorizationFailed}
	err := error(Denied{write, read})
	require.Equal(t, write.Error()+"; "+read.Error(), err.Error())
	require.NotContains(t, err.Error(), "\n")
	require.ErrorIs(t, err, kafka.GroupAuthorizationFailed)
	var az *AuthzError
	require.ErrorAs(t, err, &az)
	require.Same(t, write, az)
	code, ok := AuthorizationCode(err)
	require.True(t, ok)
	require.Equal(t, kafka.TopicAuthorizationFailed, code)
}
