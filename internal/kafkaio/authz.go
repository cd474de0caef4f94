package kafkaio

import (
	"errors"
	"fmt"
	"strings"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka's ACL operation and resource type names, as kafka-acls.sh takes them.
const (
	OpRead            = "Read"
	OpWrite           = "Write"
	OpCreate          = "Create"
	OpDelete          = "Delete"
	OpDescribe        = "Describe"
	OpDescribeConfigs = "DescribeConfigs"

	ResourceTopic           = "Topic"
	ResourceGroup           = "Group"
	ResourceCluster         = "Cluster"
	ResourceTransactionalID = "TransactionalId"
)

// AuthzError is a broker's refusal of an operation on a resource for lack of an ACL. Its
// message names the principal, the operation and the resource, and says how to grant it: the
// one shape of every refused-permission message, in logs, failed results and command output.
// Code is the broker's error (a kafka.Error such as kafka.TopicAuthorizationFailed), so
// errors.Is and Classify (permanent) work through it.
type AuthzError struct {
	Principal    string // e.g. User:alice
	Operation    string // OpRead, OpWrite, ...
	ResourceType string // ResourceTopic, ResourceGroup, ...
	Resource     string // the topic or group name; empty for the cluster
	Code         error
	// Err is the refused call's own error when it says more than Code (a commit's
	// *CommitError: which partitions were refused, whether any was committed); nil for none.
	Err error
}

func (e *AuthzError) Error() string {
	principal := e.Principal
	if principal == "" {
		principal = "User:ANONYMOUS"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "principal %s is not allowed to %s %s", principal, e.Operation, e.ResourceType)
	if e.ResourceType != ResourceCluster {
		fmt.Fprintf(&b, " %q", e.Resource)
	}
	fmt.Fprintf(&b, " (%s): grant it, e.g. kafka-acls.sh --bootstrap-server BROKER --add --allow-principal %s --operation %s",
		codeName(e.Code), principal, e.Operation)
	switch e.ResourceType {
	case ResourceTopic:
		fmt.Fprintf(&b, " --topic %s", e.Resource)
	case ResourceGroup:
		fmt.Fprintf(&b, " --group %s", e.Resource)
	case ResourceTransactionalID:
		fmt.Fprintf(&b, " --transactional-id %s", e.Resource)
	case ResourceCluster:
		b.WriteString(" --cluster")
	}
	return b.String()
}

func (e *AuthzError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Code}
	}
	return []error{e.Code, e.Err}
}

// codeName is Kafka's name of the error code (TOPIC_AUTHORIZATION_FAILED), as the Java
// client's Errors enum and the protocol guide spell it.
func codeName(err error) string {
	var kerrv kafka.Error
	if errors.As(err, &kerrv) {
		if ke, ok := kerr.ErrorForCode(int16(kerrv)).(*kerr.Error); ok {
			return ke.Message
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	if err == nil {
		return "AUTHORIZATION_FAILED"
	}
	return err.Error()
}

// ErrGroupAuthorization is kafka.GroupAuthorizationFailed: errors.Is(err,
// ErrGroupAuthorization) tells a refused group from a refused topic in a probe's or a
// commit's joined errors.
var ErrGroupAuthorization error = kafka.GroupAuthorizationFailed

// authzCodes are the broker errors that mean a missing ACL.
var authzCodes = []kafka.Error{
	kafka.TopicAuthorizationFailed, kafka.GroupAuthorizationFailed, kafka.ClusterAuthorizationFailed,
	kafka.TransactionalIDAuthorizationFailed, kafka.DelegationTokenAuthorizationFailed,
}

// AuthorizationCode returns the broker's authorization error inside err (one of
// TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED,
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, DELEGATION_TOKEN_AUTHORIZATION_FAILED) and true, or
// nil and false when err is something else. It looks through wrapping, joined errors and
// kafka-go's WriteErrors.
func AuthorizationCode(err error) (kafka.Error, bool) {
	if err == nil {
		return 0, false
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if c, ok := AuthorizationCode(e); ok {
				return c, true
			}
		}
	}
	for _, c := range authzCodes {
		if errors.Is(err, c) {
			return c, true
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		for _, c := range authzCodes {
			if int16(c) == ke.Code {
				return c, true
			}
		}
	}
	return 0, false
}

// Authz words err as an *AuthzError when it is a broker's authorization error, naming who
// (principal) was refused what (operation on resourceType resource); any other error, or nil,
// comes back unchanged. Call sites say what they asked for: a Fetch refused with
// TOPIC_AUTHORIZATION_FAILED is Read on that topic, a Produce is Write. A refusal of the
// group's own ACL (GROUP_AUTHORIZATION_FAILED) names the group whatever the call site asked
// about, when group is given; CLUSTER_AUTHORIZATION_FAILED names the cluster.
func Authz(err error, principal, operation, resourceType, resource string) error {
	code, ok := AuthorizationCode(err)
	if !ok {
		return err
	}
	var already *AuthzError
	if errors.As(err, &already) {
		return err
	}
	e := &AuthzError{Principal: principal, Operation: operation, ResourceType: resourceType, Resource: resource, Code: code}
	if code == kafka.ClusterAuthorizationFailed && resourceType != ResourceCluster {
		e.ResourceType, e.Resource = ResourceCluster, ""
	}
	return e
}

// GroupAuthz is Authz for a request about a group that also names topics (OffsetCommit,
// OffsetFetch, a consumer's Fetch): GROUP_AUTHORIZATION_FAILED is Read on the group,
// TOPIC_AUTHORIZATION_FAILED is topicOp on topic (Read for a commit or a fetch).
func GroupAuthz(err error, principal, group, topicOp, topic string) error {
	code, ok := AuthorizationCode(err)
	if !ok {
		return err
	}
	if code == kafka.GroupAuthorizationFailed {
		return Authz(err, principal, OpRead, ResourceGroup, group)
	}
	return Authz(err, principal, topicOp, ResourceTopic, topic)
}

// refusal is Authz for a request made through cl, naming cl's principal (PrincipalOf): every
// function of this package that makes a request returns its refusal so, complete, and its
// callers only add what they were doing.
func refusal(cl *kafka.Client, err error, operation, resourceType, resource string) error {
	return Authz(err, PrincipalOf(cl), operation, resourceType, resource)
}

// groupCommitRefusal words the refusal of a commit of group's offsets (or its probe): Read on
// the group when the group was refused, else Read on the first refused topic (the
// *GroupCommitError's).
func groupCommitRefusal(cl *kafka.Client, err error, group string) error {
	var worded error
	if errors.Is(err, kafka.GroupAuthorizationFailed) {
		worded = Authz(err, PrincipalOf(cl), OpRead, ResourceGroup, group)
	} else {
		var ce *GroupCommitError
		topic := ""
		if errors.As(err, &ce) {
			topic = ce.Topic
		}
		worded = GroupAuthz(err, PrincipalOf(cl), group, OpRead, topic)
	}
	var ae *AuthzError
	if errors.As(worded, &ae) && ae != err && ae.Err == nil {
		ae.Err = err
	}
	return worded
}

// Denied is a set of refused permissions, each an *AuthzError, as one error of one line: the
// refusals' messages joined by "; ", in order (errors.Is and errors.As see each). A caller
// that found several refusals (the agent's permission probes) words them with it, here,
// beside AuthzError's own words.
type Denied []*AuthzError

func (d Denied) Error() string {
	msgs := make([]string, len(d))
	for i, e := range d {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

func (d Denied) Unwrap() []error {
	out := make([]error, len(d))
	for i, e := range d {
		out[i] = e
	}
	return out
}
